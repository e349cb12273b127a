"""Registering a corpus on a cluster (ECEB-0.1 §5; ``eceb-dist register``):
what is planned, answered and reduced, without I/O.

The job runs in two map stages and a reduce::

    plan the listing       key ranges of the corpus prefix, cut at the key
                           prefixes ("directories") and page ends a few
                           delimiter listings find (:class:`ListingPlanner`)
      listing shard x L    list its key range, check every path, classify it
                           by the rules, write its rows (:class:`ListedRow`)
                           in corpus-root order as a partial beside the
                           output, answer its counts, its problems
                           (:class:`ListingTally`, bounded) and the pieces of
                           its partial (:class:`Piece`)
    plan the hashing       every problem of the listing fails the job;
                           else hash shards as byte ranges of the listing
                           partials (:func:`plan_hashing`), the last ones
                           smaller (guided self-scheduling)
      hash shard x H       hash its rows, write their registry lines as a
                           partial, answer its counts and problems
    merge                  the partial registries of each listing partial,
                           in order, are one sorted run; the runs are merged
                           (:func:`merged_lines`) into the registry's lines,
                           the corpus root hashed as they stream
                           (:class:`RootOfLines`)

Order: a registry's lines are in corpus-root order, the order of each
artifact's canonical record (:mod:`eceb_worker.corpus.corpus_root`). The
artifact id of a registered file is its path, and its canonical record
starts with the id's JSON string, so two records compare as the JSON
strings of their paths (quotes included) compare: ``"a b"`` sorts before
``"a"`` (a space, 0x20, before the closing quote, 0x22), though the key
``a`` sorts before ``a b``. A :class:`ListedRow` line, and a registry line,
starts with its path's JSON string too, so sorting either kind of line
bytewise puts it in corpus-root order; listing ranges interleave in that
order, hence the merge.

Nothing here grows with the object count on the coordinating steps: the
listing plan is a few hundred keys, an answer's problems are bounded
(:data:`LISTED_PROBLEMS`, :data:`LISTED_GROUPS`), the hash plan is one
range per shard, and the merge streams.
"""

from __future__ import annotations

import heapq
import posixpath
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from itertools import accumulate, islice
from typing import Annotated, Final

import msgspec

from eceb_worker.core.canonical import canonical_json, canonical_lines
from eceb_worker.core.paths import path_problems, printable_path
from eceb_worker.core.planning import RangeCutter
from eceb_worker.core.urls import split_object_url
from eceb_worker.corpus.artifacts import REGISTRY_SCHEMA, Artifact, Classification, RegistryHeader, SourceKind
from eceb_worker.corpus.corpus_root import RootHasher, root_lines
from eceb_worker.corpus.outcomes import HashResult, hash_outcomes
from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, TAPER_PARTS
from eceb_worker.corpus.rules import UNCLASSIFIED_EXAMPLES, Classified, group_problems, unclassified_where
from eceb_worker.corpus.storage import ListedEntry
from eceb_worker.errors import Problem

__all__ = [
    "LISTED_GROUPS",
    "LISTED_PROBLEMS",
    "LISTING_DEPTH",
    "LISTING_TARGET",
    "MAX_LISTING_SHARDS",
    "HashRange",
    "ListedRow",
    "ListingPlanner",
    "ListingShard",
    "ListingTally",
    "PathProblem",
    "Piece",
    "PieceCutter",
    "Registered",
    "RootOfLines",
    "TallyBuilder",
    "UnclassifiedGroup",
    "classified_rows",
    "decode_rows",
    "encode_rows",
    "first_problems",
    "hashed_artifacts",
    "header_line",
    "listing_problems",
    "listing_shards",
    "merge_tallies",
    "merged_lines",
    "parts_prefix",
    "plan_hashing",
    "thinned",
]

Count = Annotated[int, msgspec.Meta(ge=0)]

