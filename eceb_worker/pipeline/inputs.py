"""A job's inputs (ECEB-0.1 §5-§8): a registry, a benchmark and its
registry, a run, read from local files or ``s3://`` objects
(:mod:`eceb_worker.io.locations`) and checked together, every problem of
every file reported at once (:class:`~eceb_worker.errors.InputError`).

The registry is always read as a stream (:func:`~eceb_worker.corpus.registry.scan_registry`,
sorting in temporary files when its lines are not in corpus-root order);
what it keeps of it is the caller's choice: every artifact (``eceb
evaluate``, ``eceb corpus verify``, which run in one process), or only
those a benchmark names (the distributed coordinator, whose memory must not
grow with the registry).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Final

import msgspec

from eceb_worker.core.decoding import decode_document
from eceb_worker.core.lenient import decode_lenient
from eceb_worker.core.paths import path_problems
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.checked_lines import registry_artifacts
from eceb_worker.corpus.lines import artifact_blocks, decode_block
from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, DEFAULT_SHARD_BYTES, RehashShard
from eceb_worker.corpus.registry import KEEP_ALL, Registry, scan_registry
from eceb_worker.corpus.sorting import MemorySorter, Sorter
from eceb_worker.documents import HEAD_BYTES, wrong_kind
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.composition import RegistryArtifacts, RegistryTally
from eceb_worker.families.eceb.consistency import benchmark_problems, run_header_problems
from eceb_worker.families.eceb.partial import benchmark_parts, parts_problems
from eceb_worker.families.eceb.run_index import IndexedRun, index_run
from eceb_worker.families.eceb.shards import record_problems_of_run
from eceb_worker.io.locations import Location, Locator

if TYPE_CHECKING:
    from eceb_worker.corpus.rules import RulesFile

__all__ = [
    "WAITING_FOR_BENCHMARK",
    "CheckedInputs",
    "check_benchmark",
    "check_inputs",
    "check_run_records",
    "load_benchmark",
    "load_referenced_artifacts",
    "load_registry",
    "load_run",
    "referenced_artifact_ids",
    "registry_location",
]

Where = str | os.PathLike[str]
"""A local path, or an ``s3://bucket/key`` URL."""


class CheckedInputs(msgspec.Struct, frozen=True, kw_only=True):
    """A benchmark, its registry and a run, checked together.

    Fields:
        benchmark: the benchmark.
        registry: its registry: header, re-hash plan, and the artifacts kept
            (all, or those the benchmark's tasks name).
        registry_location: where the registry is (a path or an ``s3://`` URL).
        run: the run, header checked, records indexed by task (checked as
            they are evaluated).
    """

    benchmark: Benchmark
    registry: Registry
    registry_location: str
    run: IndexedRun

    @property
    def corpus_root(self) -> str:
        """The registry's corpus root (ECEB-0.1 §5)."""
        return self.registry.corpus_root


def load_registry(
    where: Where | Location,
    locator: Locator | None = None,
    *,
    keep: AbstractSet[str] | None = KEEP_ALL,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
    on_shards: Callable[[Sequence[RehashShard]], object] | None = None,
) -> Registry:
    """Read and check a registry (ECEB-0.1 §5) as a stream, keeping the
    artifacts ``keep`` names (by default all) and its re-hash plan
    (``shard_bytes``, ``file_cost_bytes``; the first shards given to
    ``on_shards`` as they close, when not kept whole: see
    :func:`~eceb_worker.corpus.registry.scan_registry`). Kept whole, its sorts (a
    registry not in corpus-root order) stay in memory; otherwise they spill
    to temporary files and the plan's ranges carry their digests, so that
    memory does not grow with the registry. Raises :class:`InputError` with
    every problem (only one for a file of another kind, whose first block
    names it), ``StorageError`` when the storage cannot be used."""
    location = _located(where, locator)
    held = keep is KEEP_ALL
    new_sorter: Callable[[], Sorter] = MemorySorter
    if not held:  # held whole, the registry is in memory anyway: so can its sorts be
        from eceb_worker.io.spill import ExternalSorter  # its temporary files: only then

        new_sorter = ExternalSorter
    return scan_registry(
        location.chunks,
        location.name,
        keep=keep,
        shard_bytes=shard_bytes,
        file_cost_bytes=file_cost_bytes,
        new_sorter=new_sorter,
        digest_ranges=not held,
        other_kind=lambda head: wrong_kind(location.name, head, "registry"),
        on_shards=None if held else on_shards,
    )


def _located(where: Where | Location, locator: Locator | None) -> Location:
    if isinstance(where, (str, os.PathLike)):
        return (locator or Locator()).locate(where)
    return where


def _of_kind(data: bytes, name: str, expected: str, error: InputError) -> InputError:
    """``error`` (the problems of file ``name``, read as a ``expected``), or
    the one problem saying the file is of another kind when it names one."""
    problem = wrong_kind(name, data, expected)
    return InputError([problem]) if problem is not None else error


