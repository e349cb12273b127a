"""Checking a registry of any size with bounded memory, and cutting its
re-hash shards as byte ranges of the file (ECEB-0.1 §5).

:func:`scan_registry` reads a registry as a stream, block by block, and
reports exactly what :func:`~eceb_worker.engine.registry.read_registry`
reports (the same problems, worded the same, all together), without ever
holding the file or its artifacts in memory:

* every line is decoded and checked as it is read, with the per-line
  functions of :mod:`eceb_worker.engine.registry`;
* duplicate ``artifact_id`` and ``path`` values: when each field's values
  come in strictly ascending order of their JSON encoding (as in a registry
  eceb writes, where lines are in corpus-root order and paths are the ids),
  there can be none; otherwise the values are sorted externally
  (:class:`~eceb_worker.engine.external_sort.RecordSorter`, keys
  ``JSON(value) || line number``) and neighbours compared;
* the corpus root is hashed as the lines are read when their ids ascend
  (then so do their canonical records, which start with the encoded id:
  the lines are in corpus-root order); otherwise the canonical records are
  sorted externally and hashed in order.

A registry in corpus-root order is therefore read once, with memory
independent of its size. Otherwise it is read a second time (the caller
opens it again), and the sort writes temporary files under ``spill_dir``:
about the size of the registry file.

The same pass cuts the re-hash plan: shards exactly as
:func:`~eceb_worker.engine.plan.plan_rehash` cuts the artifacts taken in the
file's line order, each a byte range of whole lines of the file, so that a
worker can read and decode its own shard (:func:`registry_range_artifacts`).
"""

from __future__ import annotations

import contextlib
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from itertools import accumulate, chain, islice
from typing import IO, Annotated, Final, NamedTuple, overload

import blake3
import msgspec

from eceb_worker.engine.artifacts import Artifact, RegistryHeader
from eceb_worker.engine.corpus_root import CORPUS_ROOT_DOMAIN, canonical_lines, corpus_root_of_sorted
from eceb_worker.engine.external_sort import RecordSorter
from eceb_worker.engine.plan import DEFAULT_FILE_COST_BYTES, DEFAULT_SHARD_BYTES, RehashShard
from eceb_worker.engine.registry import (
    PORTABLE_PATH,
    artifact_line,
    duplicate_problem,
    empty_registry_problem,
    header_line,
    header_problems,
)
from eceb_worker.errors import InputError, Problem

__all__ = [
    "DEFAULT_BLOCK_BYTES",
    "RegistryScan",
    "RegistryShard",
    "registry_artifacts",
    "registry_range_artifacts",
    "scan_registry",
]

DEFAULT_BLOCK_BYTES: Final = 8 * 1024 * 1024
"""Bytes of the registry read and decoded at a time."""
_SORT_RUN_BYTES: Final = 64 * 1024 * 1024
_SORT_RUN_RECORDS: Final = 1_000_000
_ARTIFACT_DECODER: Final = msgspec.json.Decoder(Artifact)
_ENCODER: Final = msgspec.json.Encoder()


class RegistryShard(msgspec.Struct, frozen=True, kw_only=True):
    """A re-hash shard as a byte range of a registry file (ECEB-0.1 §5).

    Fields:
        index: 0-based position of the shard in its plan.
        start: ordinal of its first artifact (0-based, counting artifact
            lines in file order); ``end``: one past its last.
        size_bytes: source bytes the shard re-hashes (sum of ``size_bytes``).
        byte_start, byte_end: the range ``[byte_start, byte_end)`` of the
            file holding exactly its artifact lines (and blank lines before
            them), whole lines, the last line's newline included.
        first_path: the ``path`` of its first artifact (names the shard in
            logs; a worker checks the range it read against it).
    """

    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=0)]
    size_bytes: Annotated[int, msgspec.Meta(ge=0)]
    byte_start: Annotated[int, msgspec.Meta(ge=0)]
    byte_end: Annotated[int, msgspec.Meta(ge=0)]
    first_path: str

    @property
    def rehash(self) -> RehashShard:
        """The shard as :func:`~eceb_worker.engine.plan.plan_rehash` plans it."""
        return RehashShard(index=self.index, start=self.start, end=self.end, size_bytes=self.size_bytes)


