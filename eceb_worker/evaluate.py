"""The evaluation job (ECEB-0.1): load and check a benchmark, its registry and
a run; verify the corpus; evaluate every task; reduce to one report.

Wires the pure engine to storage and an executor. Nothing is written here:
the caller writes the report (atomically).
"""

from __future__ import annotations

import io
import mmap
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import msgspec

from eceb_worker import __version__
from eceb_worker.corpus import load_registry, verify_corpus
from eceb_worker.engine.benchmark import Benchmark, task_root
from eceb_worker.engine.checks import benchmark_problems, run_header_problems
from eceb_worker.engine.documents import decode_document
from eceb_worker.engine.plan import DEFAULT_SHARD_OBSERVATIONS, plan_evaluation
from eceb_worker.engine.registry import Registry, read_registry
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
    "InputReader",
    "Location",
    "check_benchmark",
    "check_run_records",
    "evaluate",
    "evaluate_verified",
    "evaluation_task_ids",
    "reduce_outcomes",
    "load_benchmark",
    "load_inputs",
    "load_run",
]


class EvaluationInputs(msgspec.Struct, frozen=True, kw_only=True):
    """A benchmark, its registry and a run (header checked, records indexed)."""

    benchmark: Benchmark
    registry: Registry
    run: IndexedRun


Location = Path | str
"""Where an input is: a local path, or an ``s3://bucket/key`` URL (a string)."""


class InputReader:
    """Reads inputs from local files or S3-compatible storage.

    A location is a :class:`~pathlib.Path`, a string path, or an
    ``s3://bucket/key`` URL (read with ``endpoint_url``). The ETag of every
    object read is kept in :attr:`etags`; with ``expected`` ETags, only those
    versions are accepted (a job's workers read exactly what its coordinator
    checked). A missing or unreadable input is an :class:`InputError` naming
    it; storage that cannot be used at all, a ``StorageError``.
    """

    def __init__(self, endpoint_url: str | None = None, *, expected: Mapping[str, str] | None = None) -> None:
        self.endpoint_url = endpoint_url
        self.expected = dict(expected or {})
        self.etags: dict[str, str] = {}
        self._store: object = None

    @staticmethod
    def normalize(location: Location) -> Location:
        """An ``s3://`` URL as given, anything else as a :class:`~pathlib.Path`."""
        from eceb_worker.storage.objects import is_s3_url

        return location if is_s3_url(location) else Path(location)

    def read(self, location: Location, *, large: bool = False) -> bytes | mmap.mmap:
        """The input's bytes (a local ``large`` file is memory-mapped)."""
        location = self.normalize(location)
        if isinstance(location, Path):
            return map_input(location) if large else read_input(location)
        from eceb_worker.storage.objects import ObjectStore

        if self._store is None:
            self._store = ObjectStore(self.endpoint_url)
        assert isinstance(self._store, ObjectStore)
        data, etag = self._store.get(location, etag=self.expected.get(location))
        self.etags[location] = etag
        return data

    def sibling(self, location: Location, relative: str) -> Location:
        """What ``relative`` names beside ``location`` (a file's directory, an object's key prefix)."""
        location = self.normalize(location)
        if isinstance(location, Path):
            return location.parent / relative
        from eceb_worker.storage.objects import object_sibling

        try:
            return object_sibling(location, relative)
        except ValueError as exc:
            raise InputError([Problem(file=location, field="registry.path", message=str(exc))]) from None


def load_benchmark(path: Location, reader: InputReader | None = None) -> Benchmark:
    """Decode a benchmark file; raises :class:`InputError` with every schema problem."""
    reader = reader or InputReader()
    data = reader.read(path)
    assert isinstance(data, bytes)
    return decode_document(data, Benchmark, "benchmark-v0.1.json", file=str(path))


def load_run(path: Location, reader: InputReader | None = None) -> IndexedRun:
    """Decode a run file's header and index its records by task (a local file
    is memory-mapped; records are decoded later, task by task). Raises
    :class:`InputError` with every problem of the header and, if the header
    or the arrays' shape is invalid, of every record.
    """
    reader = reader or InputReader()
    return index_run(reader.read(path, large=True), file=str(path))


def _load_registry(location: Location, reader: InputReader) -> Registry:
    location = reader.normalize(location)
    if isinstance(location, Path):
        return load_registry(location)
    data = reader.read(location)
    return read_registry(io.BytesIO(bytes(data)), location)


def registry_path(benchmark: Benchmark, benchmark_path: Path) -> Path:
    """The registry file a benchmark names, relative to the benchmark's directory."""
    return benchmark_path.parent / benchmark.registry.path


def _benchmark_with_registry(
    path: Location, problems: list[Problem], reader: InputReader
) -> tuple[Benchmark | None, Registry | None]:
    """Load a benchmark and its registry, appending every problem to ``problems``."""
    try:
        benchmark = load_benchmark(path, reader)
    except InputError as exc:
        problems.extend(exc.problems)
        # The registry can still be checked when its path can be read leniently.
        try:
            value, _ = decode_lenient(bytes(reader.read(path)))
        except InputError:
            return None, None
        reference = value.get("registry") if isinstance(value, dict) else None
        named = reference.get("path") if isinstance(reference, dict) else None
        if isinstance(named, str) and named:
            try:
                _load_registry(reader.sibling(path, named), reader)
            except InputError as registry_exc:
                problems.extend(registry_exc.problems)
        return None, None
    try:
        registry = _load_registry(reader.sibling(path, benchmark.registry.path), reader)
    except InputError as exc:
        problems.extend(exc.problems)
        problems.extend(benchmark_problems(benchmark, None, None, file=str(path)))
        return benchmark, None
    artifacts = {a.artifact_id: a for a in registry.artifacts}
    problems.extend(benchmark_problems(benchmark, artifacts, registry.corpus_root, file=str(path)))
    return benchmark, registry


def check_benchmark(path: Location, reader: InputReader | None = None) -> tuple[Benchmark, Registry]:
    """Load a benchmark and its registry and check them together (ECEB-0.1 §6).

    Raises :class:`InputError` holding every problem of both files.
    """
    problems: list[Problem] = []
    benchmark, registry = _benchmark_with_registry(path, problems, reader or InputReader())
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None
    return benchmark, registry


def load_inputs(benchmark_path: Location, run_path: Location, reader: InputReader | None = None) -> EvaluationInputs:
    """Load the benchmark, its registry and the run's header, and check them together.

    Each may be a local path or an ``s3://bucket/key`` URL (read by
    ``reader``); the registry's path in the benchmark is relative to the
    benchmark's directory or key prefix. Raises :class:`InputError` holding every problem of the three files found
    so far (each problem names its file), before any corpus byte is read. The
    run's records are checked while they are evaluated (:func:`evaluate`).
    """
    reader = reader or InputReader()
    problems: list[Problem] = []
    benchmark, registry = _benchmark_with_registry(benchmark_path, problems, reader)
    run = None
    try:
        run = load_run(run_path, reader)
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


def evaluation_task_ids(inputs: EvaluationInputs) -> list[str]:
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


def reduce_outcomes(inputs: EvaluationInputs, outcomes: Iterable[TaskOutcome], artifact_count: int) -> Report:
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