def load_rules(data: bytes, name: str) -> RulesFile:
    """Decode rules file ``name`` (``data``: its bytes; see
    :func:`~eceb_worker.corpus.rules.parse_rules`); raises
    :class:`InputError` with every problem, or the one saying the file is
    another kind of eceb file (a benchmark given as rules)."""
    from eceb_worker.corpus.rules import parse_rules  # glob matching: only rules need it

    try:
        return parse_rules(data, name)
    except InputError as error:
        raise _of_kind(data, name, "rules", error) from None


def load_benchmark(where: Where, locator: Locator | None = None) -> Benchmark:
    """Decode a benchmark file; raises :class:`InputError` with every schema
    problem, or the one problem of a file of another kind."""
    location = _located(where, locator)
    data = location.read()
    try:
        return decode_document(data, Benchmark, file=location.name)
    except InputError as exc:
        raise _of_kind(data, location.name, "benchmark", exc) from None


def load_run(where: Where, locator: Locator | None = None) -> IndexedRun:
    """Decode a run file's header and index its records by task (a local file
    is memory-mapped; records are decoded later, task by task). Raises
    :class:`InputError` with every problem of the header and, if the header
    or the arrays' shape is invalid, of every record; or the one problem of
    a file of another kind (its first bytes name it).
    """
    location = _located(where, locator)
    data = location.map()
    try:
        return index_run(data, file=location.name)
    except InputError as exc:
        raise _of_kind(bytes(data[:HEAD_BYTES]), location.name, "run", exc) from None


def registry_location(benchmark_location: Location, relative: str) -> Location:
    """Where a benchmark's registry is: ``relative`` in the benchmark's
    directory tree (a local directory, or an object's key prefix).

    ``relative`` must be a portable relative path
    (:func:`~eceb_worker.core.paths.path_problems`: no ``..`` or ``.``
    segment, not absolute, no NUL or other control character), and a local
    one must not lead out of the benchmark's directory through a symbolic
    link. Raises :class:`InputError` naming the field ``registry.path``
    otherwise."""
    reasons = path_problems(relative)
    if not reasons:
        try:
            return benchmark_location.sibling(relative)
        except ValueError as exc:
            message = str(exc)
    else:
        message = f"{relative!r} {'; '.join(reasons)}"
    message += ": the registry must be a file of the benchmark's directory tree, named by a relative path"
    raise InputError([Problem(file=benchmark_location.name, field="registry.path", message=message)])


def named_artifacts(benchmark: Benchmark) -> frozenset[str]:
    """Every artifact id a task of ``benchmark`` requires or denies, or a
    secret span marks."""
    named = {a for task in benchmark.tasks for a in (*task.required_artifacts, *task.denied_artifacts)}
    named.update(span.artifact_id for span in benchmark.secret_spans)
    return frozenset(named)


def _benchmark_with_registry(
    where: Where, locator: Locator, problems: list[Problem], keep: AbstractSet[str] | None, shard_bytes: int
) -> tuple[Benchmark | None, Registry | None, str]:
    """Load a benchmark and its registry, appending every problem to
    ``problems``; the benchmark, the registry and the registry's location."""
    location = locator.locate(where)
    try:
        benchmark = load_benchmark(where, locator)
    except InputError as exc:
        problems.extend(exc.problems)
        if len(exc.problems) == 1 and not exc.problems[0].field and not exc.problems[0].record:
            return None, None, ""  # not JSON, or of another kind: nothing more can be read of it
        problems.extend(_decoded_parts_problems(location, keep, shard_bytes))
        return None, None, ""
    try:
        registry_at = registry_location(location, benchmark.registry.path)
        wanted = keep if keep is None else named_artifacts(benchmark) | frozenset(keep)
        registry = load_registry(registry_at, keep=wanted, shard_bytes=shard_bytes)
    except InputError as exc:
        problems.extend(exc.problems)
        problems.extend(benchmark_problems(benchmark, None, None, file=location.name))
        return benchmark, None, ""
    problems.extend(benchmark_problems(benchmark, registry.by_id(), registry.corpus_root, file=location.name))
    return benchmark, registry, registry_at.name


def _decoded_parts_problems(location: Location, keep: AbstractSet[str] | None, shard_bytes: int) -> list[Problem]:
    """The problems of a benchmark that did not decode beyond its schema
    problems: those of its registry (when its path reads), and the checks
    of the tasks and secret spans that decode on their own
    (:func:`~eceb_worker.families.eceb.partial.parts_problems`), against
    the registry when it loads."""
    value, error = decode_lenient(location.read())
    if error or not isinstance(value, dict):
        return []
    parts = benchmark_parts(value)
    problems: list[Problem] = []
    registry: Registry | None = None
    if parts.registry_path is not None:
        wanted = keep if keep is None else frozenset(keep) | parts.artifact_ids
        try:
            registry = load_registry(
                registry_location(location, parts.registry_path), keep=wanted, shard_bytes=shard_bytes
            )
        except InputError as registry_exc:
            problems.extend(registry_exc.problems)
    artifacts, root = (registry.by_id(), registry.corpus_root) if registry is not None else (None, None)
    return problems + parts_problems(parts, artifacts, root, file=location.name)