class RegistryScan(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`scan_registry` found in a valid registry (ECEB-0.1 §5).

    Fields:
        header: the header; its ``artifact_count`` and ``corpus_root`` match the lines.
        artifact_count: artifacts listed (= ``header.artifact_count``).
        shards: the re-hash plan over the file's line order, as byte ranges.
        artifacts: the artifacts whose ids were asked for (``wanted``), by id;
            an id the registry lacks is absent.
        in_root_order: True when the lines are in corpus-root order (then the
            file was read once and nothing was sorted).
    """

    header: RegistryHeader
    artifact_count: int
    shards: tuple[RegistryShard, ...]
    artifacts: dict[str, Artifact]
    in_root_order: bool

    @property
    def corpus_root(self) -> str:
        """The corpus root (ECEB-0.1 §5), 64 lowercase hex characters."""
        return self.header.corpus_root


class _Block(msgspec.Struct, frozen=True):
    """Whole lines of a registry file: ``data`` starts at byte ``offset`` with
    line number ``number`` (1-based)."""

    offset: int
    number: int
    data: bytes


def _blocks(stream: IO[bytes], block_bytes: int) -> Iterator[_Block]:
    """The file as blocks of whole lines, each ending with ``\\n`` except
    perhaps the last (a file not ending with a newline). A line longer than
    ``block_bytes`` makes a block of its own."""
    offset = 0
    number = 1
    carry = b""
    while chunk := stream.read(block_bytes):
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n") + 1
        if not cut:
            carry = data
            continue
        block, carry = data[:cut], data[cut:]
        yield _Block(offset, number, block)
        offset += cut
        number += block.count(b"\n")
    yield _Block(offset, number, carry)


def _lines(block: _Block) -> list[bytes]:
    """The block's lines without their newlines (none for an empty block)."""
    lines = block.data.split(b"\n")
    if block.data.endswith(b"\n") or not block.data:
        lines.pop()
    return lines


def _artifact_blocks(stream: IO[bytes], block_bytes: int) -> Iterator[tuple[_Block, list[bytes], int]]:
    """Each block of ``stream`` with its lines and the position of its first
    artifact line: past the header (the first line that is not blank)."""
    header_seen = False
    for block in _blocks(stream, block_bytes):
        lines = _lines(block)
        first = 0
        if not header_seen:
            while first < len(lines) and not lines[first].strip():
                first += 1
            if first == len(lines):
                continue
            header_seen = True
            first += 1
        yield block, lines, first


class _Ends(Sequence[int]):
    """Byte offsets just past each of ``count`` consecutive lines (newline
    included) whose lengths add up to ``totals``, the first starting at
    ``start``; the last line has no newline unless ``newline_at_end``."""

    def __init__(self, start: int, totals: list[int], newline_at_end: bool) -> None:
        self._start = start
        self._totals = totals
        self._short = 0 if newline_at_end else 1

    def __len__(self) -> int:
        return len(self._totals)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self._totals)
        end = self._start + self._totals[index] + index + 1
        return end - self._short if index == len(self._totals) - 1 else end


class _Decoded(NamedTuple):
    """The artifact lines of a block that decode: the artifacts, their line
    numbers and the byte offset just past each one's line."""

    artifacts: list[Artifact]
    numbers: Sequence[int]
    ends: Sequence[int]


_NOTHING: Final = _Decoded([], (), ())


