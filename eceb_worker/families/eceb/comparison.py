"""Comparing two evaluation reports (``symgliph.eceb/comparison-v0.1``):
what changed from an old report to a new one of the same benchmark and
corpus, task by task, and which changes are regressions under the
thresholds given (ECEB-0.1 §12 figures, §15 claim classes).

A comparison is canonical JSON and a newline, like a report; it holds only
what the two reports hold, so the same two reports and thresholds give the
same bytes. Every figure is an integer: tokens, micro-USD, basis points.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.regressions import (
    Regression,
    RegressionKind,
    Thresholds,
    deciding_policy_violations,
    new_failed_gates,
    savings_drop,
    task_regressions,
)
from eceb_worker.families.eceb.report import Report, ReportInputs, Summary
from eceb_worker.families.eceb.verdicts import GateName, TaskResult
from eceb_worker.families.eceb.vocabulary import ClaimClass

__all__ = [
    "COMPARISON_SCHEMA",
    "ComparedReport",
    "Comparison",
    "Regression",
    "RegressionKind",
    "TaskChange",
    "Thresholds",
    "compare_reports",
    "encode_comparison",
]

COMPARISON_SCHEMA: Final = "symgliph.eceb/comparison-v0.1"

ChangeKind = Literal["added", "removed", "kept"]
"""A task of the new report only, of the old report only, or of both."""


class TaskChange(msgspec.Struct, frozen=True, kw_only=True):
    """How one task id of either report changed. ``old_*`` fields are
    ``None`` for an added task, ``new_*`` ones for a removed task.

    Fields:
        task_id, change: the task and whether it was added, removed or kept.
        old_passed, new_passed: its verdicts.
        old_minimum_viable_budget, new_minimum_viable_budget: tokens.
        budget_change: new minus old minimum viable budget (tokens); ``None``
            unless both reports have one.
        old_token_savings_bps, new_token_savings_bps, token_savings_change_bps:
            token savings and new minus old, basis points (``None`` unless both
            are known: savings exist for passing tasks only).
        old_cost_savings_bps, new_cost_savings_bps, cost_savings_change_bps:
            the same for cost savings.
        old_policy_violations, new_policy_violations: violations of the
            task's baseline and compiled groups, summed over their repetitions
            (``naive_top_k`` groups, which never decide a verdict, left out).
        policy_violations_increase: how many more the new report has (0 when
            as many or fewer; all of them for an added task).
        new_failed_gates: gates that decide the new report's verdict of the
            task and did not decide the old one's (a passing task has none),
            sorted; empty unless kept.
        regressions: the task's regressions.
    """

    task_id: str
    change: ChangeKind
    old_passed: bool | None
    new_passed: bool | None
    old_minimum_viable_budget: int | None
    new_minimum_viable_budget: int | None
    budget_change: int | None
    old_token_savings_bps: int | None
    new_token_savings_bps: int | None
    token_savings_change_bps: int | None
    old_cost_savings_bps: int | None
    new_cost_savings_bps: int | None
    cost_savings_change_bps: int | None
    old_policy_violations: int | None
    new_policy_violations: int | None
    policy_violations_increase: int
    new_failed_gates: tuple[GateName, ...]
    regressions: tuple[Regression, ...]

    @property
    def changed(self) -> bool:
        """Anything differs: added, removed, verdict, budget, savings, violations or gates."""
        return self.change != "kept" or bool(
            self.old_passed != self.new_passed
            or self.budget_change
            or self.old_minimum_viable_budget != self.new_minimum_viable_budget
            or self.old_token_savings_bps != self.new_token_savings_bps
            or self.old_cost_savings_bps != self.new_cost_savings_bps
            or self.old_policy_violations != self.new_policy_violations
            or self.new_failed_gates
        )


class ComparedReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a comparison keeps of one of its reports.

    Fields:
        eceb_version: the evaluator that wrote it.
        claim_class, non_empirical: its claim (ECEB-0.1 §15).
        inputs: its benchmark, task root, corpus root and run (id and digest).
        summary: its tasks passing k/n and mean savings.
    """

    eceb_version: str
    claim_class: ClaimClass
    non_empirical: bool
    inputs: ReportInputs
    summary: Summary


