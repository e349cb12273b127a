"""The evaluation job (ECEB-0.1): load and check a benchmark, its registry and
a run; verify the corpus; evaluate every task; reduce to one report.

Wires the pure engine to storage and an executor. Nothing is written here:
the caller writes the report (atomically).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from eceb_worker import __version__
from eceb_worker.corpus import load_registry, verify_corpus
from eceb_worker.engine.benchmark import Benchmark, task_root
from eceb_worker.engine.checks import benchmark_problems, run_header_problems
from eceb_worker.engine.documents import decode_document
from eceb_worker.engine.plan import DEFAULT_SHARD_OBSERVATIONS, plan_evaluation
from eceb_worker.engine.registry import Registry
from eceb_worker.engine.report import Report, ReportInputs
from eceb_worker.engine.run_evaluation import TaskOutcome, evaluate_tasks_of_run, problem_order, reduce_evaluation
from eceb_worker.engine.run_stream import IndexedRun, index_run
from eceb_worker.engine.validation import decode_lenient
from eceb_worker.engine.verification import ShardVerification, VerificationReport
from eceb_worker.errors import InputError, Problem, VerificationError
from eceb_worker.executors.inprocess import ShardExecutor
from eceb_worker.files import map_input, read_input
from eceb_worker.storage import StorageSpec

__all__ = [
    "EvaluationInputs",
    "check_benchmark",
    "check_run_records",
    "evaluate",
    "evaluate_verified",
    "load_benchmark",
    "load_inputs",
    "load_run",
]


class EvaluationInputs(msgspec.Struct, frozen=True, kw_only=True):
    """A benchmark, its registry and a run (header checked, records indexed)."""

    benchmark: Benchmark
    registry: Registry
    run: IndexedRun


def load_benchmark(path: Path) -> Benchmark:
    """Decode a benchmark file; raises :class:`InputError` with every schema problem."""
    return decode_document(read_input(path), Benchmark, "benchmark-v0.1.json", file=str(path))


def load_run(path: Path) -> IndexedRun:
    """Decode a run file's header and index its records by task (the file is
    memory-mapped; records are decoded later, task by task). Raises
    :class:`InputError` with every problem of the header and, if the header
    or the arrays' shape is invalid, of every record.
    """
    return index_run(map_input(path), file=str(path))


def registry_path(benchmark: Benchmark, benchmark_path: Path) -> Path:
    """The registry file a benchmark names, relative to the benchmark's directory."""
    return benchmark_path.parent / benchmark.registry.path


def _benchmark_with_registry(path: Path, problems: list[Problem]) -> tuple[Benchmark | None, Registry | None]:
    """Load a benchmark and its registry, appending every problem to ``problems``."""
    try:
        benchmark = load_benchmark(path)
    except InputError as exc:
        problems.extend(exc.problems)
        # The registry can still be checked when its path can be read leniently.
        value, _ = decode_lenient(read_input(path))
        reference = value.get("registry") if isinstance(value, dict) else None
        named = reference.get("path") if isinstance(reference, dict) else None
        if isinstance(named, str) and named:
            try:
                load_registry(path.parent / named)
            except InputError as registry_exc:
                problems.extend(registry_exc.problems)
        return None, None
    try:
        registry = load_registry(registry_path(benchmark, path))
    except InputError as exc:
        problems.extend(exc.problems)
        problems.extend(benchmark_problems(benchmark, None, None, file=str(path)))
        return benchmark, None
    artifacts = {a.artifact_id: a for a in registry.artifacts}
    problems.extend(benchmark_problems(benchmark, artifacts, registry.corpus_root, file=str(path)))
    return benchmark, registry


def check_benchmark(path: Path) -> tuple[Benchmark, Registry]:
    """Load a benchmark and its registry and check them together (ECEB-0.1 §6).

    Raises :class:`InputError` holding every problem of both files.
    """
    problems: list[Problem] = []
    benchmark, registry = _benchmark_with_registry(path, problems)
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None
    return benchmark, registry


def load_inputs(benchmark_path: Path, run_path: Path) -> EvaluationInputs:
    """Load the benchmark, its registry and the run's header, and check them together.

    Raises :class:`InputError` holding every problem of the three files found
    so far (each problem names its file), before any corpus byte is read. The
    run's records are checked while they are evaluated (:func:`evaluate`).
    """
    problems: list[Problem] = []
    benchmark, registry = _benchmark_with_registry(benchmark_path, problems)
    run = None
    try:
        run = load_run(run_path)
    except InputError as exc:
        problems.extend(exc.problems)
    if run is not None:
        problems.extend(run.unkeyed)
        problems.extend(
            run_header_problems(run.header, benchmark, registry.corpus_root if registry else None, file=str(run_path))
        )
    if problems and run is not None:
        # The run's records would otherwise be checked only after corpus
        # verification: report their problems now, with the others.
        problems.extend(_run_record_problems(run, benchmark))
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None and run is not None
    return EvaluationInputs(benchmark=benchmark, registry=registry, run=run)


def _run_record_problems(run: IndexedRun, benchmark: Benchmark | None) -> list[Problem]:
    tasks = {t.task_id: t for t in benchmark.tasks} if benchmark is not None else {}
    outcomes = evaluate_tasks_of_run(sorted(run.task_ids), run, tasks, None)
    return sorted((p for o in outcomes for p in o.problems), key=problem_order)


def check_run_records(run: IndexedRun, benchmark: Benchmark | None = None) -> None:
    """Check every record of a run (against ``benchmark`` when given).

    Raises :class:`InputError` holding every problem, in record order.
    """
    problems = _run_record_problems(run, benchmark)
    if problems:
        raise InputError(problems)


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
    benchmark, run = inputs.benchmark, inputs.run
    tasks = {t.task_id: t for t in benchmark.tasks}
    artifacts = {a.artifact_id: a for a in inputs.registry.artifacts}
    task_ids = sorted(tasks.keys() | run.task_ids)
    counts = [len(run.observations.get(task_id, ())) for task_id in task_ids]
    outcomes: list[TaskOutcome] = []
    for shard in plan_evaluation(counts, shard_observations=shard_observations):
        outcomes.extend(evaluate_tasks_of_run(task_ids[shard.start : shard.end], run, tasks, artifacts))
    root = task_root(benchmark.tasks)

    def report_inputs(run_digest: str) -> ReportInputs:
        return ReportInputs(
            benchmark_id=benchmark.benchmark_id,
            task_root=root,
            corpus_root=inputs.registry.corpus_root,
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