def _decoded_block(
    block: _Block, lines: list[bytes], first: int, name: str, problems: list[tuple[int, Problem]] | None
) -> _Decoded:
    """Decode the artifact lines ``lines[first:]`` of ``block``.

    With ``problems``, every problem of every line is appended there with its
    line number, as :func:`~eceb_worker.engine.registry.read_registry` words
    it; without, a line that does not decode is skipped silently. Either way
    the same artifacts are returned (those whose line decodes).
    """
    count = len(lines) - first
    if not count:
        return _NOTHING
    at = sum(len(line) + 1 for line in lines[:first])
    data = block.data
    ends = _Ends(block.offset + at, list(accumulate(map(len, islice(lines, first, None)))), data.endswith(b"\n"))
    if (
        data.startswith(b"{", at)
        and data.endswith(b"}\n" if data.endswith(b"\n") else b"}")
        and data.count(b"}\n{", at) == count - 1
    ):
        # Laid out as eceb writes registries: one call decodes every line (a
        # valid artifact is a flat object, so "}\n{" separates objects and
        # as many objects as lines means one a line).
        try:
            artifacts = _ARTIFACT_DECODER.decode_lines(memoryview(data)[at:])
        except (msgspec.DecodeError, RecursionError):
            artifacts = []
        if len(artifacts) == count and all(map(PORTABLE_PATH.fullmatch, [a.path for a in artifacts])):
            number = block.number + first
            return _Decoded(artifacts, range(number, number + count), ends)
    decoded: list[Artifact] = []
    numbers: list[int] = []
    kept: list[int] = []
    for position, line in enumerate(islice(lines, first, None)):
        if not line.strip():
            continue
        number = block.number + first + position
        raw = line + b"\n" if position < count - 1 or data.endswith(b"\n") else line
        if problems is None:
            try:
                artifact: Artifact | None = _ARTIFACT_DECODER.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                artifact = None
        else:
            artifact, found = artifact_line(raw, number, name)
            problems.extend((number, problem) for problem in found)
        if artifact is not None:
            decoded.append(artifact)
            numbers.append(number)
            kept.append(ends[position])
    return _Decoded(decoded, numbers, kept)


def _ascending(values: Sequence[bytes], previous: bytes | None) -> bool:
    """True when ``values`` ascend strictly, and from ``previous`` when given."""
    if not values:
        return True
    if previous is not None and not previous < values[0]:
        return False
    return all(map(operator.lt, values, islice(values, 1, None)))


def _encoded(values: list[str]) -> list[bytes]:
    """Each value as a JSON string (quotes included): unique, and ordered so
    that distinct values never compare equal on a prefix (no JSON string is a
    proper prefix of another)."""
    return _ENCODER.encode_lines(values).split(b"\n")[:-1] if values else []


class _Planner:
    """Cuts shards as :func:`~eceb_worker.engine.plan.plan_rehash` does, as
    artifacts come, block by block: a shard closes as soon as its cost
    (``size + file_cost_bytes`` per artifact) reaches ``shard_bytes``."""

    def __init__(self, shard_bytes: int, file_cost_bytes: int, byte_start: int) -> None:
        if shard_bytes <= 0:
            raise ValueError(f"shard_bytes must be positive, got {shard_bytes}")
        if file_cost_bytes < 0:
            raise ValueError(f"file_cost_bytes must not be negative, got {file_cost_bytes}")
        self.limit = shard_bytes
        self.file_cost = file_cost_bytes
        self.shards: list[RegistryShard] = []
        self.ordinal = 0  # artifacts planned so far
        self.byte_start = byte_start  # where the open shard starts
        self.byte_end = byte_start
        self.start = 0  # ordinal of the open shard's first artifact
        self.cost = 0  # of the open shard
        self.size = 0
        self.first_path = ""

    def add(self, artifacts: Sequence[Artifact], ends: Sequence[int]) -> None:
        """Plan ``artifacts`` (the next ones in file order; ``ends[i]`` is the
        byte offset just past artifact ``i``'s line)."""
        count = len(artifacts)
        if not count:
            return
        sizes = [a.size_bytes for a in artifacts]
        costs = list(accumulate((size + self.file_cost for size in sizes), initial=0))
        position = 0
        while position < count:
            if self.ordinal + position == self.start:
                self.first_path = artifacts[position].path
            # The first artifact whose cumulative cost reaches the limit closes the shard.
            closing = bisect_left(costs, costs[position] + self.limit - self.cost, lo=position + 1)
            if closing > count:
                self.cost += costs[count] - costs[position]
                self.size += sum(sizes[position:])
                break
            self.size += sum(sizes[position:closing])
            self._close(self.ordinal + closing, ends[closing - 1])
            position = closing
        self.ordinal += count
        self.byte_end = ends[-1]

    def _close(self, end: int, byte_end: int) -> None:
        self.shards.append(
            RegistryShard(
                index=len(self.shards),
                start=self.start,
                end=end,
                size_bytes=self.size,
                byte_start=self.byte_start,
                byte_end=byte_end,
                first_path=self.first_path,
            )
        )
        self.start, self.cost, self.size, self.byte_start = end, 0, 0, byte_end

    def finish(self) -> tuple[RegistryShard, ...]:
        """The plan, the last shard closed."""
        if self.start < self.ordinal:
            self._close(self.ordinal, self.byte_end)
        return tuple(self.shards)


