"""The seven mandatory gates of a strategy-budget group (ECEB-0.1 §11, §13, §14).

:func:`evaluate_group` checks every gate on every observation of one group and
collects every failure; it never stops at the first.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping, Sequence
from typing import Final, Literal

import msgspec

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.benchmark import Task
from eceb_worker.engine.metrics import floor_mean, ratio_bps
from eceb_worker.engine.run import Observation

__all__ = ["GATE_ORDER", "Assertion", "GateName", "GroupResult", "evaluate_group", "normalize_text"]

GateName = Literal[
    "repetitions",
    "budget",
    "quality",
    "answer_terms",
    "provenance",
    "policy",
    "repeatability",
    "baseline_missing",
    "compiled_missing",
    "baseline_zero_tokens",
    "comparability",
    "no_viable_budget",
]

GATE_ORDER: Final[dict[str, int]] = {
    "baseline_missing": 0,
    "compiled_missing": 0,
    "comparability": 0,
    "baseline_zero_tokens": 0,
    "repetitions": 1,
    "budget": 2,
    "quality": 3,
    "answer_terms": 4,
    "provenance": 5,
    "policy": 6,
    "repeatability": 7,
    "no_viable_budget": 8,
}
"""Report order of assertions: task-level first, then §11's gate numbers."""


