"""The evaluation report (``symgliph.eceb/report-v0.1``) and the reduce step
that builds it from per-task results (ECEB-0.1 §12, §15).

The report is canonical JSON (RFC 8785: sorted keys, no insignificant white
space, integers only) followed by one newline; it holds no wall-clock time,
no host name and no storage location, so identical inputs give identical
bytes whatever the order of their records, the shard size or the worker count.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import blake3
import msgspec

from eceb_worker.core.arithmetic import BPS, ratio_bps
from eceb_worker.core.canonical import canonical_json, canonical_lines
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.disclosure import DisclosureCheck
from eceb_worker.families.eceb.run import AuxiliaryCost, FactorialExperiment, Observation, Run, RunHeader
from eceb_worker.families.eceb.uncertainty import (
    NOT_ESTIMATED,
    Uncertainty,
    UncertaintyMode,
    bootstrap_uncertainty,
    mean_interval,
    summary_seed,
)
from eceb_worker.families.eceb.verdicts import TaskResult
from eceb_worker.families.eceb.vocabulary import REPORT_SCHEMA, ClaimClass

__all__ = [
    "Report",
    "ReportInputs",
    "RunDigester",
    "Summary",
    "encode_report",
    "reduce_report",
    "report_problems",
    "run_digest",
    "summarize",
    "task_records_digest",
]

RUN_DIGEST_DOMAIN: Final = b"symgliph:eceb:run:v0.1\x00"


class ReportInputs(msgspec.Struct, frozen=True, kw_only=True):
    """Digests of what the report was computed from.

    Fields:
        benchmark_id: the benchmark's name.
        task_root: the benchmark's task root.
        corpus_root: the corpus root, recomputed from the registry and
            verified against the corpus bytes.
        artifact_count: artifacts re-hashed and verified.
        run_id: the run's name.
        run_digest: the run's order-independent digest (:func:`run_digest`).
    """

    benchmark_id: str
    task_root: str
    corpus_root: str
    artifact_count: int
    run_id: str
    run_digest: str


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """Aggregate figures (ECEB-0.1 §12).

    Fields:
        passing_tasks, total_tasks: numerator and denominator; failed tasks
            stay in the denominator.
        mean_token_savings_bps: floored mean over passing tasks; ``None`` if none pass.
        mean_cost_savings_bps: floored mean over the ``cost_savings_tasks``
            passing tasks whose baseline cost is positive; ``None`` if none.
        token_savings_interval_bps, cost_savings_interval_bps: the seeded
            bootstrap percentile interval ``[lower, upper]`` of each mean,
            the passing tasks resampled (ECEB-0.1 §16,
            :func:`~eceb_worker.families.eceb.uncertainty.mean_interval`);
            ``None`` when not estimated (fewer than two tasks, or not asked for).
    """

    passing_tasks: int
    total_tasks: int
    mean_token_savings_bps: int | None
    mean_cost_savings_bps: int | None
    cost_savings_tasks: int
    token_savings_interval_bps: tuple[int, int] | None = None
    cost_savings_interval_bps: tuple[int, int] | None = None


class TokenCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Which token counts a report compares (ECEB-0.1 §16).

    Fields:
        compared: always ``provider_native``: savings, budgets and costs use
            the provider-reported input tokens.
        local: ``reported_separately`` when some group carries a
            ``local_prompt_tokens`` mean (labelled apart, never in a saving),
            ``absent`` when none does.
    """

    compared: Literal["provider_native"] = "provider_native"
    local: Literal["reported_separately", "absent"] = "absent"


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """An evaluation report (schema ``symgliph.eceb/report-v0.1``).

    Fields:
        schema: the schema identifier.
        eceb_version: the evaluator's version.
        claim_class: the run's claim class (ECEB-0.1 §15), never upgraded.
        non_empirical: the run declares synthetic scores or usage.
        factorial_experiment: the factors the run declared free to differ.
        inputs: digests of the benchmark, corpus and run.
        disclosure_check: whether answers were checked for disclosures of
            what their task may not see (§1, §17), and with which N (a
            report written before the check existed reads as not checked).
        summary: aggregate figures.
        tasks: one result per task, sorted by task id.
        uncertainty: how the intervals were estimated, or the statement that
            they were not (ECEB-0.1 §16); a report written without it reads
            as not estimated.
        token_counts: which token counts are compared, and whether local
            counts are reported apart (§16).
    """

    schema: Literal["symgliph.eceb/report-v0.1"]
    eceb_version: str
    claim_class: ClaimClass
    non_empirical: bool
    factorial_experiment: FactorialExperiment | None
    inputs: ReportInputs
    disclosure_check: DisclosureCheck = DisclosureCheck(enabled=False)
    summary: Summary
    tasks: tuple[TaskResult, ...]
    uncertainty: Uncertainty = NOT_ESTIMATED
    token_counts: TokenCounts = TokenCounts()


