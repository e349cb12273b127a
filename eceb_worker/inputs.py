"""The evaluation's inputs (ECEB-0.1 §5-§7): read a benchmark, its registry
and a run, from local files or ``s3://`` objects, and check them together,
every problem of every file reported at once.

:func:`load_inputs` decodes the registry whole (``eceb evaluate``);
:func:`scan_inputs` reads it as a stream, keeping only its header, re-hash
plan and the artifacts the benchmark names (the distributed coordinator);
:func:`load_run_inputs` and :func:`load_referenced_artifacts` give an
evaluation worker the benchmark, the run and only the artifacts they refer to.
"""

from __future__ import annotations

import io
import mmap
import tempfile
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, Protocol, TypeVar

import msgspec

from eceb_worker.corpus import load_registry
from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.benchmark import Benchmark
from eceb_worker.engine.checks import benchmark_problems, run_header_problems
from eceb_worker.engine.documents import decode_document
from eceb_worker.engine.plan import (
    DEFAULT_FILE_COST_BYTES,
    DEFAULT_SHARD_BYTES,
)
from eceb_worker.engine.registry import Registry, read_registry
from eceb_worker.engine.registry_scan import RegistryScan, registry_artifacts, scan_registry
from eceb_worker.engine.run_evaluation import evaluate_tasks_of_run, problem_order
from eceb_worker.engine.run_stream import IndexedRun, index_run
from eceb_worker.engine.validation import decode_lenient
from eceb_worker.errors import InputError, Problem
from eceb_worker.files import map_input, read_input

if TYPE_CHECKING:
    from eceb_worker.storage.objects import ObjectStore

__all__ = [
    "BenchmarkRun",
    "CheckedRun",
    "EvaluationInputs",
    "InputReader",
    "Location",
    "RunInputs",
    "ScannedInputs",
    "check_benchmark",
    "check_run_records",
    "load_benchmark",
    "load_inputs",
    "load_referenced_artifacts",
    "load_run",
    "load_run_inputs",
    "referenced_artifact_ids",
    "registry_path",
    "scan_inputs",
]


class BenchmarkRun(Protocol):
    """A benchmark and a run checked together: what planning the evaluation
    needs (:func:`evaluation_task_ids`)."""

    @property
    def benchmark(self) -> Benchmark:
        """The benchmark."""

    @property
    def run(self) -> IndexedRun:
        """The run, header checked, records indexed by task."""


class CheckedRun(BenchmarkRun, Protocol):
    """A :class:`BenchmarkRun` and the corpus root of the benchmark's
    registry: what reducing the evaluation into the report needs
    (:func:`reduce_outcomes`)."""

    @property
    def corpus_root(self) -> str:
        """The registry's corpus root (ECEB-0.1 §5)."""


class EvaluationInputs(msgspec.Struct, frozen=True, kw_only=True):
    """A benchmark, its registry and a run (header checked, records indexed)."""

    benchmark: Benchmark
    registry: Registry
    run: IndexedRun

    @property
    def corpus_root(self) -> str:
        """The registry's corpus root (ECEB-0.1 §5)."""
        return self.registry.corpus_root


class ScannedInputs(msgspec.Struct, frozen=True, kw_only=True):
    """A benchmark, a run and the scan of the benchmark's registry, checked
    together as :class:`EvaluationInputs` are, without the registry's
    artifacts in memory (:func:`scan_inputs`).

    Fields:
        benchmark, run: as in :class:`EvaluationInputs`.
        registry: the registry's header, re-hash plan (byte ranges of the
            file) and the artifacts the benchmark's tasks name.
        registry_location: where the registry is (an ``s3://`` URL or a path).
    """

    benchmark: Benchmark
    run: IndexedRun
    registry: RegistryScan
    registry_location: str

    @property
    def corpus_root(self) -> str:
        """The registry's corpus root (ECEB-0.1 §5)."""
        return self.registry.corpus_root


class RunInputs(msgspec.Struct, frozen=True, kw_only=True):
    """A benchmark and a run already checked together, with the corpus root
    of the benchmark's registry (a :class:`CheckedRun`; :func:`load_run_inputs`)."""

    benchmark: Benchmark
    run: IndexedRun
    corpus_root: str


