"""The task-level checks of ECEB-0.1 (§7, §8, §10, §12): rules over one
evaluated task (:class:`TaskView`), each returning its failed assertions.
Their names, report order and sections are in
:data:`eceb_worker.families.eceb.gates.GATES`, with the group gates."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Final

import msgspec

from eceb_worker.families.eceb.benchmark import Task, query_digest
from eceb_worker.families.eceb.run import Configuration, FactorialExperiment, Observation
from eceb_worker.families.eceb.verdicts import Assertion, GroupResult

__all__ = [
    "TaskView",
    "baseline_missing",
    "baseline_zero_tokens",
    "comparability",
    "compiled_missing",
    "duplicate_selection",
    "no_viable_budget",
    "off_ladder",
]


class TaskView(msgspec.Struct, frozen=True, kw_only=True):
    """One task after its groups were evaluated, as the task checks see it.

    Fields:
        task: the benchmark's task.
        observations: every observation of the task.
        strategies: the (strategy, budget) groups that have observations.
        baseline: the ``full_permitted_context`` group's result, if it has observations.
        candidate: the first ladder budget's group that passes, if any.
        configurations: the run's configurations by id.
        factorial: the run's factorial declaration.
    """

    task: Task
    observations: Sequence[Observation]
    strategies: Collection[tuple[str, int | None]]
    baseline: GroupResult | None
    candidate: GroupResult | None
    configurations: Mapping[str, Configuration]
    factorial: FactorialExperiment | None


def baseline_missing(view: TaskView) -> list[Assertion]:
    """§10: the full permitted-context baseline is required."""
    if view.baseline is not None:
        return []
    return [Assertion(gate="baseline_missing", message="no full_permitted_context observation")]


def baseline_zero_tokens(view: TaskView) -> list[Assertion]:
    """§12: savings are undefined over a zero-token baseline."""
    if view.baseline is None or view.baseline.prompt_tokens != 0:
        return []
    return [
        Assertion(
            gate="baseline_zero_tokens",
            strategy="full_permitted_context",
            message="the baseline has zero prompt tokens: savings are undefined",
        )
    ]


def compiled_missing(view: TaskView) -> list[Assertion]:
    """§10: the compiled strategy must be observed at some budget."""
    if any(strategy == "compiled" for strategy, _ in view.strategies):
        return []
    return [Assertion(gate="compiled_missing", message="no compiled observation at any budget")]


_COMPARED: Final = ("model", "judge", "tokenizer", "decoding", "pricing")


def comparability(view: TaskView) -> list[Assertion]:
    """§7: strategies are compared under the same model, judge, tokenizer,
    decoding, pricing and task text, unless a factorial experiment declares
    the factor."""
    declared = set(view.factorial.factors) if view.factorial else set()
    failures: list[Assertion] = []
    used = sorted({obs.configuration_id for obs in view.observations})
    for factor in _COMPARED if len(used) > 1 else ():  # one configuration cannot differ from itself
        if factor in declared:
            continue
        values = {msgspec.json.encode(getattr(view.configurations[cid], factor)) for cid in used}
        if len(values) > 1:
            failures.append(
                Assertion(
                    gate="comparability",
                    message=f"{factor} differs between configurations {', '.join(used)} "
                    "and no factorial experiment declares it",
                )
            )
    if "task_text" not in declared:
        expected = query_digest(view.task.query)
        strategies = sorted({obs.strategy for obs in view.observations if obs.query_digest != expected})
        if strategies:
            failures.append(
                Assertion(
                    gate="comparability",
                    message=f"{', '.join(strategies)} used a query other than the benchmark's task text",
                )
            )
    return failures


def off_ladder(view: TaskView) -> list[Assertion]:
    """§10: a compiled observation is at a budget of the task's ladder; one
    that is not belongs to no group the ladder walk evaluates."""
    ladder = view.task.budget_ladder
    return [
        Assertion(
            gate="off_ladder",
            strategy="compiled",
            budget=obs.budget,
            repetition=obs.repetition,
            message=f"observed at {'no budget' if obs.budget is None else f'budget {obs.budget}'}, "
            f"which is not on the task's ladder {list(ladder)}: not evaluated",
        )
        for obs in view.observations
        if obs.strategy == "compiled" and obs.budget not in ladder
    ]


def duplicate_selection(view: TaskView) -> list[Assertion]:
    """§8: an observation lists each selected artifact once; one listed more
    often leaves what was selected, and with which digest, ambiguous."""
    failures: list[Assertion] = []
    for obs in view.observations:
        selected = obs.selected_artifacts
        if len(selected) < 2 or (len(selected) == 2 and selected[0].artifact_id != selected[1].artifact_id):
            continue  # the usual cases, without a list
        ids = [s.artifact_id for s in selected]
        if len(set(ids)) == len(ids):  # the usual case, without counting
            continue
        counts = Counter(ids)
        for artifact_id, count in sorted(counts.items()):
            if count > 1:
                failures.append(
                    Assertion(
                        gate="duplicate_selection",
                        strategy=obs.strategy,
                        budget=obs.budget,
                        repetition=obs.repetition,
                        message=f"selects {artifact_id!r} {count} times",
                    )
                )
    return failures


def no_viable_budget(view: TaskView) -> list[Assertion]:
    """§10: some ladder budget must pass every gate (the minimum viable budget)."""
    if view.candidate is not None:
        return []
    ladder = list(view.task.budget_ladder)
    return [Assertion(gate="no_viable_budget", message=f"no budget of {ladder} passes every gate")]