def scan_registry(
    open_stream: Callable[[], IO[bytes]],
    name: str,
    *,
    spill_dir: str,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
    wanted: AbstractSet[str] = frozenset(),
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    run_bytes: int = _SORT_RUN_BYTES,
    run_records: int = _SORT_RUN_RECORDS,
) -> RegistryScan:
    """Check a registry (JSON Lines, ECEB-0.1 §5) read as a stream, and plan its re-hash.

    ``open_stream()`` opens the registry file for reading from its first
    byte; it is called once when the lines are in corpus-root order, twice
    otherwise (both streams must give the same bytes; each is closed after
    use). ``name`` is how problems name the file. Reads ``block_bytes`` at a
    time; when a second pass sorts values, temporary files go under
    ``spill_dir`` (an existing directory) and at most about ``run_bytes``
    bytes (or ``run_records`` records) of each kind of sort key (ids, paths,
    canonical records) are held in memory (see
    :class:`~eceb_worker.engine.external_sort.RecordSorter`).

    Checks exactly what :func:`~eceb_worker.engine.registry.read_registry`
    checks (every line's JSON, fields and path, duplicate ``artifact_id``
    and ``path``, then the header's ``artifact_count`` and ``corpus_root``)
    and raises :class:`InputError` with the same problems, in the same order.
    Otherwise returns a :class:`RegistryScan`: the header, the re-hash plan
    (``shard_bytes`` and ``file_cost_bytes`` as for
    :func:`~eceb_worker.engine.plan.plan_rehash`, over the artifacts in file
    order) and the artifacts whose ids are in ``wanted``.

    Memory: one block, the sort runs being filled, the plan, the wanted
    artifacts and the problems found, whatever the number of artifacts. Raises ValueError for
    a non-positive ``shard_bytes``, ``block_bytes``, ``run_bytes`` or
    ``run_records``; whatever ``open_stream`` or reading raises (``OSError``,
    ``StorageError``).
    """
    if block_bytes <= 0:
        raise ValueError(f"block_bytes must be positive, got {block_bytes}")
    if run_bytes <= 0 or run_records <= 0:
        raise ValueError(f"run_bytes and run_records must be positive, got {run_bytes} and {run_records}")
    first = _FirstPass(name, shard_bytes, file_cost_bytes, wanted)
    with contextlib.closing(open_stream()) as stream:
        for block in _blocks(stream, block_bytes):
            first.take(block)
    if first.header_number is None:
        raise InputError([empty_registry_problem(name)])
    problems = first.problems
    dup_problems: list[tuple[int, int, Problem]] = []
    root = first.hasher.hexdigest() if first.ids_ascending else None
    need_ids = not first.ids_ascending
    need_paths = not first.paths_are_ids and not first.paths_ascending
    need_records = root is None and not problems
    if need_ids or need_paths or need_records:
        options = {"run_records": run_records, "run_bytes": run_bytes}
        with (
            RecordSorter(spill_dir, **options) as ids,
            RecordSorter(spill_dir, **options) as paths,
            RecordSorter(spill_dir, **options) as records,
            contextlib.closing(open_stream()) as stream,
        ):
            _second_pass(
                stream,
                block_bytes,
                ids if need_ids else None,
                paths if need_paths else None,
                records if need_records else None,
            )
            for number, value, first_line in _duplicates(ids.sorted()):
                dup_problems.append((number, 1, duplicate_problem(name, number, "artifact_id", value, first_line)))
                if first.paths_are_ids:
                    dup_problems.append((number, 2, duplicate_problem(name, number, "path", value, first_line)))
            for number, value, first_line in _duplicates(paths.sorted()):
                dup_problems.append((number, 2, duplicate_problem(name, number, "path", value, first_line)))
            if need_records:
                root = corpus_root_of_sorted(records.sorted())
    if problems or dup_problems:
        ordered = sorted(
            chain(
                ((number, 0, i, p) for i, (number, p) in enumerate(problems)),
                ((n, r, 0, p) for n, r, p in dup_problems),
            ),
            key=lambda item: item[:3],
        )
        raise InputError([item[3] for item in ordered])
    assert first.header is not None and root is not None
    mismatches = header_problems(first.header, first.count, root, name, line=first.header_number or 1)
    if mismatches:
        raise InputError(mismatches)
    return RegistryScan(
        header=first.header,
        artifact_count=first.count,
        shards=first.planner.finish(),
        artifacts=first.found,
        in_root_order=first.ids_ascending,
    )


