"""Corpus registries (ECEB-0.1 §5): the one reader, and writing them.

:func:`scan_registry` reads a registry as a stream of chunks, checks every
line, the duplicates and the header, and cuts the re-hash plan, keeping
only the artifacts asked for; memory does not grow with the registry.
:func:`read_registry` is its consumer that keeps every artifact. Both
report the same problems, worded the same, all together:

* every line is decoded and checked as it comes (:mod:`eceb_worker.corpus.lines`);
* duplicate ``artifact_id`` and ``path`` values: when each field's values
  come in strictly ascending order of their JSON encoding (as in a registry
  eceb writes, where lines are in corpus-root order and paths are the ids),
  there can be none; otherwise the values are sorted
  (:class:`~eceb_worker.corpus.sorting.Sorter`, keys
  ``JSON(value) || line number``) and neighbours compared;
* the corpus root is hashed as the lines come when their ids ascend (then
  so do their canonical records, which start with the encoded id: the lines
  are in corpus-root order); otherwise the canonical records are sorted and
  hashed in order.

A registry in corpus-root order is therefore read once. Otherwise three
sorts run, over the artifacts held when every one is kept, else over a
second reading (``open_chunks`` is called again).

The same pass cuts the re-hash plan
(:class:`~eceb_worker.corpus.planning.RehashPlanner`) over the artifacts in
the file's line order, each shard a byte range of whole lines of the file,
so that a worker can read and decode its own shard
(:func:`~eceb_worker.corpus.checked_lines.registry_range_artifacts`); told the
header's ``artifact_count``, the planner shrinks the last shards.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain, islice
from typing import Final

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.corpus.artifacts import REGISTRY_SCHEMA, Artifact, RegistryHeader
from eceb_worker.corpus.corpus_root import RootHasher, canonical_records, corpus_root_of_sorted, root_lines
from eceb_worker.corpus.lines import (
    Block,
    artifact_blocks,
    blocks,
    decode_block,
    duplicate_problem,
    empty_registry_problem,
    header_line,
    header_problems,
    plain_artifacts,
)
from eceb_worker.corpus.planning import (
    DEFAULT_FILE_COST_BYTES,
    DEFAULT_SHARD_BYTES,
    RangeDigests,
    RehashPlanner,
    RehashShard,
)
from eceb_worker.corpus.sorting import (
    MemorySorter,
    Sorter,
    add_sort_keys,
    duplicate_keys,
    encoded_values,
)
from eceb_worker.errors import InputError, Problem

__all__ = [
    "KEEP_ALL",
    "Registry",
    "build_registry",
    "read_registry",
    "registry_lines",
    "scan_registry",
]

KEEP_ALL: Final = None
"""``keep`` for :func:`scan_registry`: keep every artifact."""

ChunkSource = Callable[[], Iterable[bytes]]
"""Opens the registry from its first byte: its bytes as chunks of any sizes."""


class Registry(msgspec.Struct, frozen=True, kw_only=True):
    """A checked corpus registry (ECEB-0.1 §5).

    Fields:
        header: the header; its ``artifact_count`` and ``corpus_root`` match the lines.
        artifacts: the artifacts kept, in the file's line order: all of them
            (:func:`read_registry`), or those asked for (:func:`scan_registry`).
        shards: the re-hash plan over the file's lines, as byte ranges;
            ``()`` for a registry built in memory (:func:`build_registry`).
        in_root_order: True when the lines are in corpus-root order (then the
            file was read once and nothing was sorted).
    """

    header: RegistryHeader
    artifacts: tuple[Artifact, ...]
    shards: tuple[RehashShard, ...] = ()
    in_root_order: bool = True

    @property
    def corpus_root(self) -> str:
        """The corpus root (ECEB-0.1 §5), 64 lowercase hex characters."""
        return self.header.corpus_root

    @property
    def artifact_count(self) -> int:
        """How many artifacts the registry lists."""
        return self.header.artifact_count

    def by_id(self) -> dict[str, Artifact]:
        """The artifacts kept, by id."""
        return {a.artifact_id: a for a in self.artifacts}


def build_registry(artifacts: Iterable[Artifact]) -> Registry:
    """Sort artifacts into corpus-root order and compute the header.

    Does not validate: callers pass artifacts that are already valid (see
    :func:`read_registry` for untrusted input).
    """
    items = list(artifacts)
    records = canonical_records(items)
    order = sorted(range(len(items)), key=records.__getitem__)
    root = corpus_root_of_sorted(records[i] for i in order)
    header = RegistryHeader(schema=REGISTRY_SCHEMA, artifact_count=len(items), corpus_root=root)
    return Registry(header=header, artifacts=tuple(items[i] for i in order))


def registry_lines(registry: Registry) -> Iterator[bytes]:
    """The registry's JSON Lines, each with its final ``\\n``: header first."""
    yield canonical_json(registry.header) + b"\n"
    for artifact in registry.artifacts:
        yield canonical_json(artifact) + b"\n"


