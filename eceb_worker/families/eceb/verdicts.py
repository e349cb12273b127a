"""What an evaluation finds (ECEB-0.1 §11-§14): a failed assertion, the
measurements and verdict of one task/strategy/budget group, one task's
figures, and what a shard of the evaluation produced for one task. The gates
that find them are in :mod:`eceb_worker.families.eceb.gates`."""

from __future__ import annotations

from typing import Literal

import msgspec

from eceb_worker.errors import Problem

__all__ = [
    "Assertion",
    "BaselineComposition",
    "GateName",
    "GroupResult",
    "RecordProblem",
    "TaskOutcome",
    "TaskResult",
]

GateName = Literal[
    "repetitions",
    "budget",
    "quality",
    "answer_terms",
    "provenance",
    "policy",
    "repeatability",
    "disclosure",
    "abstention",
    "baseline_missing",
    "compiled_missing",
    "baseline_zero_tokens",
    "comparability",
    "off_ladder",
    "duplicate_selection",
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
        disclosures: disclosures found in its answers (``disclosure``
            assertions), summed over repetitions.
        local_prompt_tokens: floored mean of the observations'
            ``local_prompt_tokens``, when every observation of the group
            carries one (else ``None``): a local, non-authoritative count,
            labelled apart and never compared (ECEB-0.1 §16).
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
    disclosures: int = 0
    local_prompt_tokens: int | None = None


class BaselineComposition(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a task's full permitted-context baseline selected, against what
    the task permits (ECEB-0.1 §6, §7): a run's writer chooses what its
    baseline selects, so a padded or a thin baseline (and the savings it
    makes) shows here.

    Counts are artifacts, sizes the registry's ``size_bytes``; an artifact
    selected twice counts once. *Permitted*: in the registry, of a
    classification the task allows, and not denied to it. Shares are basis
    points, floored; ``None`` when their whole is 0.

    Fields:
        permitted_artifacts, permitted_bytes: every registry artifact the
            task permits, and their bytes.
        required_artifacts, required_bytes: the task's required artifacts,
            and their bytes.
        repetition: the baseline repetition whose selection is described
            (the first); ``None`` when the task has no baseline observation
            (then nothing is selected).
        repetitions_differ: some other baseline repetition selected another
            set of artifacts (gate 7 fails such a baseline anyway).
        selected_artifacts, selected_bytes: the artifacts that repetition
            selected, and the bytes of those in the registry (one unknown to
            it adds none).
        selected_required: how many of them are required artifacts;
            ``selected_required_bytes`` their bytes.
        selected_not_permitted: how many of them the task does not permit
            (unknown, of a classification not allowed, or denied: the policy
            gate reports each).
        permitted_bytes_selected_bps: the share of the permitted bytes the
            selection holds (its permitted artifacts' bytes over
            ``permitted_bytes``).
        required_bytes_share_bps: the share of the selected bytes that are
            required artifacts' (``selected_required_bytes`` over
            ``selected_bytes``).
    """

    permitted_artifacts: int
    permitted_bytes: int
    required_artifacts: int
    required_bytes: int
    repetition: int | None
    repetitions_differ: bool
    selected_artifacts: int
    selected_bytes: int
    selected_required: int
    selected_required_bytes: int
    selected_not_permitted: int
    permitted_bytes_selected_bps: int | None
    required_bytes_share_bps: int | None


class TaskResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The per-task figures ECEB-0.1 §12 requires, and every failed assertion.

    Figures are integers: tokens, micro-USD, thousandths (``_milli``), basis
    points (``_bps``). Compiled figures are those of the minimum viable
    budget; ``None`` where there is none. Savings are given only for a
    passing task.

    Fields:
        task_id, passed.
        minimum_viable_budget: the first ladder budget whose group passes.
        baseline_prompt_tokens, compiled_prompt_tokens: floored mean input tokens.
        token_savings_bps: ``floor(10,000 × (full − compiled) / full)``, at least 0.
        baseline_cost_micro_usd, compiled_cost_micro_usd: floored mean cost per
            repetition, auxiliary costs included.
        cost_savings_bps: as token savings, over cost; ``None`` when the
            baseline cost is zero.
        baseline_quality_milli: floored mean baseline quality.
        quality_floor_milli: τ of §10.
        compiled_quality_milli: floored mean quality at the minimum viable budget.
        provenance_coverage_bps, policy_violations, repeatability: at the
            minimum viable budget.
        policy_violations_all_groups: violations in every group of the task.
        disclosures: disclosures at the minimum viable budget (0 there:
            a group with one does not pass); ``disclosures_all_groups``: in
            every group of the task.
        failed_assertions: every failed assertion of the task, all groups.
        groups: every evaluated group: baseline, each ladder budget, naive_top_k.
        token_savings_interval_bps, cost_savings_interval_bps: the seeded
            bootstrap percentile interval ``[lower, upper]`` of the saving
            over the repetitions of the baseline and the minimum viable
            budget (:mod:`eceb_worker.families.eceb.uncertainty`); ``None``
            when not estimated: a failing task, uncertainty not asked for,
            a group of one repetition, no saving (ECEB-0.1 §16).
        baseline_composition: what the baseline selected against what the
            task permits (:class:`BaselineComposition`); ``None`` in a
            report written before it was given.
    """

    task_id: str
    passed: bool
    minimum_viable_budget: int | None
    baseline_prompt_tokens: int | None
    compiled_prompt_tokens: int | None
    token_savings_bps: int | None
    baseline_cost_micro_usd: int | None
    compiled_cost_micro_usd: int | None
    cost_savings_bps: int | None
    baseline_quality_milli: int | None
    quality_floor_milli: int
    compiled_quality_milli: int | None
    provenance_coverage_bps: int | None
    policy_violations: int | None
    repeatability: bool | None
    policy_violations_all_groups: int
    disclosures: int | None = None
    disclosures_all_groups: int = 0
    failed_assertions: tuple[Assertion, ...]
    groups: tuple[GroupResult, ...]
    token_savings_interval_bps: tuple[int, int] | None = None
    cost_savings_interval_bps: tuple[int, int] | None = None
    baseline_composition: BaselineComposition | None = None


class RecordProblem(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A problem of one record of a run, with the record's place in the file.

    Fields:
        array: the array holding the record, ``"observations"`` or ``"auxiliary_costs"``.
        index: the record's zero-based position in that array.
        problem: the problem (its ``record`` is ``f"{array}[{index}]"``).
    """

    array: str
    index: int
    problem: Problem

    @property
    def order(self) -> tuple[str, int, str, str]:
        """Sort key putting problems in record order (``observations[3]``
        before ``observations[12]``), then by field and message; never read
        back from the problem's text."""
        return (self.array, self.index, self.problem.field, self.problem.message)


class TaskOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What the map step produced for one task id of the run or benchmark.

    Fields:
        task_id: the task.
        result: its evaluation (``None`` when it has problems or is not a
            task of the benchmark).
        records_digest: BLAKE3 of its records (for the run digest).
        problems: every problem of its records, each with its record's place.
    """

    task_id: str
    result: TaskResult | None
    records_digest: str
    problems: tuple[RecordProblem, ...]