class _FirstPass:
    """The state of the first pass of :func:`scan_registry` over the blocks."""

    def __init__(self, name: str, shard_bytes: int, file_cost_bytes: int, wanted: AbstractSet[str]) -> None:
        self.name = name
        self.wanted = wanted
        self.found: dict[str, Artifact] = {}
        self.problems: list[tuple[int, Problem]] = []
        self.header: RegistryHeader | None = None
        self.header_number: int | None = None
        self.count = 0
        self.planner = _Planner(shard_bytes, file_cost_bytes, 0)
        self.ids_ascending = self.paths_ascending = True
        self.paths_are_ids = True
        self.last_id: bytes | None = None
        self.last_path: bytes | None = None
        self.hasher = blake3.blake3(CORPUS_ROOT_DOMAIN)

    def take(self, block: _Block) -> None:
        """Check the block's lines and account for its artifacts."""
        lines = _lines(block)
        first = 0
        if self.header_number is None:
            while first < len(lines) and not lines[first].strip():
                first += 1
            if first == len(lines):
                return
            number = block.number + first
            raw = lines[first] + b"\n" if first < len(lines) - 1 or block.data.endswith(b"\n") else lines[first]
            self.header, found = header_line(raw, number, self.name)
            self.header_number = number
            self.problems.extend((number, problem) for problem in found)
            first += 1
            header_end = block.offset + sum(len(line) + 1 for line in lines[:first])
            self.planner = _Planner(
                self.planner.limit, self.planner.file_cost, min(header_end, block.offset + len(block.data))
            )
        artifacts, _numbers, ends = _decoded_block(block, lines, first, self.name, self.problems)
        self._account(artifacts, ends)

    def _account(self, artifacts: list[Artifact], ends: Sequence[int]) -> None:
        if not artifacts:
            return
        self.count += len(artifacts)
        if self.wanted:
            for artifact in artifacts:
                if artifact.artifact_id in self.wanted:
                    self.found.setdefault(artifact.artifact_id, artifact)
        ids = [a.artifact_id for a in artifacts]
        if self.paths_are_ids:
            paths = [a.path for a in artifacts]
            if ids != paths:
                # Until now the paths were the ids: they ascended as far as the ids did.
                self.paths_are_ids = False
                self.paths_ascending, self.last_path = self.ids_ascending, self.last_id
        if self.ids_ascending:
            encoded = _encoded(ids)
            self.ids_ascending = _ascending(encoded, self.last_id)
            self.last_id = encoded[-1]
        if not self.paths_are_ids and self.paths_ascending:
            encoded = _encoded([a.path for a in artifacts])
            self.paths_ascending = _ascending(encoded, self.last_path)
            self.last_path = encoded[-1]
        if self.ids_ascending:
            # Distinct ids in ascending JSON order put the canonical records in
            # ascending byte order: the lines are in corpus-root order so far.
            self.hasher.update(canonical_lines(artifacts))
        self.planner.add(artifacts, ends)


def _second_pass(
    stream: IO[bytes],
    block_bytes: int,
    ids: RecordSorter | None,
    paths: RecordSorter | None,
    records: RecordSorter | None,
) -> None:
    """Add the sort keys of the registry's artifact lines to the sorters
    given: ``JSON(artifact_id) || line number`` (8 bytes, big-endian) to
    ``ids``, the same of the path to ``paths``, the canonical record to
    ``records``. Sorted, keys are grouped by value (no JSON string is a
    proper prefix of another), then ordered by line."""
    for block, lines, first in _artifact_blocks(stream, block_bytes):
        artifacts, numbers, _ends = _decoded_block(block, lines, first, "", None)
        if not artifacts:
            continue
        suffixes = [number.to_bytes(8, "big") for number in numbers]
        if ids is not None:
            ids.extend(map(operator.add, _encoded([a.artifact_id for a in artifacts]), suffixes))
        if paths is not None:
            paths.extend(map(operator.add, _encoded([a.path for a in artifacts]), suffixes))
        if records is not None:
            records.extend(canonical_lines(artifacts).split(b"\n")[:-1])