LISTING_TARGET: Final = 16
"""Cut points the listing plan looks for: it descends into the key prefixes
it found until it has this many, or :data:`LISTING_DEPTH` levels."""
LISTING_DEPTH: Final = 2
"""Levels below the corpus prefix the listing plan descends at most."""
MAX_LISTING_SHARDS: Final = 16
"""Listing shards a plan holds at most (cut points beyond are thinned out
evenly). Each listing shard costs at least one listing request of its own
(a range of keys rarely ends at a page's end) and its partial: a few
ranges, each of many pages, list a large corpus in parallel without
multiplying requests (a store whose listing request costs time in
proportion to the bucket, as the loopback S3 server's does, would be
slower with many); and the merge keeps one run open per listing shard."""
LEVEL_ENTRIES: Final = 10_000
"""Entries (keys and key prefixes) of one level a delimiter listing of the
plan reads at most (ten pages): beyond them, the rest of that level is
listed by the shard whose range holds it."""
LISTED_PROBLEMS: Final = 100
"""Problems of the listing (paths that are not portable) and of the hashing
(objects that cannot be read) a job names, the first in order; the rest
are counted."""
LISTED_GROUPS: Final = 256
"""Groups of unclassified files a job names (by top-level directory and
what they lack, in that order); the files of further groups are counted."""

FILE_COST_BYTES: Final = DEFAULT_FILE_COST_BYTES
"""What hashing one file costs besides its bytes, in byte-equivalents."""


def parts_prefix(out: str, job_id: str) -> str:
    """Where the partials of job ``job_id`` writing the registry ``out``
    (``s3://bucket/key``) go: ``s3://bucket/<dir>/.<name>.parts/<job_id>/``
    beside it. Raises ValueError for a malformed ``out``."""
    bucket, key = split_object_url(out)
    directory, name = posixpath.split(key)
    return f"s3://{bucket}/{posixpath.join(directory, f'.{name}.parts', job_id)}/"


# -- the listing plan ------------------------------------------------------


class ListingShard(msgspec.Struct, frozen=True, kw_only=True):
    """One listing shard: the keys ``k`` of the corpus prefix with
    ``after < k <= until`` (``""``: unbounded on that side), compared as
    S3 orders keys (their UTF-8 bytes, as Python compares strings).

    Fields:
        index: its position in the plan.
        after, until: its range of keys.
    """

    index: Count
    after: str = ""
    until: str = ""


def thinned(boundaries: Sequence[str], limit: int) -> list[str]:
    """``boundaries`` (sorted) kept evenly to at most ``limit`` of them:
    any subset still cuts the key space into ranges covering every key
    once, only fewer of them."""
    if len(boundaries) <= limit:
        return list(boundaries)
    if limit <= 0:
        return []
    step = len(boundaries) / limit
    return [boundaries[int(position * step)] for position in range(limit)]


def listing_shards(boundaries: Iterable[str]) -> list[ListingShard]:
    """The listing shards cut at ``boundaries`` (keys, in any order,
    duplicates ignored): ``(-, b0], (b0, b1], ..., (bn, -)``, contiguous
    and covering every key once."""
    cuts = sorted(set(boundaries))
    edges = ["", *cuts]
    ends = [*cuts, ""]
    return [
        ListingShard(index=index, after=after, until=until)
        for index, (after, until) in enumerate(zip(edges, ends, strict=True))
    ]