def read_registry(data: bytes, name: str, *, shard_bytes: int = DEFAULT_SHARD_BYTES) -> Registry:
    """Read and validate a whole registry held in memory, keeping every
    artifact (:func:`scan_registry` with ``keep=KEEP_ALL``; no range
    digests: a registry held whole is never read by range). ``name`` is how
    problems name the file. Raises :class:`InputError` holding every problem.
    """
    return scan_registry(lambda: (data,), name, keep=KEEP_ALL, shard_bytes=shard_bytes, digest_ranges=False)


def scan_registry(  # noqa: C901, PLR0912 - one streaming pass over the registry: header, lines, order and duplicates checked as read
    open_chunks: ChunkSource,
    name: str,
    *,
    keep: AbstractSet[str] | None = frozenset(),
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
    new_sorter: Callable[[], Sorter] = MemorySorter,
    digest_ranges: bool = True,
    other_kind: Callable[[bytes], Problem | None] | None = None,
    on_shards: Callable[[Sequence[RehashShard]], object] | None = None,
) -> Registry:
    """Check a registry (JSON Lines, ECEB-0.1 §5) read as a stream, and plan its re-hash.

    ``open_chunks()`` gives the registry's bytes from the first (as chunks
    of any sizes); it is called once when the lines are in corpus-root
    order, twice otherwise unless every artifact is kept (both times the
    same bytes). ``name`` is how
    problems name the file. ``keep`` names the artifact ids to keep (an id
    the registry lacks is simply absent), or is :data:`KEEP_ALL`.
    ``new_sorter`` makes each of the (up to three) sorters a registry not in
    corpus-root order needs: in memory by default, or spilling to disk
    (:class:`eceb_worker.io.spill.ExternalSorter`) for bounded memory.

    Checks every line's JSON, fields and path, duplicate ``artifact_id`` and
    ``path``, then the header's ``artifact_count`` and ``corpus_root``, and
    raises :class:`InputError` with every problem in line order. Otherwise
    returns the :class:`Registry`: its header, the artifacts kept, and the
    re-hash plan (``shard_bytes``, ``file_cost_bytes``: see
    :class:`~eceb_worker.corpus.planning.RehashPlanner`) over the artifacts
    in file order, with the BLAKE3 of each shard's byte range when
    ``digest_ranges`` (a worker reading its range then knows it reads the
    lines that were checked).

    ``other_kind``, given the first block of a file whose header line has
    problems, tells whether the file is another kind of file (a benchmark, a
    run): the problem it returns is then the file's only one.

    ``on_shards``, with ``digest_ranges``, is given the shards of the plan as
    they close while the file is read (with their digests, in plan order; a
    prefix of the plan, the rest come with the registry), as long as no
    line has a problem: their re-hash can start before the check ends, whose
    verdict still decides (an error raised here means no result stands).

    Memory: one chunk's lines, the sorters' contents, the plan, the
    artifacts kept and the problems found. Raises ValueError for a
    non-positive ``shard_bytes`` or negative ``file_cost_bytes``; whatever
    ``open_chunks`` or its chunks raise.
    """
    first = _FirstPass(name, RehashPlanner(shard_bytes, file_cost_bytes), keep, digest_ranges, other_kind)
    first.on_shards = on_shards
    for block, lines in blocks(open_chunks()):
        first.take(block, lines)
    if not first.header_number:
        raise InputError([empty_registry_problem(name)])
    root = first.hasher.hexdigest() if first.ids_ascending else None
    need_ids = not first.ids_ascending
    need_paths = not first.paths_are_ids and not first.paths_ascending
    need_records = root is None and not first.problems
    duplicates: list[tuple[int, int, Problem]] = []
    if need_ids or need_paths or need_records:
        sorters = [new_sorter() for _ in range(3)]
        try:
            ids, paths, records = sorters
            wanted = (ids if need_ids else None, paths if need_paths else None, records if need_records else None)
            if first.kept_numbers is not None:
                # Every artifact is held, with its line number: no second read.
                add_sort_keys(first.kept, list(chain.from_iterable(first.kept_numbers)), *wanted)
            else:
                _second_pass(open_chunks(), *wanted)
            for number, value, first_line in duplicate_keys(ids.sorted()):
                duplicates.append((number, 1, duplicate_problem(name, number, "artifact_id", value, first_line)))
                if first.paths_are_ids:
                    duplicates.append((number, 2, duplicate_problem(name, number, "path", value, first_line)))
            for number, value, first_line in duplicate_keys(paths.sorted()):
                duplicates.append((number, 2, duplicate_problem(name, number, "path", value, first_line)))
            if need_records:
                root = corpus_root_of_sorted(records.sorted())
        finally:
            for sorter in sorters:
                sorter.close()
    if first.problems or duplicates:
        ordered = sorted(
            chain(
                ((number, 0, i, p) for i, (number, p) in enumerate(first.problems)),
                ((n, r, 0, p) for n, r, p in duplicates),
            ),
            key=lambda item: item[:3],
        )
        raise InputError([item[3] for item in ordered])
    assert first.header is not None and root is not None
    mismatches = header_problems(first.header, first.count, root, name, line=first.header_number)
    if mismatches:
        raise InputError(mismatches)
    shards = first.planner.finish()
    if first.ranges is not None:
        digests = first.ranges.finish(len(shards))
        shards = tuple(msgspec.structs.replace(s, digest=d) for s, d in zip(shards, digests, strict=True))
    return Registry(header=first.header, artifacts=tuple(first.kept), shards=shards, in_root_order=first.ids_ascending)