_DUPLICATE_BATCH: Final = 65536


def _duplicates(keys: Iterator[bytes]) -> Iterator[tuple[int, str, int]]:
    """``(line, value, first line)`` of every key of :func:`_second_pass`
    (sorted) whose value an earlier line already holds, in key order."""
    previous = b""
    first_line = 0
    while batch := list(islice(keys, _DUPLICATE_BATCH)):
        values = [key[:-8] for key in batch]
        if values[0] != previous and not any(map(operator.eq, values, islice(values, 1, None))):
            # No duplicate in this batch (the usual case): only its last key matters.
            previous, first_line = values[-1], int.from_bytes(batch[-1][-8:], "big")
            continue
        for key, value in zip(batch, values, strict=True):
            number = int.from_bytes(key[-8:], "big")
            if value != previous:
                previous, first_line = value, number
                continue
            yield number, msgspec.json.decode(value), first_line


def registry_range_artifacts(data: bytes, *, start: int, count: int, first_path: str, name: str) -> list[Artifact]:
    """The artifacts (ECEB-0.1 §5) of a shard's byte range
    (:class:`RegistryShard`) of a registry already checked by :func:`scan_registry`.

    ``data`` is the range's bytes; ``start`` the ordinal of its first
    artifact, ``count`` how many it holds, ``first_path`` the first one's
    path. Raises :class:`InputError` naming the registry ``name`` when the
    bytes do not hold exactly those artifacts (the file changed since it was
    checked, or the range is not the planned one).
    """
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    problems: list[tuple[int, Problem]] = []
    artifacts, _numbers, _ends = _decoded_block(_Block(0, 1, data), lines, 0, name, problems)
    if problems or len(artifacts) != count or (artifacts and artifacts[0].path != first_path):
        raise InputError(
            [
                Problem(
                    file=name,
                    message=(
                        f"the lines of artifacts {start}..{start + count - 1} are not those the job checked "
                        "(the registry changed?)"
                    ),
                )
            ]
        )
    return artifacts


def registry_artifacts(
    stream: IO[bytes], wanted: AbstractSet[str], *, block_bytes: int = DEFAULT_BLOCK_BYTES
) -> dict[str, Artifact]:
    """The artifacts (ECEB-0.1 §5) of a registry whose ids are in ``wanted``,
    by id (an id the registry lacks is absent).

    For a registry already checked (by :func:`scan_registry`, or pinned to a
    version that was): lines that do not decode are skipped, nothing else is
    checked. Reads ``stream`` block by block; memory is one block plus the
    artifacts found.
    """
    found: dict[str, Artifact] = {}
    for block, block_lines, block_first in _artifact_blocks(stream, block_bytes):
        candidates = block_lines[block_first:]
        part, lines, first = block, block_lines, block_first
        try:
            # Most lines are not wanted: read only their ids, and decode whole the lines that are.
            ids = [line.artifact_id for line in _ID_DECODER.decode_lines(b"\n".join(candidates))]
        except (msgspec.DecodeError, RecursionError):
            ids = None
        if ids is not None and len(ids) == len(candidates):
            if wanted.isdisjoint(ids):
                continue
            chosen = [raw for raw, artifact_id in zip(candidates, ids, strict=True) if artifact_id in wanted]
            part = _Block(0, 1, b"\n".join(chosen))
            lines, first = _lines(part), 0
        artifacts, _numbers, _ends = _decoded_block(part, lines, first, "", None)
        for artifact in artifacts:
            if artifact.artifact_id in wanted:
                found.setdefault(artifact.artifact_id, artifact)
    return found


class _ArtifactId(msgspec.Struct, gc=False):
    """Just the id of an artifact line; the other fields are skipped unread."""

    artifact_id: str


_ID_DECODER: Final = msgspec.json.Decoder(_ArtifactId)
