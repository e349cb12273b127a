"""Task evaluation: baseline, dynamic floor, ladder walk, minimum viable
budget, savings (ECEB-0.1 §10-§14).

:func:`evaluate_task` is the map step for one task; it sees only that task's
observations and auxiliary costs, so tasks can be evaluated in any shard and
any order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Final

import msgspec

from eceb_worker.core.arithmetic import savings_bps
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.composition import RegistryTotals, baseline_composition, registry_totals
from eceb_worker.families.eceb.disclosure import TaskFindings
from eceb_worker.families.eceb.gates import GATE_ORDER, TASK_CHECK_NAMES, TaskView, evaluate_group, task_assertions
from eceb_worker.families.eceb.run import AuxiliaryCost, Configuration, FactorialExperiment, Observation
from eceb_worker.families.eceb.uncertainty import Interval, Repetitions, task_intervals
from eceb_worker.families.eceb.verdicts import Assertion, GroupResult, TaskResult

__all__ = ["TaskEvidence", "evaluate_task", "quality_threshold"]

STRATEGY_ORDER: Final = {"": 0, "full_permitted_context": 1, "compiled": 2, "naive_top_k": 3}


class TaskEvidence(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Everything a run recorded for one task: its observations and auxiliary costs."""

    observations: tuple[Observation, ...] = ()
    auxiliary_costs: tuple[AuxiliaryCost, ...] = ()


def _assertion_key(a: Assertion) -> tuple[int, int, int, str, int, str]:
    """Report order: by group (strategy, budget), then gate number, repetition, text."""
    return (
        STRATEGY_ORDER[a.strategy],
        -1 if a.budget is None else a.budget,
        GATE_ORDER[a.gate],
        a.gate,
        -1 if a.repetition is None else a.repetition,
        a.message,
    )


def quality_threshold(minimum_quality_milli: int, baseline_quality_milli: int, maximum_regression_milli: int) -> int:
    """τ = max(floor, baseline − regression), thousandths (ECEB-0.1 §10)."""
    return max(minimum_quality_milli, baseline_quality_milli - maximum_regression_milli)


