"""Evaluating a whole run, task by task (ECEB-0.1 §8-§14).

:func:`evaluate_tasks_of_run` is the map step over any subset of tasks: it
decodes each task's records, checks them, evaluates the task and digests its
records. Results of any subsets, in any order, fold into one report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set

import msgspec

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.benchmark import Task
from eceb_worker.engine.checks import task_record_problems
from eceb_worker.engine.evaluation import TaskResult, evaluate_task
from eceb_worker.engine.report import Report, ReportInputs, RunDigester, reduce_report, task_records_digest
from eceb_worker.engine.run import RunHeader
from eceb_worker.engine.run_stream import IndexedRun, decode_task_evidence
from eceb_worker.errors import InputError, Problem

__all__ = ["TaskOutcome", "evaluate_tasks_of_run", "problem_order", "reduce_evaluation"]


class TaskOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What the map step produced for one task id of the run or benchmark.

    Fields:
        task_id: the task.
        result: its evaluation (``None`` when it has problems or is not a
            task of the benchmark).
        records_digest: BLAKE3 of its records (for the run digest).
        problems: every problem of its records.
    """

    task_id: str
    result: TaskResult | None
    records_digest: str
    problems: tuple[Problem, ...]


def evaluate_tasks_of_run(
    task_ids: Iterable[str],
    indexed: IndexedRun,
    tasks: Mapping[str, Task],
    artifacts: Mapping[str, Artifact] | None,
) -> list[TaskOutcome]:
    """Decode, check, digest and evaluate each named task of ``indexed``.

    ``tasks`` is the benchmark's tasks by id; ``artifacts`` the registry by
    artifact id (``None``: check only, do not evaluate). A task id of the run
    that the benchmark lacks yields problems, never a result. Evaluation is
    skipped for a task with problems: its report would be discarded anyway.
    """
    header = indexed.header
    configurations = {c.configuration_id: c for c in header.configurations}
    outcomes = []
    for task_id in task_ids:
        evidence, observations, auxiliary, problems = decode_task_evidence(indexed, task_id)
        task = tasks.get(task_id)
        problems.extend(
            task_record_problems(
                task_id,
                task,
                observations,
                auxiliary,
                configurations,
                file=indexed.file,
                benchmark_known=bool(tasks),
            )
        )
        result = None
        if task is not None and artifacts is not None and not problems:
            result = evaluate_task(
                task,
                evidence,
                artifacts=artifacts,
                configurations=configurations,
                factorial=header.factorial_experiment,
            )
        outcomes.append(
            TaskOutcome(
                task_id=task_id,
                result=result,
                records_digest=task_records_digest(evidence.observations, evidence.auxiliary_costs),
                problems=tuple(problems),
            )
        )
    return outcomes


def problem_order(problem: Problem) -> tuple[str, int, str, str]:
    """Sort key putting problems in record order (``observations[3]`` before ``observations[12]``)."""
    name, _, rest = problem.record.partition("[")
    index = int(rest.split("]")[0]) if rest[:1].isdigit() else -1
    return (name, index, problem.field, problem.message)


def reduce_evaluation(
    outcomes: Iterable[TaskOutcome],
    *,
    header: RunHeader,
    recorded_task_ids: Set[str],
    inputs: Callable[[str], ReportInputs],
    eceb_version: str,
) -> Report:
    """Fold the outcomes of every shard, in any order, into the report.

    ``recorded_task_ids`` are the tasks the run has records for (only they
    enter the run digest); ``inputs`` builds the report's inputs from the run
    digest. Raises :class:`~eceb_worker.errors.InputError` with every
    problem of every record, in record order, and ValueError when a task
    comes twice (a shard delivered twice must never count twice).
    """
    collected = list(outcomes)
    problems = sorted((p for o in collected for p in o.problems), key=problem_order)
    if problems:
        raise InputError(problems)
    digester = RunDigester(header)
    for outcome in collected:
        if outcome.task_id in recorded_task_ids:
            digester.add_task(outcome.task_id, outcome.records_digest)
    return reduce_report(
        (o.result for o in collected if o.result is not None),
        inputs=inputs(digester.hexdigest()),
        claim_class=header.claim_class,
        non_empirical=header.non_empirical,
        factorial_experiment=header.factorial_experiment,
        eceb_version=eceb_version,
    )
