"""Claim classes enforced (ECEB-0.1 §15): which class the evidence of a
publication supports, every reason it does not, in one place.

The classes are partially ordered, weakest first::

    conformance_seed  <  public_reproduction  <  enterprise_validated
    conformance_seed  <  enterprise_proxy     <  enterprise_validated

``public_reproduction`` and ``enterprise_proxy`` are not comparable: a
public replayable reproduction is not evidence that a corpus resembles an
enterprise's, nor the reverse. A claim may never be stronger than the run's
own class (:func:`at_most`), and must meet its class's own conditions:

- a ``non_empirical`` run (synthetic scores or usage, §9) supports
  ``conformance_seed`` only;
- ``public_reproduction`` needs a public corpus (every source declared
  redistributable) and replayable model and judge configurations (an
  immutable ``revision`` for every model and every judge model);
- ``enterprise_proxy`` needs a public corpus;
- ``enterprise_validated`` needs declared sampling, authorization and
  reproducibility controls, and human review (``sampled`` or ``full``) by
  every judge;
- every class above ``conformance_seed`` needs a report whose answers were
  checked for disclosures (§1, §17: restricted-data disclosure is a hard
  failure, so a report that did not look cannot show there was none).

:func:`claim_reasons` applies every rule and returns every reason; nothing
here reads a file, and nothing ever upgrades a class.
"""

from __future__ import annotations

from typing import Final

import msgspec

from eceb_worker.families.eceb.declarations import Declarations, SourcesFile
from eceb_worker.families.eceb.run import RunHeader
from eceb_worker.families.eceb.vocabulary import ClaimClass

__all__ = [
    "ClaimEvidence",
    "at_most",
    "claim_evidence",
    "claim_reasons",
    "controls_reasons",
    "disclosure_reasons",
    "empirical_reasons",
    "order_reasons",
    "public_corpus_reasons",
    "replayable_reasons",
]

BELOW: Final[dict[str, frozenset[str]]] = {
    "conformance_seed": frozenset(),
    "public_reproduction": frozenset({"conformance_seed"}),
    "enterprise_proxy": frozenset({"conformance_seed"}),
    "enterprise_validated": frozenset({"conformance_seed", "public_reproduction", "enterprise_proxy"}),
}
"""Each class and the classes strictly weaker than it (the partial order above)."""

_CONTROLS: Final = ("sampling", "authorization", "reproducibility")


class ClaimEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What a claim class is judged on.

    Fields:
        run_claim_class: the class the run itself declares.
        non_empirical: the run declares synthetic scores or usage (§9).
        not_redistributable: names of sources not declared redistributable.
        source_count: how many sources are declared.
        unrevisioned: each model or judge model without an immutable
            revision, e.g. ``"configuration c1: judge model openai/gpt-x"``.
        reviews: ``(configuration id, human review)`` of every judge.
        undeclared_controls: the controls (``sampling``, ``authorization``,
            ``reproducibility``) not declared.
        disclosure_checked: the report's answers were checked for
            disclosures (its ``disclosure_check`` is enabled).
    """

    run_claim_class: ClaimClass
    non_empirical: bool
    not_redistributable: tuple[str, ...]
    source_count: int
    unrevisioned: tuple[str, ...]
    reviews: tuple[tuple[str, str], ...]
    undeclared_controls: tuple[str, ...]
    disclosure_checked: bool = True


def claim_evidence(
    run: RunHeader, sources: SourcesFile, declarations: Declarations | None, *, disclosure_checked: bool = True
) -> ClaimEvidence:
    """The :class:`ClaimEvidence` of a run's header, its sources file, its
    declarations file (None: nothing declared) and whether its report
    checked answers for disclosures."""
    unrevisioned = []
    for configuration in sorted(run.configurations, key=lambda c: c.configuration_id):
        for role, model in (("model", configuration.model), ("judge model", configuration.judge.model)):
            if not model.revision.strip():
                unrevisioned.append(
                    f"configuration {configuration.configuration_id}: {role} {model.provider}/{model.name}"
                )
    declared = {name: getattr(declarations, name, "").strip() for name in _CONTROLS}
    return ClaimEvidence(
        run_claim_class=run.claim_class,
        non_empirical=run.non_empirical,
        not_redistributable=tuple(s.name for s in sources.sources if not s.redistributable),
        source_count=len(sources.sources),
        unrevisioned=tuple(unrevisioned),
        reviews=tuple(
            sorted((c.configuration_id, c.judge.human_review) for c in run.configurations)  # one judge a configuration
        ),
        undeclared_controls=tuple(name for name in _CONTROLS if not declared[name]),
        disclosure_checked=disclosure_checked,
    )


def at_most(claimed: str, bound: str) -> bool:
    """True when ``claimed`` is ``bound`` or weaker than it (:data:`BELOW`)."""
    return claimed == bound or claimed in BELOW.get(bound, frozenset())


def order_reasons(claimed: ClaimClass, evidence: ClaimEvidence) -> list[str]:
    """A claim stronger than, or not comparable with, the run's own class."""
    bound = evidence.run_claim_class
    if at_most(claimed, bound):
        return []
    how = "not comparable with" if not at_most(bound, claimed) else "stronger than"
    return [f"{claimed} is {how} the run's own claim class {bound}: a result is never evidence for a stronger class"]


