"""When a change from an old evaluation report to a new one is a
regression (ECEB-0.1 §12 figures): the thresholds, the kinds of regression
and the rules that find them, one task or one summary figure at a time.
:func:`eceb_worker.families.eceb.comparison.compare_reports` applies them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Literal

import msgspec

from eceb_worker.core.figures import grouped, percent_bps, signed
from eceb_worker.families.eceb.explanations import decides_verdict
from eceb_worker.families.eceb.verdicts import GateName, TaskResult

__all__ = [
    "Regression",
    "RegressionKind",
    "Thresholds",
    "deciding_policy_violations",
    "new_failed_gates",
    "savings_drop",
    "task_regressions",
]

RegressionKind = Literal[
    "pass_to_fail",
    "removed",
    "budget_up",
    "token_savings_drop",
    "cost_savings_drop",
    "policy_violations",
    "new_failed_gate",
    "mean_token_savings_drop",
    "mean_cost_savings_drop",
]
"""What made a comparison regress, in the order a task's regressions are listed."""


class Thresholds(msgspec.Struct, frozen=True, kw_only=True):
    """How much worse the new report may be before a change is a regression.

    Fields:
        max_token_savings_drop_bps: the largest allowed fall of a passing
            task's token savings, and of the mean token savings, in basis points.
        max_cost_savings_drop_bps: the same for cost savings.
        max_budget_increase: how far a passing task's minimum viable budget
            may rise, in tokens.
        allow_new_policy_violations: more policy violations in a task (its
            baseline and compiled groups) than before is not a regression.
        allow_new_failed_gates: a task that failed before and fails now for a
            gate that did not decide its verdict before is not a regression.
        allow_removed_tasks: a task of the old report missing from the new
            one is not a regression.
    """

    max_token_savings_drop_bps: Annotated[int, msgspec.Meta(ge=0)] = 0
    max_cost_savings_drop_bps: Annotated[int, msgspec.Meta(ge=0)] = 0
    max_budget_increase: Annotated[int, msgspec.Meta(ge=0)] = 0
    allow_new_policy_violations: bool = False
    allow_new_failed_gates: bool = False
    allow_removed_tasks: bool = False


class Regression(msgspec.Struct, frozen=True, kw_only=True):
    """One way the new report is worse than the old one beyond the thresholds.

    Fields:
        task_id: the task; ``None`` for a regression of the whole report
            (a mean saving).
        kind: what regressed (:data:`RegressionKind`).
        message: one sentence naming the task and the numbers.
    """

    task_id: str | None
    kind: RegressionKind
    message: str


def _deciding_gates(task: TaskResult) -> frozenset[GateName]:
    return frozenset(a.gate for a in task.failed_assertions if decides_verdict(task, a))


def deciding_policy_violations(task: TaskResult) -> int:
    """The policy violations (ECEB-0.1 §14) of a task's baseline and
    compiled groups, summed over their repetitions: those of ``naive_top_k``
    groups, which never decide a verdict (§7), left out."""
    return sum(group.policy_violations for group in task.groups if group.strategy != "naive_top_k")


def new_failed_gates(old: TaskResult, new: TaskResult) -> tuple[GateName, ...]:
    """The gates that decide ``new``'s verdict and did not decide ``old``'s,
    sorted: of the failed assertions, only those that are reasons the task
    fails (:func:`~eceb_worker.families.eceb.explanations.decides_verdict`;
    none for a passing task, none of ``naive_top_k``, ECEB-0.1 §7)."""
    return tuple(sorted(_deciding_gates(new) - _deciding_gates(old)))


def savings_drop(
    task_id: str | None, kind: RegressionKind, what: str, old: int | None, new: int | None, allowed: int
) -> Iterator[Regression]:
    """The regression of ``kind`` when savings fell from ``old`` to ``new``
    (basis points) by more than ``allowed`` basis points: none when either
    is ``None`` (unknown). ``what`` starts the message (``"task t-1: token
    savings"``); ``task_id`` is ``None`` for a mean of the summary."""
    if old is None or new is None or old - new <= allowed:
        return
    yield Regression(
        task_id=task_id,
        kind=kind,
        message=(
            f"{what} fell from {percent_bps(old)} to {percent_bps(new)}: {signed(new - old)} bps, "
            f"more than the {grouped(allowed)} bps allowed"
        ),
    )


def task_regressions(
    task_id: str,
    old: TaskResult | None,
    new: TaskResult | None,
    gates: Sequence[str],
    more_violations: int,
    thresholds: Thresholds,
) -> Iterator[Regression]:
    """The regressions of task ``task_id``, from its result in the old
    report and in the new one (``None`` where it is missing), the gates
    newly failing (:func:`new_failed_gates`) and how many more policy
    violations it has (ECEB-0.1 §14), in :data:`RegressionKind` order. The
    rules are those of
    :func:`~eceb_worker.families.eceb.comparison.compare_reports`."""
    name = f"task {task_id}"
    if new is None:
        assert old is not None
        if not thresholds.allow_removed_tasks:
            verdict = "passed" if old.passed else "failed"
            yield Regression(
                task_id=task_id, kind="removed", message=f"{name} ({verdict} before) is missing from the new report"
            )
        return
    if old is not None and old.passed and not new.passed:
        failed = sorted({a.gate for a in new.failed_assertions})
        yield Regression(
            task_id=task_id,
            kind="pass_to_fail",
            message=f"{name} passed before and fails now ({len(new.failed_assertions)} failed assertion(s): "
            f"{', '.join(failed) or 'none listed'})",
        )
    if old is not None and old.passed and new.passed:
        budget_old, budget_new = old.minimum_viable_budget, new.minimum_viable_budget
        if (
            budget_old is not None
            and budget_new is not None
            and budget_new - budget_old > thresholds.max_budget_increase
        ):
            yield Regression(
                task_id=task_id,
                kind="budget_up",
                message=(
                    f"{name}: minimum viable budget rose from {grouped(budget_old)} to {grouped(budget_new)} tokens "
                    f"({signed(budget_new - budget_old)}, more than the {grouped(thresholds.max_budget_increase)} "
                    "allowed)"
                ),
            )
        yield from savings_drop(
            task_id,
            "token_savings_drop",
            f"{name}: token savings",
            old.token_savings_bps,
            new.token_savings_bps,
            thresholds.max_token_savings_drop_bps,
        )
        yield from savings_drop(
            task_id,
            "cost_savings_drop",
            f"{name}: cost savings",
            old.cost_savings_bps,
            new.cost_savings_bps,
            thresholds.max_cost_savings_drop_bps,
        )
    if more_violations > 0 and not thresholds.allow_new_policy_violations:
        before = deciding_policy_violations(old) if old is not None else 0
        yield Regression(
            task_id=task_id,
            kind="policy_violations",
            message=(
                f"{name}: {grouped(more_violations)} more policy violation(s) in its baseline and compiled groups "
                f"({grouped(before)} before, {grouped(deciding_policy_violations(new))} now)"
            ),
        )
    if gates and old is not None and not old.passed and not thresholds.allow_new_failed_gates:
        yield Regression(
            task_id=task_id,
            kind="new_failed_gate",
            message=f"{name} failed before and now also fails for gate(s) {', '.join(gates)}",
        )
