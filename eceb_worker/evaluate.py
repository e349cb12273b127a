"""The evaluation job (ECEB-0.1): verify the corpus, evaluate every task,
reduce to one report.

Wires the pure engine to storage and an executor; the inputs come checked
from :mod:`eceb_worker.inputs`. Nothing is written here: the caller writes
the report (atomically).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from eceb_worker import __version__
from eceb_worker.corpus import verify_corpus
from eceb_worker.engine.benchmark import task_root
from eceb_worker.engine.plan import (
    DEFAULT_SHARD_OBSERVATIONS,
    plan_evaluation,
)
from eceb_worker.engine.report import Report, ReportInputs
from eceb_worker.engine.run_evaluation import TaskOutcome, evaluate_tasks_of_run, reduce_evaluation
from eceb_worker.engine.verification import ShardVerification, VerificationReport
from eceb_worker.errors import VerificationError
from eceb_worker.executors.inprocess import ShardExecutor
from eceb_worker.storage import StorageSpec

if TYPE_CHECKING:
    pass

from eceb_worker.inputs import BenchmarkRun, CheckedRun, EvaluationInputs

__all__ = [
    "evaluate",
    "evaluate_verified",
    "evaluation_task_ids",
    "reduce_outcomes",
]


def evaluate(
    inputs: EvaluationInputs,
    corpus: StorageSpec,
    *,
    executor: ShardExecutor | None = None,
    shard_bytes: int | None = None,
    on_shard: Callable[[ShardVerification], object] | None = None,
) -> tuple[Report, VerificationReport]:
    """Verify the corpus (ECEB-0.1 §5), then check and evaluate every task and reduce.

    Raises :class:`VerificationError` (holding the verification report) when
    any registered artifact is missing, stale, unreadable or escapes the
    corpus; ``StorageError`` when the corpus cannot be read at all;
    :class:`InputError` with every problem of the run's records.
    """
    kwargs = {} if shard_bytes is None else {"shard_bytes": shard_bytes}
    verification = verify_corpus(inputs.registry, corpus, executor=executor, on_shard=on_shard, **kwargs)
    if not verification.ok:
        raise VerificationError(
            f"corpus verification failed: {len(verification.findings)} of {verification.artifact_count} "
            "artifacts do not match the registry",
            verification,
        )
    return evaluate_verified(inputs, verification.verified_count), verification


def evaluation_task_ids(inputs: BenchmarkRun) -> list[str]:
    """Every task id to evaluate, sorted: the benchmark's and the run's
    (:func:`~eceb_worker.engine.plan.plan_evaluation` cuts this list)."""
    return sorted({t.task_id for t in inputs.benchmark.tasks} | inputs.run.task_ids)


def evaluate_verified(
    inputs: EvaluationInputs, artifact_count: int, *, shard_observations: int = DEFAULT_SHARD_OBSERVATIONS
) -> Report:
    """Check and evaluate every task of a run whose corpus has been verified,
    and reduce the results into the report (ECEB-0.1 §8-§15).

    The tasks (benchmark and run, sorted by id) are cut into shards of about
    ``shard_observations`` observations (:func:`plan_evaluation`), each
    evaluated by :func:`evaluate_tasks_of_run` (the map step) and folded by
    :func:`reduce_evaluation`; the report does not depend on the shard size.
    ``artifact_count`` is the number of artifacts verified. Raises
    :class:`InputError` with every problem of the run's records, in record order.
    """
    run = inputs.run
    tasks = {t.task_id: t for t in inputs.benchmark.tasks}
    artifacts = {a.artifact_id: a for a in inputs.registry.artifacts}
    task_ids = evaluation_task_ids(inputs)
    counts = [len(run.observations.get(task_id, ())) for task_id in task_ids]
    outcomes: list[TaskOutcome] = []
    for shard in plan_evaluation(counts, shard_observations=shard_observations):
        outcomes.extend(evaluate_tasks_of_run(task_ids[shard.start : shard.end], run, tasks, artifacts))
    return reduce_outcomes(inputs, outcomes, artifact_count)


def reduce_outcomes(inputs: CheckedRun, outcomes: Iterable[TaskOutcome], artifact_count: int) -> Report:
    """Fold the map step's outcomes (of every shard, in any order) into the
    report; see :func:`~eceb_worker.engine.run_evaluation.reduce_evaluation`.
    Raises :class:`InputError` with every problem of the run's records.
    """
    benchmark, run = inputs.benchmark, inputs.run
    root = task_root(benchmark.tasks)

    def report_inputs(run_digest: str) -> ReportInputs:
        return ReportInputs(
            benchmark_id=benchmark.benchmark_id,
            task_root=root,
            corpus_root=inputs.corpus_root,
            artifact_count=artifact_count,
            run_id=run.header.run_id,
            run_digest=run_digest,
        )

    return reduce_evaluation(
        outcomes,
        header=run.header,
        recorded_task_ids=run.task_ids,
        inputs=report_inputs,
        eceb_version=__version__,
    )