class ListingPlanner:
    """Chooses where listing shards are cut, from delimiter listings of the
    corpus prefix and of the key prefixes found under it, level by level.

    A level's key prefixes and the last key of each of its full pages are
    cut points (:meth:`take`). While fewer than ``target`` cut points are
    known and fewer than ``depth`` levels were descended, the planner asks
    for the next level: the delimiter listings of the key prefixes found in
    the last one, at most ``target`` of them (:meth:`descend`). The plan
    keeps ``limit`` cut points at most, thinned evenly once every listing
    is in (:meth:`shards`); each listing's are thinned to ``limit`` as it
    comes, so memory stays bounded.
    """

    def __init__(
        self, *, target: int = LISTING_TARGET, depth: int = LISTING_DEPTH, limit: int = MAX_LISTING_SHARDS - 1
    ) -> None:
        self.target = target
        self.depth = depth
        self.limit = limit
        self._cuts: set[str] = set()
        self._candidates = 0  # cut points found, before thinning
        self._levels = 0
        self._found: list[str] = []

    def take(self, prefixes: Sequence[str], page_ends: Sequence[str]) -> None:
        """One delimiter listing of the current level: the key prefixes it
        found (each ending with ``/``, sorted), and the last key of each
        full page."""
        found = sorted({*prefixes, *page_ends})
        self._candidates += len(found)
        self._cuts.update(thinned(found, self.limit))
        if len(self._found) < self.target:
            self._found.extend(thinned(prefixes, self.target - len(self._found)))

    def descend(self) -> list[str]:
        """The key prefixes whose delimiter listings make the next level
        (sorted), or ``[]`` when the plan has enough cut points or levels."""
        found, self._found = sorted(self._found), []
        self._levels += 1
        if self._levels > self.depth or self._candidates >= self.target:
            return []
        return found

    def shards(self) -> list[ListingShard]:
        """The plan: the listing shards cut at the cut points, thinned evenly to ``limit``."""
        return listing_shards(thinned(sorted(self._cuts), self.limit))


# -- a listing shard's rows and pieces -------------------------------------


