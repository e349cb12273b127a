"""A run's evaluation cut into shards (ECEB-0.1 §8-§15): the plan, the map
step over any range of tasks, and the reduce into the report.

:func:`plan_evaluation` cuts the tasks (benchmark and run, sorted by id) into
shards balanced by observations; :func:`evaluate_tasks_of_run` decodes each
task's records, checks them, evaluates the task and digests its records;
:func:`reduce_evaluation` folds the outcomes of every shard, in any order,
into one report, the same bytes whatever the shard size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Final

import msgspec

from eceb_worker.core.planning import cut_ranges
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import Benchmark, Task, task_root
from eceb_worker.families.eceb.consistency import task_record_problems
from eceb_worker.families.eceb.report import Report, ReportInputs, RunDigester, reduce_report, task_records_digest
from eceb_worker.families.eceb.run_index import IndexedRun, decode_task_evidence
from eceb_worker.families.eceb.tasks import TaskResult, evaluate_task

__all__ = [
    "DEFAULT_SHARD_OBSERVATIONS",
    "EvaluationShard",
    "TaskOutcome",
    "evaluate_tasks_of_run",
    "evaluation_task_ids",
    "plan_evaluation",
    "problem_order",
    "record_problems_of_run",
    "reduce_evaluation",
]

DEFAULT_SHARD_OBSERVATIONS: Final = 200_000
"""Default size of one evaluation shard, in observations: about two seconds of
decoding, checking and gating on one core (see docs/PERFORMANCE.md)."""


class EvaluationShard(msgspec.Struct, frozen=True, kw_only=True):
    """A contiguous range of task ids (sorted, :func:`evaluation_task_ids`) to evaluate together.

    Fields:
        index: 0-based position of the shard in its plan.
        start: index of the first task id; ``end``: one past the last.
        observations: observations the shard decodes and gates.
    """

    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=0)]
    observations: Annotated[int, msgspec.Meta(ge=0)]


def evaluation_task_ids(benchmark: Benchmark, run: IndexedRun) -> list[str]:
    """Every task id to evaluate, sorted: the benchmark's and the run's
    (:func:`plan_evaluation` cuts this list)."""
    return sorted({t.task_id for t in benchmark.tasks} | run.task_ids)


def plan_evaluation(
    observation_counts: list[int], *, shard_observations: int = DEFAULT_SHARD_OBSERVATIONS
) -> list[EvaluationShard]:
    """Cut tasks (given by their observation counts, in task id order) into
    shards balanced by observations; a task never spans two shards (its
    groups are evaluated together) and counts at least 1 (a task without
    observations is still evaluated). Raises ValueError for a non-positive
    ``shard_observations``.
    """
    costs = [max(count, 1) for count in observation_counts]
    ranges = cut_ranges(costs, shard_observations, name="shard_observations")
    return [
        EvaluationShard(index=index, start=start, end=end, observations=sum(observation_counts[start:end]))
        for index, (start, end) in enumerate(ranges)
    ]


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


def record_problems_of_run(run: IndexedRun, benchmark: Benchmark | None) -> list[Problem]:
    """Every problem of every record of ``run`` (against ``benchmark`` when
    given), in record order."""
    tasks = {t.task_id: t for t in benchmark.tasks} if benchmark is not None else {}
    outcomes = evaluate_tasks_of_run(sorted(run.task_ids), run, tasks, None)
    return sorted((p for o in outcomes for p in o.problems), key=problem_order)


def reduce_evaluation(
    outcomes: Iterable[TaskOutcome],
    *,
    benchmark: Benchmark,
    run: IndexedRun,
    corpus_root: str,
    artifact_count: int,
    eceb_version: str,
) -> Report:
    """Fold the outcomes of every shard, in any order, into the report of
    ``run`` against ``benchmark``, over a verified corpus of
    ``artifact_count`` artifacts with ``corpus_root``.

    Only the tasks the run has records for enter the run digest. Raises
    :class:`~eceb_worker.errors.InputError` with every problem of every
    record, in record order, and ValueError when a task comes twice (a shard
    delivered twice must never count twice).
    """
    collected = list(outcomes)
    problems = sorted((p for o in collected for p in o.problems), key=problem_order)
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
    )
