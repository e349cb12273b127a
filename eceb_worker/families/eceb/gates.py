"""The gates of ECEB-0.1 (§11, §13, §14) and the task-level checks (§7,
§8, §10, §12), each a named rule function in one table, :data:`GATES`: a
gate's name, its place in the report and its rule live there and nowhere
else (the task checks' rules are in :mod:`eceb_worker.families.eceb.task_checks`).

A group gate sees one task/strategy/budget group (:class:`Group`) and
returns every failure of it, ``(repetition, message)``; a task check sees
the evaluated task (:class:`TaskView`) and returns its assertions.
:func:`evaluate_group` checks every group gate on every observation of a
group and collects every failure; it never stops at the first.
"""

from __future__ import annotations

import functools
import operator
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import msgspec

from eceb_worker.core.arithmetic import floor_mean, ratio_bps
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.disclosure import TaskFindings, describe_hit, describe_more
from eceb_worker.families.eceb.run import Observation, SelectedArtifact
from eceb_worker.families.eceb.selection import Selection, judge_selection
from eceb_worker.families.eceb.task_checks import (
    TaskView,
    baseline_missing,
    baseline_zero_tokens,
    comparability,
    compiled_missing,
    duplicate_selection,
    no_viable_budget,
    off_ladder,
)
from eceb_worker.families.eceb.verdicts import Assertion, GateName, GroupResult

__all__ = [
    "GATES",
    "GATE_ORDER",
    "TASK_CHECK_NAMES",
    "Group",
    "GroupGate",
    "TaskCheck",
    "TaskView",
    "evaluate_group",
    "task_assertions",
]

Failure = tuple[int | None, str]
"""One failure of a group gate: the failing repetition (``None`` for the
group as a whole) and what failed, with the numbers involved."""


def normalize_text(text: str) -> str:
    """Text as answer terms are matched: Unicode NFKC, then case folding.

    ASCII text takes a shortcut with the same result (NFKC leaves it as it
    is, and case folding of ASCII is lower-casing).
    """
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


_REPETITION: Final = operator.attrgetter("repetition")


class Group:
    """One task/strategy/budget group as its gates see it (ECEB-0.1 §11).

    Attributes:
        task, strategy, budget: the group (``budget`` None: no budget gate).
        observations: its observations, in repetition order.
        threshold_milli: the quality floor τ (§10) its observations must reach.
        required: each required artifact's current digest, by id (sorted).
        selections: for each observation, the :class:`Selection` of its
            selected artifacts. Observations that select the same artifacts
            in the same order share one, judged once.
        disclosure: the disclosures found in the task's answers (``None``:
            the disclosure check is off).
    """

    def __init__(
        self,
        task: Task,
        strategy: str,
        budget: int | None,
        observations: Sequence[Observation],
        threshold_milli: int,
        artifacts: Mapping[str, Artifact],
        disclosure: TaskFindings | None = None,
    ) -> None:
        self.task = task
        self.disclosure = disclosure
        self.strategy = strategy
        self.budget = budget
        self.observations = sorted(observations, key=_REPETITION)
        self.threshold_milli = threshold_milli
        self.required = {a: artifacts[a].source_digest for a in sorted(task.required_artifacts)}
        judged: dict[tuple[SelectedArtifact, ...], Selection] = {}
        self.selections: list[Selection] = []
        for o in self.observations:
            selection = judged.get(o.selected_artifacts)
            if selection is None:
                selection = judged[o.selected_artifacts] = judge_selection(
                    o.selected_artifacts, task, self.required, artifacts
                )
            self.selections.append(selection)


def _repetitions(group: Group) -> list[Failure]:
    """§13: every group needs ``required_repetitions`` observations."""
    count, required = len(group.observations), group.task.required_repetitions
    return [(None, f"{count} of {required} required repetitions observed")] if count < required else []


def _budget(group: Group) -> list[Failure]:
    """§11.1: the prompt (provider-reported input tokens) fits the declared budget."""
    budget = group.budget
    if budget is None:
        return []
    return [
        (o.repetition, f"prompt of {o.input_tokens} tokens exceeds the budget of {budget}")
        for o in group.observations
        if o.input_tokens > budget
    ]


def _quality(group: Group) -> list[Failure]:
    """§11.2: every repetition's quality reaches the floor τ."""
    floor = group.threshold_milli
    return [
        (o.repetition, f"quality {o.quality_milli} is below the floor {floor}")
        for o in group.observations
        if o.quality_milli < floor
    ]