def task_records_digest(observations: Sequence[Observation], auxiliary_costs: Sequence[AuxiliaryCost]) -> str:
    """BLAKE3 of one task's records, whatever their order (hex).

    Hashes each observation (selected artifacts sorted) as one canonical
    record and a newline, ordered by strategy, budget (none first) and
    repetition, then each auxiliary cost likewise, ordered by its bytes.
    """
    hasher = blake3.blake3()
    ordered = sorted(observations, key=lambda o: (o.strategy, -1 if o.budget is None else o.budget, o.repetition))
    if ordered:
        hasher.update(canonical_lines([_with_sorted_selection(o) for o in ordered]))
    if auxiliary_costs:
        hasher.update(b"".join(sorted(canonical_json(a) + b"\n" for a in auxiliary_costs)))
    return str(hasher.hexdigest())


class RunDigester:
    """Builds a run's order-independent digest from per-task record digests.

    ``BLAKE3("symgliph:eceb:run:v0.1\\0" || header || "\\n" || lines)``: the
    header is the canonical run header (configurations sorted by id); each
    line is the canonical JSON array ``[task_id, records_digest]`` (see
    :func:`task_records_digest`) and a newline, lines in ascending task id. Reordering records in the file does
    not change the digest; changing any value does. Tasks may be digested in
    any shard and order: :meth:`hexdigest` sorts them.
    """

    def __init__(self, header: RunHeader) -> None:
        self._header = msgspec.structs.replace(
            header,
            configurations=tuple(sorted(header.configurations, key=lambda c: c.configuration_id)),
            factorial_experiment=_sorted_factors(header.factorial_experiment),
        )
        self._tasks: dict[str, str] = {}

    def add_task(self, task_id: str, records_digest: str) -> None:
        """Record one task's :func:`task_records_digest`. Raises ValueError for a task added twice."""
        if task_id in self._tasks:
            raise ValueError(f"task {task_id!r} digested twice")
        self._tasks[task_id] = records_digest

    def hexdigest(self) -> str:
        """The run digest, 64 lowercase hex characters."""
        hasher = blake3.blake3(RUN_DIGEST_DOMAIN)
        hasher.update(canonical_json(self._header))
        hasher.update(b"\n")
        for task_id in sorted(self._tasks):
            hasher.update(canonical_json([task_id, self._tasks[task_id]]) + b"\n")
        return str(hasher.hexdigest())


def run_digest(run: Run) -> str:
    """The :class:`RunDigester` digest of a whole, decoded run."""
    observations: dict[str, list[Observation]] = defaultdict(list)
    auxiliary: dict[str, list[AuxiliaryCost]] = defaultdict(list)
    for o in run.observations:
        observations[o.task_id].append(o)
    for a in run.auxiliary_costs:
        auxiliary[a.task_id].append(a)
    header = RunHeader(**{f: getattr(run, f) for f in RunHeader.__struct_fields__})
    digester = RunDigester(header)
    for task_id in observations.keys() | auxiliary.keys():
        digester.add_task(task_id, task_records_digest(observations[task_id], auxiliary[task_id]))
    return digester.hexdigest()


def _sorted_factors(factorial: FactorialExperiment | None) -> FactorialExperiment | None:
    """The declaration with its factors in sorted order (their order carries no meaning)."""
    if factorial is None:
        return None
    return msgspec.structs.replace(factorial, factors=tuple(sorted(factorial.factors)))


