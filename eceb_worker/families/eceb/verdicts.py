"""What the gates of ECEB-0.1 find (§11-§14): a failed assertion, and the
measurements and verdict of one task/strategy/budget group. The gates
themselves are in :mod:`eceb_worker.families.eceb.gates`."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Assertion", "GateName", "GroupResult"]

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