class Assertion(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One failed assertion.

    Fields:
        gate: which gate or task-level check failed (see :data:`GateName`).
        strategy: the group's strategy; ``""`` for a task-level assertion.
        budget: the group's budget; ``None`` for groups without one.
        repetition: the failing repetition; ``None`` for a group-level failure.
        message: what failed, with the numbers involved.
    """

    gate: GateName
    strategy: str = ""
    budget: int | None = None
    repetition: int | None = None
    message: str


class GroupResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Measurements and verdict of one task/strategy/budget group.

    Fields (means are floored integer means over the group's repetitions;
    ``None`` when the group has no observation):
        strategy, budget: the group.
        observations: how many observations it has.
        passed: every gate passed.
        prompt_tokens: mean provider-reported input tokens.
        cost_micro_usd: mean cost per repetition: input + output cost of the
            observations plus the group's auxiliary costs, divided by the
            number of observations.
        auxiliary_cost_micro_usd: total auxiliary cost charged to the group.
        quality_milli: mean judge quality; ``minimum_quality_milli`` the lowest.
        latency_ms: mean end-to-end latency.
        provenance_coverage_bps: lowest per-repetition share of required
            artifacts selected with their current digest.
        policy_violations: selected artifacts violating policy, summed over repetitions.
        repeatable: every repetition has the same context digest.
    """

    strategy: str
    budget: int | None
    observations: int
    passed: bool
    prompt_tokens: int | None
    cost_micro_usd: int | None
    auxiliary_cost_micro_usd: int
    quality_milli: int | None
    minimum_quality_milli: int | None
    latency_ms: int | None
    provenance_coverage_bps: int | None
    policy_violations: int
    repeatable: bool | None


def normalize_text(text: str) -> str:
    """Text as answer terms are matched: Unicode NFKC, then case folding.

    ASCII text takes a shortcut with the same result (NFKC leaves it as it
    is, and case folding of ASCII is lower-casing).
    """
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def _describe(artifact_id: str) -> str:
    return repr(artifact_id)


def _selection_verdict(
    selection: tuple[str, str],
    artifacts: Mapping[str, Artifact],
    allowed: Collection[str],
    denied: Collection[str],
    required: Mapping[str, str],
) -> tuple[str | None, str | None]:
    """The provenance failure and the policy violation (messages, or None) of
    selecting ``artifact_id`` with ``observed`` digest (ECEB-0.1 §6, §14).

    Required artifacts' digests are judged by the coverage check instead."""
    artifact_id, observed = selection
    artifact = artifacts.get(artifact_id)
    reasons = []
    provenance = None
    if artifact is None:
        reasons.append("unknown artifact")
        provenance = f"selected artifact {_describe(artifact_id)} is not in the registry"
    else:
        if artifact.classification not in allowed:
            reasons.append(f"classification {artifact.classification} not allowed")
        if artifact_id not in required and observed != artifact.source_digest:
            provenance = f"selected artifact {_describe(artifact_id)} has stale digest {observed}"
    if artifact_id in denied:
        reasons.append("denied for this task")
    policy = f"selected {_describe(artifact_id)}: {'; '.join(reasons)}" if reasons else None
    return provenance, policy


def evaluate_group(
    task: Task,
    strategy: str,
    budget: int | None,
    observations: Sequence[Observation],
    *,
    threshold_milli: int,
    artifacts: Mapping[str, Artifact],
    auxiliary_cost_micro_usd: int = 0,
) -> tuple[GroupResult, list[Assertion]]:
    """Evaluate every gate of ECEB-0.1 §11 on one group.

    ``threshold_milli`` is the dynamic quality floor τ (§10); ``budget`` the
    declared token budget (``None``: no budget gate); ``artifacts`` the
    registry by artifact id. Returns the group's measurements and every failed
    assertion, in observation (repetition) order.
    """
    failures: list[Assertion] = []

    def fail(gate: GateName, message: str, repetition: int | None = None) -> None:
        failures.append(Assertion(gate=gate, strategy=strategy, budget=budget, repetition=repetition, message=message))

    ordered = sorted(observations, key=lambda o: o.repetition)
    count = len(ordered)
    if count < task.required_repetitions:
        fail("repetitions", f"{count} of {task.required_repetitions} required repetitions observed")

    allowed = set(task.allowed_classifications)
    denied = set(task.denied_artifacts)
    current = {artifact_id: artifacts[artifact_id].source_digest for artifact_id in sorted(task.required_artifacts)}
    required_pairs = set(current.items())
    coverage_of = [ratio_bps(covered, len(current)) for covered in range(len(current) + 1)]
    terms = [(term, normalize_text(term)) for term in sorted(task.required_answer_terms)]
    # What one selection (artifact id, observed digest) violates: computed once per group.
    verdicts: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    coverages: list[int] = []
    violations = 0
    for obs in ordered:
        rep = obs.repetition
        if budget is not None and obs.input_tokens > budget:
            fail("budget", f"prompt of {obs.input_tokens} tokens exceeds the budget of {budget}", rep)
        if obs.quality_milli < threshold_milli:
            fail("quality", f"quality {obs.quality_milli} is below the floor {threshold_milli}", rep)
        if terms:
            answer = normalize_text(obs.answer)
            missing_terms = [term for term, folded in terms if folded not in answer]
            if missing_terms:
                fail("answer_terms", f"answer lacks {', '.join(map(repr, missing_terms))}", rep)

        selected = {(s.artifact_id, s.observed_digest) for s in obs.selected_artifacts}
        covered = len(required_pairs & selected)
        if covered != len(current):
            observed_of = dict(selected)
            for artifact_id, digest in current.items():
                observed = observed_of.get(artifact_id)
                if observed is None:
                    fail("provenance", f"required artifact {_describe(artifact_id)} not selected", rep)
                elif observed != digest:
                    fail(
                        "provenance",
                        f"required artifact {_describe(artifact_id)} selected with stale digest {observed}",
                        rep,
                    )
        coverages.append(coverage_of[covered])
        for key in selected:
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = verdicts[key] = _selection_verdict(key, artifacts, allowed, denied, current)
            provenance, policy = verdict
            if provenance is not None:
                fail("provenance", provenance, rep)
            if policy is not None:
                violations += 1
                fail("policy", policy, rep)

    digests = [obs.context_digest for obs in ordered]
    repeatable = None if not ordered else len(set(digests)) == 1
    if repeatable is False:
        first = digests[0]
        differing = [obs.repetition for obs in ordered if obs.context_digest != first]
        fail(
            "repeatability",
            f"context digests differ: repetition(s) {', '.join(map(str, differing))} differ from "
            f"repetition {ordered[0].repetition} ({len(set(digests))} distinct digests)",
        )

    costs = [obs.input_cost_micro_usd + obs.output_cost_micro_usd for obs in ordered]
    qualities = [obs.quality_milli for obs in ordered]
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
        provenance_coverage_bps=min(coverages) if coverages else None,
        policy_violations=violations,
        repeatable=repeatable,
    )
    return result, failures