class ListedRow(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One file a listing shard found and classified: a line of its
    partial (JSON, ``path`` first, so that sorting the lines bytewise puts
    them in corpus-root order).

    Fields:
        path: the corpus-relative path (portable).
        size_bytes: its size as listed (plans the hashing; the registry
            holds the size of the bytes hashed).
        kind, classification: what the rules give it.
        etag, last_modified: the object's version as listed (None:
            not told; :class:`~eceb_worker.corpus.storage.ListedEntry`),
            what an incremental registration compares.
        reuse_digest: the digest to register without reading the object
            (an incremental registration's decision; ``""``: hash it).
    """

    path: str
    size_bytes: Count
    kind: SourceKind
    classification: Classification
    etag: str | None = None
    last_modified: datetime | None = None
    reuse_digest: str = ""


_ROWS: Final = msgspec.json.Decoder(ListedRow)
_ROW_ENCODER: Final = msgspec.json.Encoder()


def encode_rows(rows: Sequence[ListedRow]) -> list[bytes]:
    """Each row's line, with its ``"\\n"``."""
    return [line + b"\n" for line in _ROW_ENCODER.encode_lines(rows).split(b"\n")[:-1]] if rows else []


def decode_rows(data: bytes) -> list[ListedRow]:
    """The rows of a partial's lines. Raises ``msgspec.DecodeError`` (or
    ``msgspec.ValidationError``) for bytes that are not such lines."""
    return _ROWS.decode_lines(data)


class Piece(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A run of consecutive rows of a listing partial, the unit hash
    shards are made of.

    Fields:
        byte_start, byte_end: its lines' bytes ``[byte_start, byte_end)``.
        count: its rows.
        size_bytes: their listed sizes.
        first_path: its first row's path.
    """

    byte_start: Count
    byte_end: Count
    count: Count
    size_bytes: Count
    first_path: str

    @property
    def cost(self) -> int:
        """What hashing it costs, in byte-equivalents (each file adds :data:`FILE_COST_BYTES`)."""
        return self.size_bytes + FILE_COST_BYTES * self.count


class PieceCutter:
    """Cuts a partial's rows, as they are written in order, into pieces of
    at least ``piece_bytes`` of cost each (the last may be smaller); a file
    costing that much alone is a piece of its own. Raises ValueError for a
    non-positive ``piece_bytes``."""

    def __init__(self, piece_bytes: int) -> None:
        if piece_bytes <= 0:
            raise ValueError(f"piece_bytes must be positive, got {piece_bytes}")
        self.piece_bytes = piece_bytes
        self.pieces: list[Piece] = []
        self.offset = 0
        self._start = 0
        self._count = 0
        self._size = 0
        self._first = ""

    def add(self, path: str, size_bytes: int, line_bytes: int) -> None:
        """The next row: its path, listed size, and its line's length."""
        if not self._count:
            self._start, self._first = self.offset, path
        self._count += 1
        self._size += size_bytes
        self.offset += line_bytes
        if self._size + FILE_COST_BYTES * self._count >= self.piece_bytes:
            self._close()

    def _close(self) -> None:
        self.pieces.append(
            Piece(
                byte_start=self._start,
                byte_end=self.offset,
                count=self._count,
                size_bytes=self._size,
                first_path=self._first,
            )
        )
        self._count = self._size = 0

    def finish(self) -> list[Piece]:
        """Every piece, the last closed."""
        if self._count:
            self._close()
        return self.pieces


# -- the hash plan ---------------------------------------------------------


class HashRange(msgspec.Struct, frozen=True, kw_only=True):
    """One hash shard: consecutive rows of one listing partial.

    Fields:
        index: its position in the plan.
        listing: the listing shard whose partial holds its rows.
        partial: that partial (``s3://``).
        byte_start, byte_end: its rows' lines in the partial.
        count: its rows; ``size_bytes``: their listed sizes.
        first_path: its first row's path (a shard checks what it read).
    """

    index: Count
    listing: Count
    partial: str
    byte_start: Count
    byte_end: Count
    count: Count
    size_bytes: Count
    first_path: str


def plan_hashing(listings: Sequence[tuple[str, Sequence[Piece]]], shard_bytes: int) -> list[HashRange]:
    """The hash shards over the listing partials ``(partial, pieces)``, in
    listing shard order: consecutive pieces of one partial are joined until
    their cost reaches the shard's limit (the one rule of every plan,
    :class:`~eceb_worker.core.planning.RangeCutter`), never across
    partials. The limit is ``shard_bytes``, shrinking towards the end
    (guided self-scheduling, as :class:`~eceb_worker.corpus.planning.RehashPlanner`
    plans re-hash shards): a shard opening when the pieces still to plan
    cost ``R`` closes at ``min(shard_bytes, ceil(R / 2))``, never below
    ``shard_bytes / TAPER_PARTS``. Raises ValueError for a non-positive
    ``shard_bytes``."""
    if shard_bytes <= 0:
        raise ValueError(f"shard_bytes must be positive, got {shard_bytes}")
    floor = max(1, shard_bytes // TAPER_PARTS)
    total = sum(piece.cost for _, pieces in listings for piece in pieces)

    def limit_at(planned: int) -> int:
        return max(floor, min(shard_bytes, -(-(total - planned) // 2)))

    plan: list[HashRange] = []
    planned = 0
    for listing, (partial, pieces) in enumerate(listings):
        if not pieces:
            continue
        costs = [piece.cost for piece in pieces]
        before = list(accumulate(costs, initial=planned))
        ends = RangeCutter(limit_at(planned), name="shard_bytes").add(
            costs,
            lambda closing: limit_at(before[closing]),  # noqa: B023 - called within this iteration
        )
        if not ends or ends[-1] != len(pieces):
            ends.append(len(pieces))
        for start, stop in zip([0, *ends[:-1]], ends, strict=True):
            chosen = pieces[start:stop]
            plan.append(
                HashRange(
                    index=len(plan),
                    listing=listing,
                    partial=partial,
                    byte_start=chosen[0].byte_start,
                    byte_end=chosen[-1].byte_end,
                    count=sum(piece.count for piece in chosen),
                    size_bytes=sum(piece.size_bytes for piece in chosen),
                    first_path=chosen[0].first_path,
                )
            )
        planned = before[-1]
    return plan


# -- a listing shard's problems --------------------------------------------


class UnclassifiedGroup(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """Files no rule classifies, grouped as ``eceb corpus register`` groups
    them (:func:`~eceb_worker.corpus.rules.group_unclassified`).

    Fields:
        where: their top-level directory (``"docs/"``), ``""`` for the top level.
        needs: what they lack: ``("kind",)``, ``("classification",)`` or both.
        count: how many.
        first: the first of their printable paths, sorted, at most
            :data:`~eceb_worker.corpus.rules.UNCLASSIFIED_EXAMPLES`.
    """

    where: str
    needs: tuple[str, ...]
    count: Count
    first: tuple[str, ...]

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """What orders the groups, as ``eceb corpus register`` prints them."""
        return self.where, self.needs


class ListingTally(msgspec.Struct, frozen=True, kw_only=True):
    """The problems a listing found, bounded.

    Fields:
        others: the first :data:`LISTED_PROBLEMS` problems of the listed
            paths themselves (not portable, refused), in listing order;
            ``other_count``: all of them.
        groups: the first :data:`LISTED_GROUPS` groups of unclassified
            files, in their order (each exact); ``unclassified``: every
            unclassified file, in a group listed or not.
    """

    others: tuple[Problem, ...] = ()
    other_count: Count = 0
    groups: tuple[UnclassifiedGroup, ...] = ()
    unclassified: Count = 0

    @property
    def empty(self) -> bool:
        """True when the listing found no problem."""
        return not self.other_count and not self.unclassified


_NEEDS: Final = ("kind", "classification")


def _first(paths: Iterable[str], keep: int) -> tuple[str, ...]:
    return tuple(heapq.nsmallest(keep, paths))


def _kept_groups(groups: dict[tuple[str, tuple[str, ...]], UnclassifiedGroup]) -> list[UnclassifiedGroup]:
    return [groups[key] for key in sorted(groups)[:LISTED_GROUPS]]


class TallyBuilder:
    """Builds a listing shard's :class:`ListingTally` as its entries come, in
    listing order, in bounded memory: the groups past the first
    :data:`LISTED_GROUPS` in order are counted only.

    ``location`` names the corpus in the problems of its paths,
    ``rules_name`` the rules file in those of unclassified files (as
    ``eceb corpus register`` names them)."""

    def __init__(self, location: str, rules_name: str) -> None:
        self.location = location
        self.rules_name = rules_name
        self._others: list[Problem] = []
        self._other_count = 0
        self._groups: dict[tuple[str, tuple[str, ...]], UnclassifiedGroup] = {}
        self._beyond: tuple[str, tuple[str, ...]] | None = None  # groups past this key are not kept
        self._unclassified = 0

    def _other(self, problems: Sequence[Problem]) -> None:
        self._other_count += len(problems)
        room = LISTED_PROBLEMS - len(self._others)
        if room > 0:
            self._others.extend(problems[:room])

    def candidates(self, entries: Iterable[ListedEntry]) -> list[ListedEntry]:
        """The entries whose paths can be registered; the others' problems
        are counted (a refusal, or why the path is not portable)."""
        kept: list[ListedEntry] = []
        for entry in entries:
            shown = printable_path(entry.path)
            if entry.refusal:
                self._other([Problem(file=self.location, record=shown, message=entry.refusal)])
                continue
            reasons = path_problems(entry.path)
            if reasons:
                self._other([Problem(file=self.location, record=shown, field="path", message=r) for r in reasons])
                continue
            kept.append(entry)
        return kept

    def unclassified(self, problems: Iterable[Problem]) -> None:
        """Count the files :func:`~eceb_worker.corpus.rules.classify_all`
        found no rule for (its problems, a file's together)."""
        lacking: dict[str, list[str]] = {}
        for problem in problems:
            lacking.setdefault(problem.record, []).append(problem.field)
        for path, missing in lacking.items():
            self._unclassified += 1
            key = (unclassified_where(path), tuple(f for f in _NEEDS if f in missing))
            if self._beyond is not None and key > self._beyond:
                continue
            found = self._groups.get(key)
            if found is None:
                self._groups[key] = UnclassifiedGroup(where=key[0], needs=key[1], count=1, first=(path,))
            else:
                first = _first([*found.first, path], UNCLASSIFIED_EXAMPLES)
                self._groups[key] = msgspec.structs.replace(found, count=found.count + 1, first=first)
            if len(self._groups) > 2 * LISTED_GROUPS:
                kept = _kept_groups(self._groups)
                self._groups = {group.key: group for group in kept}
                self._beyond = kept[-1].key

    def tally(self) -> ListingTally:
        """What the entries so far found."""
        return ListingTally(
            others=tuple(self._others),
            other_count=self._other_count,
            groups=tuple(_kept_groups(self._groups)),
            unclassified=self._unclassified,
        )


def merge_tallies(tallies: Iterable[ListingTally]) -> ListingTally:
    """The tallies of listing shards, in shard order (their keys ascend),
    as one: the first problems in that order, each group's count summed and
    its first paths merged, the first :data:`LISTED_GROUPS` groups kept.

    Exact: a group among the first of every shard's together was kept by
    each shard that found it, since every group it dropped comes after
    :data:`LISTED_GROUPS` of its own."""
    others: list[Problem] = []
    other_count = unclassified = 0
    groups: dict[tuple[str, tuple[str, ...]], UnclassifiedGroup] = {}
    for tally in tallies:
        others.extend(tally.others[: max(LISTED_PROBLEMS - len(others), 0)])
        other_count += tally.other_count
        unclassified += tally.unclassified
        for group in tally.groups:
            found = groups.get(group.key)
            groups[group.key] = (
                group
                if found is None
                else UnclassifiedGroup(
                    where=group.where,
                    needs=group.needs,
                    count=found.count + group.count,
                    first=_first([*found.first, *group.first], UNCLASSIFIED_EXAMPLES),
                )
            )
        groups = {group.key: group for group in _kept_groups(groups)}
    return ListingTally(
        others=tuple(others), other_count=other_count, groups=tuple(_kept_groups(groups)), unclassified=unclassified
    )


def listing_problems(tally: ListingTally, *, rules_name: str, location: str, hint: str = "") -> list[Problem]:
    """The problems of a listing as ``eceb corpus register`` lists them
    (without ``-v``): those of the paths first, in listing order, then the
    unclassified files grouped (:func:`~eceb_worker.corpus.rules.group_unclassified`,
    ``hint`` ending each group's message). Beyond the bounds, one problem
    more counts the paths' problems not named, and one the unclassified
    files of groups not named."""
    problems = list(tally.others)
    if tally.other_count > len(tally.others):
        rest = tally.other_count - len(tally.others)
        problems.append(Problem(file=location, message=f"and {rest:,} more problems of paths like these"))
    named = 0
    for group in tally.groups:
        problems += group_problems(group.where, group.needs, group.first, group.count, rules_name, hint=hint)
        named += group.count
    if tally.unclassified > named:
        rest = tally.unclassified - named
        problems.append(
            Problem(file=rules_name, message=f"and {rest:,} more files no rule classifies, under further directories")
        )
    return problems


def classified_rows(entries: Sequence[ListedEntry], classified: Sequence[Classified]) -> list[ListedRow]:
    """The rows of ``classified`` (what the rules gave the ``entries``, in
    their order, some left out), with each entry's listed size and version."""
    by_path = {entry.path: entry for entry in entries}
    rows = []
    for item in classified:
        entry = by_path[item.path]
        rows.append(
            ListedRow(
                path=item.path,
                size_bytes=max(entry.size_bytes, 0),
                kind=item.kind,
                classification=item.classification,
                etag=entry.etag,
                last_modified=entry.last_modified,
            )
        )
    return rows


# -- a hash shard's artifacts and problems ---------------------------------


class PathProblem(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A problem of one file, with its path (what orders the problems, as
    ``eceb corpus register`` lists them: by path)."""

    path: str
    problem: Problem


def hashed_artifacts(
    rows: Sequence[ListedRow], results: Sequence[HashResult | None], *, location: str
) -> tuple[list[Artifact], list[PathProblem]]:
    """The artifacts of ``rows`` (their ids their paths) given what hashing
    found for each (``None``: the row's ``reuse_digest`` and listed size
    are taken), and a problem for each that could not be read, worded as
    ``eceb corpus register`` words it, its record the printable path."""
    hashed = [(row, result) for row, result in zip(rows, results, strict=True) if result is not None]
    outcomes = iter(hash_outcomes([row.path for row, _ in hashed], [result for _, result in hashed]))
    artifacts: list[Artifact] = []
    problems: list[PathProblem] = []
    for row, result in zip(rows, results, strict=True):
        digest, size = row.reuse_digest, row.size_bytes
        if result is not None:
            outcome = next(outcomes)
            if outcome.status != "ok":
                detail = f": {outcome.detail}" if outcome.detail else ""
                message = f"{outcome.status.replace('_', ' ')}{detail}"
                problem = Problem(file=location, record=printable_path(row.path), message=message)
                problems.append(PathProblem(path=row.path, problem=problem))
                continue
            digest, size = outcome.digest, outcome.size_bytes
        artifacts.append(
            Artifact(
                artifact_id=row.path,
                path=row.path,
                kind=row.kind,
                classification=row.classification,
                source_digest=digest,
                size_bytes=size,
            )
        )
    return artifacts, problems


def first_problems(answered: Iterable[Sequence[PathProblem]], limit: int = LISTED_PROBLEMS) -> list[PathProblem]:
    """The first ``limit`` problems of shards' answers (each sorted by
    path, and holding its own first ``limit``), by path: exactly those a
    listing of every problem would start with."""
    return heapq.nsmallest(limit, (item for items in answered for item in items), key=lambda item: item.path)


# -- the merge -------------------------------------------------------------


def merged_lines(runs: Sequence[Iterable[bytes]]) -> Iterator[bytes]:
    """The lines of ``runs`` (each in ascending byte order) in one ascending
    order (:func:`heapq.merge`). Raises ValueError where two lines are
    equal or a run does not ascend (partials that overlap or are out of
    order: never a registry of them)."""
    previous = b""
    for line in heapq.merge(*runs):
        if line <= previous:
            raise ValueError("the partial registries overlap or are out of order")
        previous = line
        yield line


_ARTIFACTS: Final = msgspec.json.Decoder(Artifact)
_BLOCK: Final = 4096


class RootOfLines:
    """The corpus root (ECEB-0.1 §5) and totals of registry lines fed in
    corpus-root order, a block at a time; memory stays constant.
    :meth:`feed` checks each block decodes to artifacts written back as
    the same canonical lines (a partial damaged since it was written is
    never registered: ValueError)."""

    def __init__(self) -> None:
        self.hasher = RootHasher()
        self.count = 0
        self.size_bytes = 0

    def feed(self, block: bytes) -> None:
        """Lines (each with its ``"\\n"``), next in order."""
        if not block:
            return
        try:
            artifacts = _ARTIFACTS.decode_lines(block)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ValueError(f"a partial registry's line is not an artifact: {exc}") from None
        if canonical_lines(artifacts) != block:
            raise ValueError("a partial registry's line is not in canonical form")
        self.hasher.update(root_lines(artifacts))
        self.count += len(artifacts)
        self.size_bytes += sum(artifact.size_bytes for artifact in artifacts)

    def blocks(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        """``lines`` joined in blocks, each fed (:meth:`feed`) as it is yielded."""
        remaining = iter(lines)
        while block := b"".join(islice(remaining, _BLOCK)):
            self.feed(block)
            yield block

    @property
    def corpus_root(self) -> str:
        """The corpus root of the lines fed so far."""
        return self.hasher.hexdigest()


class Registered(msgspec.Struct, frozen=True, kw_only=True):
    """A registry the job wrote.

    Fields:
        artifact_count: its artifacts.
        size_bytes: their sizes summed.
        corpus_root: its corpus root (ECEB-0.1 §5).
        registry_digest: BLAKE3 of its bytes, as written to the output.
        reused: its artifacts whose digest was taken from a previous
            registry (incremental), the others' objects read and hashed.
    """

    artifact_count: int
    size_bytes: int
    corpus_root: str
    registry_digest: str
    reused: int = 0


def header_line(artifact_count: int, corpus_root: str) -> bytes:
    """The registry's header line (canonical JSON and ``"\\n"``); its
    length depends on ``artifact_count`` only (``corpus_root`` is 64
    characters), so it can be written first and filled in last."""
    header = RegistryHeader(schema=REGISTRY_SCHEMA, artifact_count=artifact_count, corpus_root=corpus_root)
    return canonical_json(header) + b"\n"