def evaluate_task(
    task: Task,
    evidence: TaskEvidence,
    *,
    artifacts: Mapping[str, Artifact],
    configurations: Mapping[str, Configuration],
    factorial: FactorialExperiment | None = None,
    disclosure: TaskFindings | None = None,
    bootstrap_seed: bytes | None = None,
    totals: RegistryTotals | None = None,
) -> TaskResult:
    """Evaluate one task (ECEB-0.1 §10-§14).

    The baseline group (``full_permitted_context``) is checked by the same
    gates, its quality against the task's absolute floor; an absent, failing
    or zero-token baseline fails the task. τ comes from the baseline's
    floored mean quality. Every ladder budget is evaluated, ascending; the
    first that passes is the minimum viable budget, and failures at every
    other budget are still reported. ``naive_top_k`` groups are evaluated and
    reported but do not decide the task. Records are assumed consistent
    (see :mod:`eceb_worker.families.eceb.consistency`); what a record does
    that its task does not allow (a compiled budget off the ladder, an
    artifact selected twice) is a task-level check. Any failed task-level
    check of :data:`~eceb_worker.families.eceb.gates.GATES` fails the task.
    ``disclosure`` is the disclosures found in the task's answers, for the
    disclosure gate (``None``: the check is off).

    With ``bootstrap_seed`` (32 bytes,
    :func:`~eceb_worker.families.eceb.uncertainty.task_seed`), a passing
    task's savings get their bootstrap percentile intervals (ECEB-0.1 §16);
    without, they are not estimated (``None``).

    ``artifacts`` is the registry by artifact id: every artifact, or at
    least those the task and its observations name when ``totals`` (or
    ``artifacts`` itself, a
    :class:`~eceb_worker.families.eceb.composition.RegistryArtifacts`)
    gives the whole registry's totals, from which the baseline's
    composition (ECEB-0.1 §7) counts what the task permits.
    """
    groups: dict[tuple[str, int | None], list[Observation]] = defaultdict(list)
    for obs in evidence.observations:
        groups[(obs.strategy, obs.budget)].append(obs)
    auxiliary: dict[tuple[str, int | None], int] = defaultdict(int)
    for aux in evidence.auxiliary_costs:
        auxiliary[(aux.strategy, aux.budget)] += aux.cost_micro_usd

    failures: list[Assertion] = []
    results: list[GroupResult] = []

    baseline_obs = groups.get(("full_permitted_context", None), [])
    baseline: GroupResult | None = None
    threshold = task.minimum_quality_milli
    if baseline_obs:
        baseline, baseline_failures = evaluate_group(
            task,
            "full_permitted_context",
            None,
            baseline_obs,
            threshold_milli=task.minimum_quality_milli,
            artifacts=artifacts,
            auxiliary_cost_micro_usd=auxiliary[("full_permitted_context", None)],
            disclosure=disclosure,
        )
        results.append(baseline)
        failures.extend(baseline_failures)
        assert baseline.quality_milli is not None
        threshold = quality_threshold(
            task.minimum_quality_milli, baseline.quality_milli, task.maximum_quality_regression_milli
        )

    candidate: GroupResult | None = None
    for budget in task.budget_ladder:
        result, group_failures = evaluate_group(
            task,
            "compiled",
            budget,
            groups.get(("compiled", budget), []),
            threshold_milli=threshold,
            artifacts=artifacts,
            auxiliary_cost_micro_usd=auxiliary[("compiled", budget)],
            disclosure=disclosure,
        )
        results.append(result)
        failures.extend(group_failures)
        if candidate is None and result.passed:
            candidate = result
    naive_budgets = sorted((b for s, b in groups if s == "naive_top_k"), key=lambda b: -1 if b is None else b)
    for naive_budget in naive_budgets:
        result, group_failures = evaluate_group(
            task,
            "naive_top_k",
            naive_budget,
            groups[("naive_top_k", naive_budget)],
            threshold_milli=threshold,
            artifacts=artifacts,
            auxiliary_cost_micro_usd=auxiliary[("naive_top_k", naive_budget)],
            disclosure=disclosure,
        )
        results.append(result)
        failures.extend(group_failures)
    failures.extend(
        task_assertions(
            TaskView(
                task=task,
                observations=evidence.observations,
                strategies=groups.keys(),
                baseline=baseline,
                candidate=candidate,
                configurations=configurations,
                factorial=factorial,
            )
        )
    )

    deciding = [f for f in failures if f.strategy != "naive_top_k"]
    baseline_ok = baseline is not None and not any(f.strategy == "full_permitted_context" for f in deciding)
    task_level_ok = not any(f.gate in TASK_CHECK_NAMES for f in deciding)
    passed = baseline_ok and candidate is not None and task_level_ok
    token_savings = cost_savings = None
    intervals: tuple[Interval | None, Interval | None] = (None, None)
    if passed and baseline is not None and candidate is not None:
        assert baseline.prompt_tokens is not None and candidate.prompt_tokens is not None
        assert baseline.cost_micro_usd is not None and candidate.cost_micro_usd is not None
        token_savings = savings_bps(baseline.prompt_tokens, candidate.prompt_tokens)
        if baseline.cost_micro_usd > 0:
            cost_savings = savings_bps(baseline.cost_micro_usd, candidate.cost_micro_usd)
        if bootstrap_seed is not None:
            compiled_key = ("compiled", candidate.budget)
            intervals = task_intervals(
                bootstrap_seed,
                _repetitions(baseline_obs, auxiliary[("full_permitted_context", None)]),
                _repetitions(groups[compiled_key], auxiliary[compiled_key]),
                cost=cost_savings is not None,
            )

    return TaskResult(
        task_id=task.task_id,
        passed=passed,
        minimum_viable_budget=candidate.budget if candidate else None,
        baseline_prompt_tokens=baseline.prompt_tokens if baseline else None,
        compiled_prompt_tokens=candidate.prompt_tokens if candidate else None,
        token_savings_bps=token_savings,
        baseline_cost_micro_usd=baseline.cost_micro_usd if baseline else None,
        compiled_cost_micro_usd=candidate.cost_micro_usd if candidate else None,
        cost_savings_bps=cost_savings,
        baseline_quality_milli=baseline.quality_milli if baseline else None,
        quality_floor_milli=threshold,
        compiled_quality_milli=candidate.quality_milli if candidate else None,
        provenance_coverage_bps=candidate.provenance_coverage_bps if candidate else None,
        policy_violations=candidate.policy_violations if candidate else None,
        repeatability=candidate.repeatable if candidate else None,
        policy_violations_all_groups=sum(r.policy_violations for r in results),
        disclosures=candidate.disclosures if candidate else None,
        disclosures_all_groups=sum(r.disclosures for r in results),
        failed_assertions=tuple(sorted(failures, key=_assertion_key)),
        groups=tuple(results),
        token_savings_interval_bps=intervals[0],
        cost_savings_interval_bps=intervals[1],
        baseline_composition=baseline_composition(
            task, baseline_obs, artifacts, registry_totals(artifacts) if totals is None else totals
        ),
    )


def _repetitions(observations: list[Observation], auxiliary_cost_micro_usd: int) -> Repetitions:
    """A group's per-repetition tokens and costs, in repetition order (the
    records' order in the file never matters)."""
    ordered = sorted(observations, key=lambda o: o.repetition)
    return Repetitions(
        tokens=tuple(o.input_tokens for o in ordered),
        costs=tuple(o.input_cost_micro_usd + o.output_cost_micro_usd for o in ordered),
        auxiliary=auxiliary_cost_micro_usd,
    )