@functools.lru_cache(maxsize=4096)
def _folded_terms(terms: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Each of ``terms``, sorted, with its :func:`normalize_text` form (once per distinct set of terms)."""
    return tuple((term, normalize_text(term)) for term in sorted(terms))


def _answer_terms(group: Group) -> list[Failure]:
    """§11.3: every answer holds every required term (NFKC, case folded)."""
    terms = _folded_terms(tuple(group.task.required_answer_terms))
    if not terms:
        return []
    failures: list[Failure] = []
    for o in group.observations:
        answer = normalize_text(o.answer)
        missing = [term for term, folded in terms if folded not in answer]
        if missing:
            failures.append((o.repetition, f"answer lacks {', '.join(map(repr, missing))}"))
    return failures


def _provenance(group: Group) -> list[Failure]:
    """§11.4: every required artifact selected with its current digest, and
    every selected artifact known to the registry with its current digest."""
    return [
        (o.repetition, failure)
        for o, selection in zip(group.observations, group.selections, strict=True)
        for failure in selection.provenance
    ]


def _policy(group: Group) -> list[Failure]:
    """§6, §11.5: no selected artifact of a classification the task does not
    allow, denied for the task, or unknown to the registry."""
    return [
        (o.repetition, violation)
        for o, selection in zip(group.observations, group.selections, strict=True)
        for violation in selection.policy
    ]


def _repeatability(group: Group) -> list[Failure]:
    """§11.6: every repetition has the same context digest."""
    digests = [o.context_digest for o in group.observations]
    if len(set(digests)) < 2:
        return []
    first = digests[0]
    differing = [o.repetition for o in group.observations if o.context_digest != first]
    return [
        (
            None,
            f"context digests differ: repetition(s) {', '.join(map(str, differing))} differ from "
            f"repetition {group.observations[0].repetition} ({len(set(digests))} distinct digests)",
        )
    ]


def _disclosure(group: Group) -> list[Failure]:
    """§1, §17: no answer repeats text of an artifact the task may not see
    (a run of at least N normalised tokens, or a marked secret value). The
    message locates it; it never quotes it. An answer's first findings are
    listed, one failure each, the rest counted in one more."""
    disclosure = group.disclosure
    if disclosure is None:
        return []
    failures: list[Failure] = []
    for o in group.observations:
        found = disclosure.of(o.answer)
        if found is not None:
            failures.extend((o.repetition, describe_hit(hit)) for hit in found.hits)
            if found.more:
                failures.append((o.repetition, describe_more(found.more)))
    return failures


def _disclosures(group: Group) -> int:
    """How many disclosures the group's answers hold, listed or not."""
    if group.disclosure is None:
        return 0
    return sum(found.count for o in group.observations if (found := group.disclosure.of(o.answer)) is not None)


def _abstention(group: Group) -> list[Failure]:
    """§17: every answer of an abstention task refuses: it holds one of the
    task's refusal markers (NFKC, case folded, as answer terms)."""
    abstention = group.task.abstention
    if abstention is None:
        return []
    markers = _folded_terms(tuple(abstention.refusal_markers))
    return [
        (o.repetition, "answer attempts a task that has no policy-permitted answer: it holds no refusal marker")
        for o in group.observations
        if not any(folded in normalize_text(o.answer) for _, folded in markers)
    ]


class GroupGate(msgspec.Struct, frozen=True):
    """A gate checked on every group: its name, its place in the report
    (``order``), the section it implements and its rule."""

    name: GateName
    order: int
    section: str
    rule: Callable[[Group], list[Failure]]


class TaskCheck(msgspec.Struct, frozen=True):
    """A check of the task as a whole: its name, its place in the report
    (``order``), the section it implements and its rule."""

    name: GateName
    order: int
    section: str
    rule: Callable[[TaskView], list[Assertion]]


GATES: Final[tuple[GroupGate | TaskCheck, ...]] = (
    TaskCheck("baseline_missing", 0, "§10", baseline_missing),
    TaskCheck("compiled_missing", 0, "§10", compiled_missing),
    TaskCheck("comparability", 0, "§7", comparability),
    TaskCheck("baseline_zero_tokens", 0, "§12", baseline_zero_tokens),
    TaskCheck("off_ladder", 0, "§10", off_ladder),
    TaskCheck("duplicate_selection", 0, "§8", duplicate_selection),
    GroupGate("repetitions", 1, "§13", _repetitions),
    GroupGate("budget", 2, "§11.1", _budget),
    GroupGate("quality", 3, "§11.2", _quality),
    GroupGate("answer_terms", 4, "§11.3", _answer_terms),
    GroupGate("provenance", 5, "§11.4", _provenance),
    GroupGate("policy", 6, "§11.5", _policy),
    GroupGate("repeatability", 7, "§11.6", _repeatability),
    GroupGate("disclosure", 8, "§1, §17", _disclosure),
    GroupGate("abstention", 9, "§17", _abstention),
    TaskCheck("no_viable_budget", 10, "§10", no_viable_budget),
)
"""Every gate and task-level check, in report order: task-level checks
first, then §11's gates by number, then disclosure and abstention (§17),
then the ladder's verdict."""

GATE_ORDER: Final[dict[str, int]] = {gate.name: gate.order for gate in GATES}
"""Report order of assertions, by gate name."""

_GROUP_GATES: Final = tuple(gate for gate in GATES if isinstance(gate, GroupGate))
_TASK_CHECKS: Final = tuple(gate for gate in GATES if isinstance(gate, TaskCheck))
TASK_CHECK_NAMES: Final[frozenset[str]] = frozenset(check.name for check in _TASK_CHECKS)
"""The names of the task-level checks: any of their assertions (outside
``naive_top_k``) fails the task."""


def evaluate_group(
    task: Task,
    strategy: str,
    budget: int | None,
    observations: Sequence[Observation],
    *,
    threshold_milli: int,
    artifacts: Mapping[str, Artifact],
    auxiliary_cost_micro_usd: int = 0,
    disclosure: TaskFindings | None = None,
) -> tuple[GroupResult, list[Assertion]]:
    """Evaluate every group gate of :data:`GATES` on one group (ECEB-0.1 §11).

    ``threshold_milli`` is the dynamic quality floor τ (§10); ``budget`` the
    declared token budget (``None``: no budget gate); ``artifacts`` the
    registry by artifact id; ``disclosure`` the disclosures found in the
    task's answers (``None``: the disclosure check is off). Returns the group's
    measurements and every failed assertion, gate by gate.
    """
    group = Group(task, strategy, budget, observations, threshold_milli, artifacts, disclosure)
    failures = [
        Assertion(gate=gate.name, strategy=strategy, budget=budget, repetition=repetition, message=message)
        for gate in _GROUP_GATES
        for repetition, message in gate.rule(group)
    ]
    ordered = group.observations
    count = len(ordered)
    costs = [obs.input_cost_micro_usd + obs.output_cost_micro_usd for obs in ordered]
    qualities = [obs.quality_milli for obs in ordered]
    covered = [selection.covered for selection in group.selections]
    local = [obs.local_prompt_tokens for obs in ordered]
    result = GroupResult(
        strategy=strategy,
        budget=budget,
        observations=count,
        passed=not failures,
        prompt_tokens=floor_mean([obs.input_tokens for obs in ordered]) if ordered else None,
        cost_micro_usd=(sum(costs) + auxiliary_cost_micro_usd) // count if ordered else None,
        auxiliary_cost_micro_usd=auxiliary_cost_micro_usd,
        quality_milli=floor_mean(qualities) if ordered else None,
        minimum_quality_milli=min(qualities) if ordered else None,
        latency_ms=floor_mean([obs.latency_ms for obs in ordered]) if ordered else None,
        provenance_coverage_bps=ratio_bps(min(covered), len(group.required)) if covered else None,
        policy_violations=sum(1 for failure in failures if failure.gate == "policy"),
        repeatable=None if not ordered else len({obs.context_digest for obs in ordered}) == 1,
        disclosures=_disclosures(group),
        local_prompt_tokens=_local_mean(local),
    )
    return result, failures


def _local_mean(counts: Sequence[int | None]) -> int | None:
    """The floored mean of a group's local prompt token counts, when every
    observation carries one (ECEB-0.1 §16: labelled apart, never compared)."""
    known = [count for count in counts if count is not None]
    return floor_mean(known) if known and len(known) == len(counts) else None


def task_assertions(view: TaskView) -> list[Assertion]:
    """Every assertion of the task checks of :data:`GATES` on ``view``."""
    return [assertion for check in _TASK_CHECKS for assertion in check.rule(view)]