class SummaryChange(msgspec.Struct, frozen=True, kw_only=True):
    """New minus old of the summaries' figures.

    Fields:
        passing_tasks, total_tasks: counts.
        mean_token_savings_bps, mean_cost_savings_bps: basis points; ``None``
            unless both reports have the mean.
    """

    passing_tasks: int
    total_tasks: int
    mean_token_savings_bps: int | None
    mean_cost_savings_bps: int | None


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """Two reports compared (schema ``symgliph.eceb/comparison-v0.1``).

    Fields:
        schema: the schema identifier.
        old, new: the two reports' identities and summaries.
        claim_classes_differ: their claim classes (or empirical labels) differ.
        task_roots_differ, corpus_roots_differ: their roots differ (compared
            only when allowed).
        thresholds: the thresholds judged by.
        summary_change: new minus old of the summaries.
        tasks: one change per task id of either report, sorted by task id.
        regressions: every regression: the tasks' in task order, then the
            whole report's.
        regressed: there is at least one regression.
    """

    schema: Literal["symgliph.eceb/comparison-v0.1"]
    old: ComparedReport
    new: ComparedReport
    claim_classes_differ: bool
    task_roots_differ: bool
    corpus_roots_differ: bool
    thresholds: Thresholds
    summary_change: SummaryChange
    tasks: tuple[TaskChange, ...]
    regressions: tuple[Regression, ...]
    regressed: bool


def _difference(old: int | None, new: int | None) -> int | None:
    return None if old is None or new is None else new - old


def _of(task: TaskResult | None, field: str) -> int | None:
    """An integer field of a task, ``None`` for no task."""
    value: int | None = None if task is None else getattr(task, field)
    return value


def _task_change(task_id: str, old: TaskResult | None, new: TaskResult | None, thresholds: Thresholds) -> TaskChange:
    change: ChangeKind = "kept" if old is not None and new is not None else ("added" if old is None else "removed")
    gates: tuple[GateName, ...] = ()
    if old is not None and new is not None:
        gates = new_failed_gates(old, new)
    figures = {}
    for field in ("minimum_viable_budget", "token_savings_bps", "cost_savings_bps"):
        figures[f"old_{field}"], figures[f"new_{field}"] = _of(old, field), _of(new, field)
    figures["old_policy_violations"] = None if old is None else deciding_policy_violations(old)
    figures["new_policy_violations"] = None if new is None else deciding_policy_violations(new)
    violations_old, violations_new = figures["old_policy_violations"], figures["new_policy_violations"]
    increase = 0 if violations_new is None else max(0, violations_new - (violations_old or 0))
    return TaskChange(
        task_id=task_id,
        change=change,
        old_passed=None if old is None else old.passed,
        new_passed=None if new is None else new.passed,
        budget_change=_difference(figures["old_minimum_viable_budget"], figures["new_minimum_viable_budget"]),
        token_savings_change_bps=_difference(figures["old_token_savings_bps"], figures["new_token_savings_bps"]),
        cost_savings_change_bps=_difference(figures["old_cost_savings_bps"], figures["new_cost_savings_bps"]),
        policy_violations_increase=increase,
        new_failed_gates=gates,
        regressions=tuple(task_regressions(task_id, old, new, gates, increase, thresholds)),
        **figures,
    )


def _compared(report: Report) -> ComparedReport:
    return ComparedReport(
        eceb_version=report.eceb_version,
        claim_class=report.claim_class,
        non_empirical=report.non_empirical,
        inputs=report.inputs,
        summary=report.summary,
    )


def _by_id(report: Report) -> dict[str, TaskResult]:
    """The report's tasks by id; ValueError for a task id given twice (the
    reader, :func:`eceb_worker.pipeline.reports.read_report`, refuses such a file)."""
    tasks = {task.task_id: task for task in report.tasks}
    if len(tasks) != len(report.tasks):
        raise ValueError("a report names a task twice")
    return tasks