def _with_sorted_selection(observation: Observation) -> Observation:
    selected = observation.selected_artifacts
    if len(selected) < 2:
        return observation
    if len(selected) == 2:  # the usual case, without a list
        first, second = selected
        if (first.artifact_id, first.observed_digest) <= (second.artifact_id, second.observed_digest):
            return observation
    keys = [(s.artifact_id, s.observed_digest) for s in selected]
    if keys == sorted(keys):
        return observation
    ordered = tuple(s for _, s in sorted(zip(keys, selected, strict=True), key=lambda pair: pair[0]))
    return msgspec.structs.replace(observation, selected_artifacts=ordered)


def reduce_report(
    results: Iterable[TaskResult],
    *,
    inputs: ReportInputs,
    claim_class: ClaimClass,
    non_empirical: bool,
    factorial_experiment: FactorialExperiment | None,
    eceb_version: str,
    disclosure_check: DisclosureCheck,
    uncertainty: UncertaintyMode = "bootstrap",
) -> Report:
    """Fold per-task results, in any order, into the report.

    ``uncertainty`` ``"bootstrap"`` estimates the summary's intervals,
    seeded from ``inputs.run_digest``; ``"none"`` states that uncertainty was
    not estimated (the tasks then carry no interval either). Raises
    ValueError when two results name the same task (a shard delivered twice
    must never count twice).
    """
    tasks = sorted(results, key=lambda r: r.task_id)
    for previous, current in itertools.pairwise(tasks):
        if previous.task_id == current.task_id:
            raise ValueError(f"task {current.task_id!r} was evaluated twice")
    estimate = bootstrap_uncertainty(inputs.run_digest) if uncertainty == "bootstrap" else NOT_ESTIMATED
    summary = summarize(tasks, estimate, inputs.run_digest)
    local = any(g.local_prompt_tokens is not None for t in tasks for g in t.groups)
    return Report(
        schema=REPORT_SCHEMA,
        eceb_version=eceb_version,
        claim_class=claim_class,
        non_empirical=non_empirical,
        factorial_experiment=_sorted_factors(factorial_experiment),
        inputs=inputs,
        disclosure_check=disclosure_check,
        summary=summary,
        tasks=tuple(tasks),
        uncertainty=estimate,
        token_counts=TokenCounts(local="reported_separately" if local else "absent"),
    )


def summarize(tasks: Sequence[TaskResult], uncertainty: Uncertainty = NOT_ESTIMATED, run_digest: str = "") -> Summary:
    """The aggregate figures of ``tasks`` (ECEB-0.1 §12): passing and total
    counts, floored mean savings over the passing tasks that have them, and
    (``uncertainty`` a bootstrap) their intervals, seeded from ``run_digest``
    (ECEB-0.1 §16). ``tasks`` in task id order."""
    passing = [t for t in tasks if t.passed]
    token = [t.token_savings_bps for t in passing if t.token_savings_bps is not None]
    cost = [t.cost_savings_bps for t in passing if t.cost_savings_bps is not None]
    estimated = uncertainty.method == "bootstrap_percentile"
    return Summary(
        passing_tasks=len(passing),
        total_tasks=len(tasks),
        mean_token_savings_bps=sum(token) // len(token) if token else None,
        mean_cost_savings_bps=sum(cost) // len(cost) if cost else None,
        cost_savings_tasks=len(cost),
        token_savings_interval_bps=mean_interval(summary_seed(run_digest, "token"), token) if estimated else None,
        cost_savings_interval_bps=mean_interval(summary_seed(run_digest, "cost"), cost) if estimated else None,
    )


_PASSING_FIGURES: Final = ("minimum_viable_budget", "compiled_prompt_tokens", "token_savings_bps")
_SAVINGS_FIGURES: Final = (
    "token_savings_bps",
    "cost_savings_bps",
    "token_savings_interval_bps",
    "cost_savings_interval_bps",
)
"""What only a passing task has."""
"""What every passing task has (the report's shape gives it to every task evaluated)."""


