"""A run's evaluation cut into shards (ECEB-0.1 §8-§15): the map step over
any range of tasks, and the reduce into the report (the plan is
:mod:`eceb_worker.families.eceb.planning`).

:func:`evaluate_tasks_of_run` decodes each
task's records, checks them, evaluates the task and digests its records;
:func:`reduce_evaluation` folds the outcomes of every shard, in any order,
into one report, the same bytes whatever the shard size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import Benchmark, Task, task_root
from eceb_worker.families.eceb.composition import registry_totals
from eceb_worker.families.eceb.consistency import task_record_problems
from eceb_worker.families.eceb.disclosure import DisclosureCheck, TaskFindings
from eceb_worker.families.eceb.report import Report, ReportInputs, RunDigester, reduce_report, task_records_digest
from eceb_worker.families.eceb.run_index import IndexedRun, decode_task_evidence
from eceb_worker.families.eceb.tasks import evaluate_task
from eceb_worker.families.eceb.uncertainty import UncertaintyMode, task_seed
from eceb_worker.families.eceb.verdicts import TaskOutcome

__all__ = [
    "evaluate_tasks_of_run",
    "record_problems_of_run",
    "reduce_evaluation",
]


def evaluate_tasks_of_run(
    task_ids: Iterable[str],
    indexed: IndexedRun,
    tasks: Mapping[str, Task] | None,
    artifacts: Mapping[str, Artifact] | None,
    findings: Mapping[str, TaskFindings] | None = None,
    *,
    uncertainty: UncertaintyMode = "bootstrap",
) -> list[TaskOutcome]:
    """Decode, check, digest and evaluate each named task of ``indexed``.

    ``tasks`` is the benchmark's tasks by id (``None``: no benchmark, check
    the records alone); ``artifacts`` the registry by artifact id (``None``:
    check only, do not evaluate): every artifact, or a
    :class:`~eceb_worker.families.eceb.composition.RegistryArtifacts` of
    those the run and benchmark refer to with the whole registry's totals
    (what a task permits, for its baseline's composition, ECEB-0.1 §7). A
    task id of the run that the benchmark lacks yields problems, never a
    result, even when the benchmark has no task at all. Evaluation is skipped for a task with problems: its report
    would be discarded anyway.

    ``findings`` holds the disclosures found in each task's answers, by
    task id, for the disclosure gate (ECEB-0.1 §17; a task it lacks
    discloses nothing; ``None``: the check is off).
    ``uncertainty`` ``"bootstrap"`` gives each passing task its savings
    intervals, seeded from its id and records digest
    (:func:`~eceb_worker.families.eceb.uncertainty.task_seed`), so they do
    not depend on the shard that evaluates it; ``"none"`` leaves them not
    estimated.
    """
    header = indexed.header
    configurations = {c.configuration_id: c for c in header.configurations}
    totals = registry_totals(artifacts) if artifacts is not None else None
    outcomes = []
    for task_id in task_ids:
        evidence, observations, auxiliary, problems = decode_task_evidence(indexed, task_id)
        task = tasks.get(task_id) if tasks is not None else None
        problems.extend(
            task_record_problems(
                task_id,
                task,
                observations,
                auxiliary,
                configurations,
                file=indexed.file,
                benchmark_known=tasks is not None,
            )
        )
        result = None
        records_digest = task_records_digest(evidence.observations, evidence.auxiliary_costs)
        if task is not None and artifacts is not None and not problems:
            disclosure = None if findings is None else findings.get(task_id) or TaskFindings()
            result = evaluate_task(
                task,
                evidence,
                artifacts=artifacts,
                configurations=configurations,
                factorial=header.factorial_experiment,
                disclosure=disclosure,
                bootstrap_seed=task_seed(task_id, records_digest) if uncertainty == "bootstrap" else None,
                totals=totals,
            )
        outcomes.append(
            TaskOutcome(task_id=task_id, result=result, records_digest=records_digest, problems=tuple(problems))
        )
    return outcomes


def _in_record_order(outcomes: Iterable[TaskOutcome]) -> list[Problem]:
    """Every problem of ``outcomes``, in record order (by
    :attr:`~eceb_worker.families.eceb.verdicts.RecordProblem.order`)."""
    located = sorted((p for o in outcomes for p in o.problems), key=lambda p: p.order)
    return [p.problem for p in located]


def record_problems_of_run(run: IndexedRun, benchmark: Benchmark | None) -> list[Problem]:
    """Every problem of every record of ``run`` (against ``benchmark`` when
    given), in record order."""
    tasks = {t.task_id: t for t in benchmark.tasks} if benchmark is not None else None
    outcomes = evaluate_tasks_of_run(sorted(run.task_ids), run, tasks, None)
    return _in_record_order(outcomes)


def reduce_evaluation(
    outcomes: Iterable[TaskOutcome],
    *,
    benchmark: Benchmark,
    run: IndexedRun,
    corpus_root: str,
    artifact_count: int,
    eceb_version: str,
    disclosure_check: DisclosureCheck,
    uncertainty: UncertaintyMode = "bootstrap",
) -> Report:
    """Fold the outcomes of every shard, in any order, into the report of
    ``run`` against ``benchmark``, over a verified corpus of
    ``artifact_count`` artifacts with ``corpus_root``, answers checked for
    disclosures as ``disclosure_check`` says; ``uncertainty`` as the map
    step was given it (:func:`evaluate_tasks_of_run`).

    Only the tasks the run has records for enter the run digest. Raises
    :class:`~eceb_worker.errors.InputError` with every problem of every
    record, in record order, and ValueError when a task comes twice (a shard
    delivered twice must never count twice).
    """
    collected = list(outcomes)
    problems = _in_record_order(collected)
    if problems:
        raise InputError(problems)
    header = run.header
    recorded = run.task_ids
    digester = RunDigester(header)
    for outcome in collected:
        if outcome.task_id in recorded:
            digester.add_task(outcome.task_id, outcome.records_digest)
    inputs = ReportInputs(
        benchmark_id=benchmark.benchmark_id,
        task_root=task_root(benchmark.tasks),
        corpus_root=corpus_root,
        artifact_count=artifact_count,
        run_id=header.run_id,
        run_digest=digester.hexdigest(),
    )
    return reduce_report(
        (o.result for o in collected if o.result is not None),
        inputs=inputs,
        claim_class=header.claim_class,
        non_empirical=header.non_empirical,
        factorial_experiment=header.factorial_experiment,
        eceb_version=eceb_version,
        disclosure_check=disclosure_check,
        uncertainty=uncertainty,
    )