def empirical_reasons(claimed: ClaimClass, evidence: ClaimEvidence) -> list[str]:
    """A non-empirical run supports ``conformance_seed`` only (§9, §15)."""
    if evidence.non_empirical and claimed != "conformance_seed":
        return [f"{claimed} needs an empirical run; the run is non_empirical (synthetic scores or usage)"]
    return []


def public_corpus_reasons(claimed: ClaimClass, evidence: ClaimEvidence) -> list[str]:
    """``public_reproduction`` and ``enterprise_proxy`` need a public corpus:
    every source declared redistributable."""
    if claimed not in ("public_reproduction", "enterprise_proxy"):
        return []
    if evidence.source_count == 0:
        return [f"{claimed} needs a public corpus; no source is declared"]
    if evidence.not_redistributable:
        names = ", ".join(evidence.not_redistributable)
        return [f"{claimed} needs a public corpus; sources not declared redistributable: {names}"]
    return []


def replayable_reasons(claimed: ClaimClass, evidence: ClaimEvidence) -> list[str]:
    """``public_reproduction`` needs replayable configurations: every model
    and judge model with an immutable revision (§8, §15)."""
    if claimed != "public_reproduction" or not evidence.unrevisioned:
        return []
    return [
        f"{claimed} needs replayable model and judge configurations; without an immutable revision: {what}"
        for what in evidence.unrevisioned
    ]


def controls_reasons(claimed: ClaimClass, evidence: ClaimEvidence) -> list[str]:
    """``enterprise_validated`` needs declared sampling, authorization and
    reproducibility controls, and human review by every judge (§15)."""
    if claimed != "enterprise_validated":
        return []
    reasons = [
        f"{claimed} needs declared {name} (the declarations file's {name!r} is empty or absent)"
        for name in evidence.undeclared_controls
    ]
    reasons.extend(
        f"{claimed} needs human review (sampled or full); configuration {configuration}'s judge has {review!r}"
        for configuration, review in evidence.reviews
        if review not in ("sampled", "full")
    )
    return reasons


def disclosure_reasons(claimed: ClaimClass, evidence: ClaimEvidence) -> list[str]:
    """Every class above ``conformance_seed`` needs answers checked for
    disclosures (§1, §17)."""
    if claimed == "conformance_seed" or evidence.disclosure_checked:
        return []
    return [
        f"{claimed} needs answers checked for disclosures of restricted text (ECEB-0.1 §1, §17); the report was "
        "evaluated with --no-disclosure-check"
    ]


_RULES: Final = (
    order_reasons,
    empirical_reasons,
    public_corpus_reasons,
    replayable_reasons,
    controls_reasons,
    disclosure_reasons,
)


def claim_reasons(claimed: ClaimClass, evidence: ClaimEvidence) -> list[str]:
    """Every reason ``evidence`` does not support ``claimed``, in rule order;
    empty when it does (ECEB-0.1 §15)."""
    return [reason for rule in _RULES for reason in rule(claimed, evidence)]