def check_benchmark(where: Where, locator: Locator | None = None) -> tuple[Benchmark, Registry]:
    """Load a benchmark and its whole registry and check them together (ECEB-0.1 §6).

    Raises :class:`InputError` holding every problem of both files.
    """
    problems: list[Problem] = []
    benchmark, registry, _ = _benchmark_with_registry(
        where, locator or Locator(), problems, KEEP_ALL, DEFAULT_SHARD_BYTES
    )
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None
    return benchmark, registry


WAITING_FOR_BENCHMARK: Final = (
    "not checked against the benchmark (its tasks, task root and the records' task ids): "
    "those checks wait until the benchmark's problems are fixed"
)
"""The note of a run whose benchmark did not load: what was not checked, and why."""


def check_inputs(
    benchmark_at: Where,
    run_at: Where,
    locator: Locator | None = None,
    *,
    keep: AbstractSet[str] | None = KEEP_ALL,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
) -> CheckedInputs:
    """Load the benchmark, its registry and the run's header, and check them together.

    Each may be a local path or an ``s3://bucket/key`` URL (read by
    ``locator``); the registry's path in the benchmark is relative to the
    benchmark's directory or key prefix. The registry keeps every artifact
    (``keep=KEEP_ALL``), or those the benchmark names and the ids in ``keep``;
    its re-hash plan is cut at ``shard_bytes``. Raises :class:`InputError`
    holding every problem of the three files found so far (each problem names
    its file), before any corpus byte is read; the run's records are checked
    then too when anything else has a problem, and otherwise while they are
    evaluated. Raises ``StorageError`` when the storage cannot be used.
    """
    locator = locator or Locator()
    problems: list[Problem] = []
    benchmark, registry, registry_at = _benchmark_with_registry(benchmark_at, locator, problems, keep, shard_bytes)
    run = None
    try:
        run = load_run(run_at, locator)
    except InputError as exc:
        problems.extend(exc.problems)
    if run is not None:
        problems.extend(run.unkeyed)
        corpus_root = registry.corpus_root if registry is not None else None
        problems.extend(run_header_problems(run.header, benchmark, corpus_root, file=run.file))
    if problems and run is not None:
        # The run's records would otherwise be checked only after corpus
        # verification: report their problems now, with the others.
        problems.extend(record_problems_of_run(run, benchmark))
        if benchmark is None:
            problems.append(Problem(file=run.file, message=WAITING_FOR_BENCHMARK))
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None and run is not None
    return CheckedInputs(benchmark=benchmark, registry=registry, registry_location=registry_at, run=run)


def check_run_records(run: IndexedRun, benchmark: Benchmark | None = None) -> None:
    """Check every record of a run (against ``benchmark`` when given).

    Raises :class:`InputError` holding every problem, in record order.
    """
    problems = record_problems_of_run(run, benchmark)
    if problems:
        raise InputError(problems)


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
    wanted = set(named_artifacts(benchmark))
    for items in run.observations.values():
        for _index, raw in items:
            try:
                selections = _SELECTIONS.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                continue
            wanted.update(s.artifact_id for s in selections.selected_artifacts)
    return wanted


class _Sized(msgspec.Struct, frozen=True, gc=False):
    """What the registry's totals count of an artifact line; other fields are skipped unread."""

    classification: str = ""
    size_bytes: int = 0


_SIZED: Final = msgspec.json.Decoder(_Sized)


def _tallied(chunks: Iterable[bytes], tally: RegistryTally) -> Iterator[bytes]:
    """The registry's bytes, as blocks of whole lines, each block's
    artifact lines counted by ``tally`` as it passes (a registry already
    checked: a block whose lines do not all decode is decoded line by line,
    and a line that does not decode is not counted)."""
    for block, lines, first in artifact_blocks(chunks):
        candidates = lines[first:]
        if candidates:
            try:
                sized: Sequence[_Sized | Artifact] = _SIZED.decode_lines(b"\n".join(candidates))
            except (msgspec.DecodeError, RecursionError):
                sized = decode_block(block, lines, first, "", None).artifacts
            tally.add(sized)
        yield block.data


def load_referenced_artifacts(
    registry_at: Where,
    benchmark: Benchmark,
    run: IndexedRun,
    locator: Locator | None = None,
    *,
    classifications: AbstractSet[str] = frozenset(),
) -> RegistryArtifacts:
    """The artifacts of a registry already checked (:func:`check_inputs`)
    that evaluating ``run`` against ``benchmark`` can look up
    (:func:`referenced_artifact_ids`), and those of ``classifications``
    (what the disclosure check may read), by id, read as a stream: memory
    holds those artifacts only, with the whole registry's totals by
    classification, summed in the same pass (what each task permits, for its
    baseline's composition, ECEB-0.1 §7). Raises :class:`InputError` when
    the registry cannot be read or changed (with ``locator`` pinning
    versions), ``StorageError``.
    """
    location = _located(registry_at, locator)
    tally = RegistryTally()
    found = registry_artifacts(
        _tallied(location.chunks(), tally), referenced_artifact_ids(benchmark, run), classifications
    )
    return RegistryArtifacts(found, tally.totals())