def _ascending(values: Sequence[bytes], previous: bytes | None) -> bool:
    """True when ``values`` ascend strictly, and from ``previous`` when given."""
    if not values:
        return True
    if previous is not None and not previous < values[0]:
        return False
    return all(map(operator.lt, values, islice(values, 1, None)))


class _FirstPass:
    """The state of the first pass of :func:`scan_registry` over the blocks."""

    def __init__(
        self,
        name: str,
        planner: RehashPlanner,
        keep: AbstractSet[str] | None,
        digest_ranges: bool,
        other_kind: Callable[[bytes], Problem | None] | None,
    ) -> None:
        self.other_kind = other_kind
        self.ranges = RangeDigests() if digest_ranges else None
        self.name = name
        self.keep = keep
        self.kept: list[Artifact] = []
        self.kept_numbers: list[Sequence[int]] | None = [] if keep is None else None
        """The line numbers of the artifacts kept, block by block, when every
        artifact (every line that decodes) is kept; ``None`` otherwise."""
        self.problems: list[tuple[int, Problem]] = []
        self.header: RegistryHeader | None = None
        self.header_number = 0  # 0 until the header line is seen
        self.count = 0
        self.planner = planner
        self.ids_ascending = self.paths_ascending = True
        self.paths_are_ids = True
        self.last_id: bytes | None = None
        self.last_path: bytes | None = None
        self.hasher = RootHasher()
        self.on_shards: Callable[[Sequence[RehashShard]], object] | None = None
        self.emitted = 0  # shards given to on_shards so far

    def take(self, block: Block, lines: list[bytes]) -> None:
        """Check the block's ``lines`` and account for its artifacts."""
        first = 0
        if not self.header_number:
            while first < len(lines) and not lines[first].strip():
                first += 1
            if first == len(lines):
                return
            number = block.number + first
            raw = lines[first] + b"\n" if first < len(lines) - 1 or block.data.endswith(b"\n") else lines[first]
            self.header, found = header_line(raw, number, self.name)
            if found and self.other_kind is not None and (problem := self.other_kind(block.data)) is not None:
                raise InputError([problem])
            self.header_number = number
            self.problems.extend((number, problem) for problem in found)
            first += 1
            header_end = min(
                block.offset + sum(len(line) + 1 for line in lines[:first]), block.offset + len(block.data)
            )
            self.planner.start_at(header_end)
            if self.header is not None:
                self.planner.expect(self.header.artifact_count)  # the last shards shrink
            if self.ranges is not None:
                self.ranges.start(header_end)
        artifacts, numbers, ends = decode_block(block, lines, first, self.name, self.problems)
        if self.kept_numbers is not None:
            self.kept_numbers.append(numbers)
        closed = len(self.planner.closed)
        self._account(artifacts, ends)
        if self.ranges is not None:
            ends_closed = [shard.byte_end for shard in self.planner.closed[closed:]]
            self.ranges.feed(block.data, block.offset, ends_closed, self.planner.planned_end)
            if self.on_shards is not None and not self.problems and len(self.ranges.digests) > self.emitted:
                digests = self.ranges.digests
                self.on_shards(
                    [
                        msgspec.structs.replace(shard, digest=digests[shard.index])
                        for shard in self.planner.closed[self.emitted : len(digests)]
                    ]
                )
                self.emitted = len(digests)

    def _account(self, artifacts: list[Artifact], ends: Sequence[int]) -> None:
        if not artifacts:
            return
        self.count += len(artifacts)
        if self.keep is None:
            self.kept += plain_artifacts(artifacts)
        elif self.keep:
            self.kept += plain_artifacts([a for a in artifacts if a.artifact_id in self.keep])
        ids = [a.artifact_id for a in artifacts]
        paths = [a.path for a in artifacts]
        if self.paths_are_ids and ids != paths:
            # Until now the paths were the ids: they ascended as far as the ids did.
            self.paths_are_ids = False
            self.paths_ascending, self.last_path = self.ids_ascending, self.last_id
        if self.ids_ascending:
            encoded = encoded_values(ids)
            self.ids_ascending = _ascending(encoded, self.last_id)
            self.last_id = encoded[-1]
        if not self.paths_are_ids and self.paths_ascending:
            encoded = encoded_values(paths)
            self.paths_ascending = _ascending(encoded, self.last_path)
            self.last_path = encoded[-1]
        if self.ids_ascending:
            # Distinct ids in ascending JSON order put the canonical records in
            # ascending byte order: the lines are in corpus-root order so far.
            self.hasher.update(root_lines(artifacts))
        self.planner.add([a.size_bytes for a in artifacts], ends, paths)


def _second_pass(chunks: Iterable[bytes], ids: Sorter | None, paths: Sorter | None, records: Sorter | None) -> None:
    """Read the registry again and add the sort keys of its artifact lines to
    the sorters given (:func:`~eceb_worker.corpus.sorting.add_sort_keys`)."""
    for block, lines, first in artifact_blocks(chunks):
        artifacts, numbers, _ends = decode_block(block, lines, first, "", None)
        if artifacts:
            add_sort_keys(artifacts, numbers, ids, paths, records)