def report_problems(report: Report, file: str) -> list[Problem]:  # noqa: C901, PLR0912 - one check per self-contradiction a report may hold (§12), each independent
    """What makes a decoded report contradict itself, as problems of
    ``file``: a task id given twice (``tasks[i]``, ``task_id``), a passing
    task without its minimum viable budget, compiled tokens or token
    savings, a failing task with savings (they are given only for a passing
    task), a baseline composition that contradicts itself
    (``baseline_composition.<field>``), and each summary figure that is
    not what its tasks make (``summary``, the field). Empty for a report
    eceb wrote."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, task in enumerate(report.tasks):
        record = f"tasks[{index}]"
        problems.extend(_composition_problems(task, file, record))
        if task.task_id in seen:
            message = f"task {task.task_id!r} appears more than once"
            problems.append(Problem(file=file, record=record, field="task_id", message=message))
        seen.add(task.task_id)
        if task.passed:
            for name in _PASSING_FIGURES:
                if getattr(task, name) is None:
                    message = f"task {task.task_id!r} passes but has no {name.replace('_', ' ')}"
                    problems.append(Problem(file=file, record=record, field=name, message=message))
            if report.uncertainty.method == "not_estimated":
                for name in _SAVINGS_FIGURES[2:]:
                    if getattr(task, name) is not None:
                        message = (
                            f"task {task.task_id!r} has a {name.replace('_', ' ')}, but uncertainty was not estimated"
                        )
                        problems.append(Problem(file=file, record=record, field=name, message=message))
        else:
            for name in _SAVINGS_FIGURES:
                if getattr(task, name) is not None:
                    message = (
                        f"task {task.task_id!r} fails but has {name.replace('_', ' ')} (given only for a passing task)"
                    )
                    problems.append(Problem(file=file, record=record, field=name, message=message))
    estimate = report.uncertainty
    if estimate.method == "bootstrap_percentile" and estimate != bootstrap_uncertainty(report.inputs.run_digest):
        message = "is not the bootstrap eceb estimates from the run digest (resamples, confidence or seed differ)"
        problems.append(Problem(file=file, record="uncertainty", field="seed", message=message))
    if not problems:
        expected = summarize(report.tasks, report.uncertainty, report.inputs.run_digest)
        for name in Summary.__struct_fields__:
            said, made = getattr(report.summary, name), getattr(expected, name)
            if said != made:
                message = f"says {said}, but its tasks make {made}"
                problems.append(Problem(file=file, record="summary", field=name, message=message))
    return problems


def _composition_problems(task: TaskResult, file: str, record: str) -> list[Problem]:
    """What makes a task's baseline composition contradict itself, each
    naming its field (``baseline_composition.<name>``): a count of selected
    artifacts above the selection's or the task's, bytes above the
    selection's, a share that is not what its figures make, a selection
    without a repetition."""
    c = task.baseline_composition
    if c is None:
        return []
    found: list[tuple[str, str]] = []
    for name in ("selected_required", "selected_not_permitted"):
        if getattr(c, name) > c.selected_artifacts:
            found.append((name, f"{getattr(c, name)} exceeds the {c.selected_artifacts} artifact(s) selected"))
    if c.selected_required > c.required_artifacts:
        found.append(("selected_required", f"{c.selected_required} exceeds the {c.required_artifacts} required"))
    if c.selected_required_bytes > c.selected_bytes:
        found.append(
            ("selected_required_bytes", f"{c.selected_required_bytes} exceeds the {c.selected_bytes} selected")
        )
    made = ratio_bps(c.selected_required_bytes, c.selected_bytes) if c.selected_bytes else None
    if c.required_bytes_share_bps != made:
        found.append(("required_bytes_share_bps", f"says {c.required_bytes_share_bps}, but its figures make {made}"))
    share = c.permitted_bytes_selected_bps
    if (share is None) != (c.permitted_bytes == 0) or (share is not None and not 0 <= share <= BPS):
        found.append(("permitted_bytes_selected_bps", f"{share} is no share of {c.permitted_bytes} permitted bytes"))
    if c.repetition is None and (c.selected_artifacts or c.repetitions_differ):
        found.append(("repetition", "is null (no baseline observation), but a selection is described"))
    return [
        Problem(file=file, record=record, field=f"baseline_composition.{name}", message=f"task {task.task_id!r}: {m}")
        for name, m in found
    ]


def encode_report(report: Report) -> bytes:
    """The report's bytes: canonical JSON (RFC 8785) and a final newline."""
    return canonical_json(report) + b"\n"