Location = Path | str
"""Where an input is: a local path, or an ``s3://bucket/key`` URL (a string)."""


class InputReader:
    """Reads inputs from local files or S3-compatible storage.

    A location is a :class:`~pathlib.Path`, a string path, or an
    ``s3://bucket/key`` URL (read with ``endpoint_url``). The ETag of every
    object read is kept in :attr:`etags`; with ``expected`` ETags, only those
    versions are accepted (a job's workers read exactly what its coordinator
    checked). A missing or unreadable input is an :class:`InputError` naming
    it; storage that cannot be used at all, a ``StorageError``. ``store`` is
    the :class:`~eceb_worker.storage.objects.ObjectStore` to read objects with
    (by default one is made on the first object read).
    """

    def __init__(
        self, endpoint_url: str | None = None, *, expected: Mapping[str, str] | None = None, store: object = None
    ) -> None:
        self.endpoint_url = endpoint_url
        self.expected = dict(expected or {})
        self.etags: dict[str, str] = {}
        self._store: object = store

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
        data, etag = self._objects().get(location, etag=self.expected.get(location))
        self.etags[location] = etag
        return data

    def _objects(self) -> ObjectStore:
        from eceb_worker.storage.objects import ObjectStore

        if self._store is None:
            self._store = ObjectStore(self.endpoint_url)
        assert isinstance(self._store, ObjectStore)
        return self._store

    def open(self, location: Location) -> IO[bytes]:
        """A stream of the input's bytes, read as consumed (never held whole).

        An object is pinned to its expected ETag, else to the one first
        seen, so that opening it again gives the same bytes. Raises
        :class:`InputError` naming a missing, unreadable or changed input,
        ``StorageError`` when the storage cannot be used.
        """
        location = self.normalize(location)
        if isinstance(location, Path):
            try:
                return location.open("rb")
            except OSError as exc:
                raise InputError([Problem(file=str(location), message=f"cannot read: {exc.strerror or exc}")]) from exc
        pinned = self.expected.get(location) or self.etags.get(location)
        stream, etag = self._objects().open(location, etag=pinned)
        self.etags[location] = etag
        return stream

    def read_range(self, location: Location, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the input (an object: one ranged GET,
        pinned like :meth:`open`). Raises :class:`InputError` for a missing,
        unreadable, changed or too short input, ``StorageError`` when the
        storage cannot be used."""
        location = self.normalize(location)
        if isinstance(location, Path):
            try:
                with location.open("rb") as stream:
                    stream.seek(start)
                    data = stream.read(end - start)
            except OSError as exc:
                raise InputError([Problem(file=str(location), message=f"cannot read: {exc.strerror or exc}")]) from exc
            if len(data) != end - start:
                raise InputError([Problem(file=str(location), message="changed while the job ran (it is shorter)")])
            return data
        pinned = self.expected.get(location) or self.etags.get(location)
        return self._objects().get_range(location, start, end, etag=pinned)

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


_R = TypeVar("_R")
_RegistryLoader = Callable[[Location, AbstractSet[str]], tuple[_R, str, Mapping[str, Artifact]]]
"""Loads and checks the registry at a location; returns it, its corpus root
and (at least) the artifacts whose ids are asked for, by id. Raises
:class:`InputError` with every problem of the registry."""


def _full_registry(reader: InputReader) -> _RegistryLoader[Registry]:
    def load(location: Location, _wanted: AbstractSet[str]) -> tuple[Registry, str, Mapping[str, Artifact]]:
        registry = _load_registry(location, reader)
        return registry, registry.corpus_root, {a.artifact_id: a for a in registry.artifacts}

    return load


def _scanned_registry(
    reader: InputReader, spill_dir: str, shard_bytes: int, file_cost_bytes: int
) -> _RegistryLoader[tuple[RegistryScan, str]]:
    def load(
        location: Location, wanted: AbstractSet[str]
    ) -> tuple[tuple[RegistryScan, str], str, Mapping[str, Artifact]]:
        location = reader.normalize(location)
        scan = scan_registry(
            lambda: reader.open(location),
            str(location),
            spill_dir=spill_dir,
            shard_bytes=shard_bytes,
            file_cost_bytes=file_cost_bytes,
            wanted=wanted,
        )
        return (scan, str(location)), scan.corpus_root, scan.artifacts

    return load


def _named_artifacts(benchmark: Benchmark) -> frozenset[str]:
    """Every artifact id a task of ``benchmark`` requires or denies."""
    return frozenset(a for task in benchmark.tasks for a in (*task.required_artifacts, *task.denied_artifacts))


def _benchmark_with_registry(
    path: Location, problems: list[Problem], reader: InputReader, load: _RegistryLoader[_R]
) -> tuple[Benchmark | None, _R | None, str | None]:
    """Load a benchmark and its registry (with ``load``), appending every
    problem to ``problems``; the benchmark, the registry and its corpus root."""
    try:
        benchmark = load_benchmark(path, reader)
    except InputError as exc:
        problems.extend(exc.problems)
        # The registry can still be checked when its path can be read leniently.
        try:
            value, _ = decode_lenient(bytes(reader.read(path)))
        except InputError:
            return None, None, None
        reference = value.get("registry") if isinstance(value, dict) else None
        named = reference.get("path") if isinstance(reference, dict) else None
        if isinstance(named, str) and named:
            try:
                load(reader.sibling(path, named), frozenset())
            except InputError as registry_exc:
                problems.extend(registry_exc.problems)
        return None, None, None
    try:
        registry, corpus_root, artifacts = load(
            reader.sibling(path, benchmark.registry.path), _named_artifacts(benchmark)
        )
    except InputError as exc:
        problems.extend(exc.problems)
        problems.extend(benchmark_problems(benchmark, None, None, file=str(path)))
        return benchmark, None, None
    problems.extend(benchmark_problems(benchmark, artifacts, corpus_root, file=str(path)))
    return benchmark, registry, corpus_root


def check_benchmark(path: Location, reader: InputReader | None = None) -> tuple[Benchmark, Registry]:
    """Load a benchmark and its registry and check them together (ECEB-0.1 §6).

    Raises :class:`InputError` holding every problem of both files.
    """
    problems: list[Problem] = []
    reader = reader or InputReader()
    benchmark, registry, _root = _benchmark_with_registry(path, problems, reader, _full_registry(reader))
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None
    return benchmark, registry


def _checked(
    benchmark_path: Location, run_path: Location, reader: InputReader, load: _RegistryLoader[_R]
) -> tuple[Benchmark, _R, IndexedRun]:
    """The benchmark, its registry (loaded by ``load``) and the run, checked
    together; raises :class:`InputError` with every problem of the three."""
    problems: list[Problem] = []
    benchmark, registry, corpus_root = _benchmark_with_registry(benchmark_path, problems, reader, load)
    run = None
    try:
        run = load_run(run_path, reader)
    except InputError as exc:
        problems.extend(exc.problems)
    if run is not None:
        problems.extend(run.unkeyed)
        problems.extend(run_header_problems(run.header, benchmark, corpus_root, file=str(run_path)))
    if problems and run is not None:
        # The run's records would otherwise be checked only after corpus
        # verification: report their problems now, with the others.
        problems.extend(_run_record_problems(run, benchmark))
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None and run is not None
    return benchmark, registry, run


def load_inputs(benchmark_path: Location, run_path: Location, reader: InputReader | None = None) -> EvaluationInputs:
    """Load the benchmark, its registry and the run's header, and check them together.

    Each may be a local path or an ``s3://bucket/key`` URL (read by
    ``reader``); the registry's path in the benchmark is relative to the
    benchmark's directory or key prefix. Raises :class:`InputError` holding every problem of the three files found
    so far (each problem names its file), before any corpus byte is read. The
    run's records are checked while they are evaluated (:func:`evaluate`).
    """
    reader = reader or InputReader()
    benchmark, registry, run = _checked(benchmark_path, run_path, reader, _full_registry(reader))
    return EvaluationInputs(benchmark=benchmark, registry=registry, run=run)


def scan_inputs(
    benchmark_path: Location,
    run_path: Location,
    reader: InputReader | None = None,
    *,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
    spill_dir: str | None = None,
) -> ScannedInputs:
    """:func:`load_inputs` without holding the registry: the same checks and
    the same problems (:class:`InputError`), but the registry is read as a
    stream (:func:`~eceb_worker.engine.registry_scan.scan_registry`, ECEB-0.1
    §5), keeping only its header, its re-hash plan (``shard_bytes``,
    ``file_cost_bytes``: see :func:`~eceb_worker.engine.plan.plan_rehash`;
    shards are byte ranges of the registry file, in its line order) and the
    artifacts the benchmark's tasks name. Memory does not grow with the
    registry's artifact count.

    A registry whose lines are not in corpus-root order is read twice and
    sorted in temporary files under ``spill_dir`` (by default a temporary
    directory, removed afterwards). Raises ``StorageError`` when the storage
    cannot be used.
    """
    reader = reader or InputReader()
    if spill_dir is None:
        with tempfile.TemporaryDirectory(prefix="eceb-registry-") as directory:
            return scan_inputs(
                benchmark_path,
                run_path,
                reader,
                shard_bytes=shard_bytes,
                file_cost_bytes=file_cost_bytes,
                spill_dir=directory,
            )
    load = _scanned_registry(reader, spill_dir, shard_bytes, file_cost_bytes)
    benchmark, (scan, location), run = _checked(benchmark_path, run_path, reader, load)
    return ScannedInputs(benchmark=benchmark, run=run, registry=scan, registry_location=location)


def load_run_inputs(
    benchmark_path: Location, run_path: Location, corpus_root: str, reader: InputReader | None = None
) -> RunInputs:
    """Decode a benchmark and a run that were already checked together
    (:func:`scan_inputs`), without reading the registry. ``corpus_root`` is
    the registry's, as the check found it. Raises :class:`InputError` when
    either does not decode (or changed, with ``reader`` pinning versions).
    """
    reader = reader or InputReader()
    return RunInputs(
        benchmark=load_benchmark(benchmark_path, reader), run=load_run(run_path, reader), corpus_root=corpus_root
    )


class _Selected(msgspec.Struct, frozen=True, gc=False):
    artifact_id: str


class _Selections(msgspec.Struct, frozen=True, gc=False):
    """Just the artifacts an observation selected; other fields are skipped unread."""

    selected_artifacts: tuple[_Selected, ...] = ()


_SELECTIONS: Final = msgspec.json.Decoder(_Selections)


def referenced_artifact_ids(benchmark: Benchmark, run: IndexedRun) -> set[str]:
    """Every artifact id evaluating ``run`` against ``benchmark`` can look up
    in the registry: those the tasks require or deny and those the
    observations select (ECEB-0.1 §6, §8). An observation that does not
    decode is skipped: its task has problems and is not evaluated."""
    wanted = set(_named_artifacts(benchmark))
    for items in run.observations.values():
        for _index, raw in items:
            try:
                selections = _SELECTIONS.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                continue
            wanted.update(s.artifact_id for s in selections.selected_artifacts)
    return wanted


def load_referenced_artifacts(
    benchmark_path: Location, inputs: BenchmarkRun, reader: InputReader | None = None
) -> dict[str, Artifact]:
    """The artifacts of the benchmark's registry that evaluating ``inputs``
    can look up (:func:`referenced_artifact_ids`), by id, read from a
    registry already checked (:func:`scan_inputs`) as a stream: memory holds
    those artifacts only. Raises :class:`InputError` when the registry
    cannot be read or changed (with ``reader`` pinning versions), ``StorageError``.
    """
    reader = reader or InputReader()
    location = reader.sibling(benchmark_path, inputs.benchmark.registry.path)
    with reader.open(location) as stream:
        return registry_artifacts(stream, referenced_artifact_ids(inputs.benchmark, inputs.run))


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