def _root_problems(old: Report, new: Report, names: tuple[str, str]) -> list[Problem]:
    problems = []
    for field, what in (("task_root", "task root"), ("corpus_root", "corpus root")):
        before, after = getattr(old.inputs, field), getattr(new.inputs, field)
        if before != after:
            problems.append(
                Problem(
                    file=names[1],
                    field=f"inputs.{field}",
                    message=(
                        f"{what} {after} differs from {names[0]}'s {before}: the reports judge different "
                        f"{'tasks' if field == 'task_root' else 'corpora'} (allow it with --allow-different-roots)"
                    ),
                )
            )
    return problems


def compare_reports(
    old: Report,
    new: Report,
    thresholds: Thresholds,
    *,
    allow_different_roots: bool = False,
    names: tuple[str, str] = ("the old report", "the new report"),
) -> Comparison:
    """Compare report ``old`` with report ``new`` under ``thresholds``.

    One :class:`TaskChange` per task id of either report, sorted. A kept
    task that passed before is a regression when it fails now
    (``pass_to_fail``); while it still passes, when its minimum viable
    budget rose by more than ``max_budget_increase`` tokens (``budget_up``)
    or its token or cost savings fell by more than the bps allowed. Any
    task, kept or added, with more policy violations in its baseline and
    compiled groups than before (ECEB-0.1 §14) regresses
    (``policy_violations``) unless allowed; a kept task that failed before
    and now fails for a gate that did not decide its verdict before
    (``new_failed_gate``), and a removed task (``removed``), likewise. The mean token and cost savings falling by more
    than allowed are regressions of the whole report (``task_id`` None).
    Claim classes that differ are flagged (``claim_classes_differ``), never
    a regression.

    ``names`` (old's, new's: paths or URLs as given) are how problems name
    the files. Raises :class:`~eceb_worker.errors.InputError` when the task
    roots or corpus roots differ and ``allow_different_roots`` is false,
    one problem a root; ValueError when a report names a task twice. Pure and
    deterministic; integer arithmetic only.
    """
    old_tasks, new_tasks = _by_id(old), _by_id(new)
    if not allow_different_roots and (problems := _root_problems(old, new, names)):
        raise InputError(problems)
    tasks = tuple(
        _task_change(task_id, old_tasks.get(task_id), new_tasks.get(task_id), thresholds)
        for task_id in sorted(old_tasks.keys() | new_tasks.keys())
    )
    before, after = old.summary, new.summary
    means: tuple[tuple[RegressionKind, str, str, str], ...] = (
        ("mean_token_savings_drop", "mean token savings", "mean_token_savings_bps", "max_token_savings_drop_bps"),
        ("mean_cost_savings_drop", "mean cost savings", "mean_cost_savings_bps", "max_cost_savings_drop_bps"),
    )
    regressions = (
        *(r for task in tasks for r in task.regressions),
        *(
            r
            for kind, what, field, allowed in means
            for r in savings_drop(
                None, kind, what, getattr(before, field), getattr(after, field), getattr(thresholds, allowed)
            )
        ),
    )
    return Comparison(
        schema=COMPARISON_SCHEMA,
        old=_compared(old),
        new=_compared(new),
        claim_classes_differ=(old.claim_class, old.non_empirical) != (new.claim_class, new.non_empirical),
        task_roots_differ=old.inputs.task_root != new.inputs.task_root,
        corpus_roots_differ=old.inputs.corpus_root != new.inputs.corpus_root,
        thresholds=thresholds,
        summary_change=SummaryChange(
            passing_tasks=after.passing_tasks - before.passing_tasks,
            total_tasks=after.total_tasks - before.total_tasks,
            mean_token_savings_bps=_difference(before.mean_token_savings_bps, after.mean_token_savings_bps),
            mean_cost_savings_bps=_difference(before.mean_cost_savings_bps, after.mean_cost_savings_bps),
        ),
        tasks=tasks,
        regressions=regressions,
        regressed=bool(regressions),
    )


def encode_comparison(comparison: Comparison) -> bytes:
    """The comparison's bytes: canonical JSON (RFC 8785) and a final newline."""
    return canonical_json(comparison) + b"\n"
