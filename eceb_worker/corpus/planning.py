"""Re-hash plans (ECEB-0.1 §5): a registry's artifacts cut into shards
balanced by bytes, each shard a contiguous run of artifact lines of the
registry file that a worker can read and decode alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Annotated, Any, Final

import blake3
import msgspec

from eceb_worker.core.planning import RangeCutter

__all__ = [
    "DEFAULT_FILE_COST_BYTES",
    "DEFAULT_SHARD_BYTES",
    "DEFAULT_TASK_BYTES",
    "RangeDigests",
    "TAPER_PARTS",
    "RehashPlanner",
    "RehashShard",
    "plan_rehash",
]

DEFAULT_SHARD_BYTES: Final = 64 * 1024 * 1024
"""Default cost of one re-hash shard, in byte-equivalents: some 15 ms of work
on one core (about 1,800 files of 4 KiB, or 64 MiB of large files). Small
enough that the processes sharing a plan finish within one shard of each
other, large enough that handing a shard over (well under a millisecond)
stays a few percent of it. A file larger than this is a shard of its own.
For the in-process executor; a task sent to a cluster costs milliseconds,
hence :data:`DEFAULT_TASK_BYTES`."""

DEFAULT_FILE_COST_BYTES: Final = 32 * 1024
"""Fixed cost charged per artifact (open, stat, read, close), in
byte-equivalents: measured at about 6 us per local file on one core, the time
BLAKE3 takes to hash some 30 KB."""

DEFAULT_TASK_BYTES: Final = 256 * 1024 * 1024
"""Default cost of one re-hash shard sent to a cluster (one Celery task), in
byte-equivalents: about 0.1 s of work on one core from local disk, seconds
from object storage. A task costs a few milliseconds of broker and
result-backend round trips and bookkeeping whatever its size (2 to 4 ms
measured, see docs/PERFORMANCE.md), a few percent of this."""

TAPER_PARTS: Final = 8
"""A shard of a plan whose last shards shrink (:meth:`RehashPlanner.expect`)
is never cut smaller than ``shard_bytes / TAPER_PARTS``: a task's fixed cost
stays a small part of it."""

Offset = Annotated[int, msgspec.Meta(ge=0)]


class RehashShard(msgspec.Struct, frozen=True, kw_only=True):
    """A contiguous run of a registry's artifacts (in the file's line order).

    Fields:
        index: 0-based position of the shard in its plan.
        start: ordinal of its first artifact (0-based, counting artifact
            lines in file order); ``end``: one past its last.
        size_bytes: source bytes the shard re-hashes (sum of ``size_bytes``).
        byte_start, byte_end: the range ``[byte_start, byte_end)`` of the
            registry file holding exactly its artifact lines (and blank lines
            before them), whole lines, the last line's newline included; both
            0 in a plan made from sizes alone (:func:`plan_rehash`).
        first_path: the ``path`` of its first artifact (names the shard in
            logs; a worker checks the range it read against it); ``""`` in a
            plan made from sizes alone.
        digest: BLAKE3 of the bytes of its range, as the registry was checked
            (a worker refuses a range that differs); ``""`` when not taken.
    """

    index: Offset
    start: Offset
    end: Offset
    size_bytes: Offset
    byte_start: Offset = 0
    byte_end: Offset = 0
    first_path: str = ""
    digest: str = ""

    @property
    def count(self) -> int:
        """How many artifacts the shard holds."""
        return self.end - self.start


class RehashPlanner:
    """Cuts re-hash shards as artifacts come, in file order: each artifact
    costs ``size + file_cost_bytes``, and a shard closes as soon as its cost
    reaches ``shard_bytes`` (:class:`~eceb_worker.core.planning.RangeCutter`).

    ``byte_start`` is where the first artifact line may start in the file
    (just past the header). Raises ValueError for a non-positive
    ``shard_bytes`` or a negative ``file_cost_bytes``.

    Told how many artifacts to expect (:meth:`expect`), the last shards
    shrink (guided self-scheduling): a shard opening when the artifacts still
    to come are estimated to cost ``R`` (their count times the mean cost so
    far) closes at ``min(shard_bytes, ceil(R / 2))``, never below
    ``shard_bytes / TAPER_PARTS``, so that workers taking shards as they
    free up finish close together. The plan stays a pure function of the
    artifacts and the count.
    """

    def __init__(self, shard_bytes: int, file_cost_bytes: int, byte_start: int = 0) -> None:
        if file_cost_bytes < 0:
            raise ValueError(f"file_cost_bytes must not be negative, got {file_cost_bytes}")
        self._cutter = RangeCutter(shard_bytes, name="shard_bytes")
        self._shard_bytes = shard_bytes
        self._file_cost = file_cost_bytes
        self._expected: int | None = None  # artifacts expected in all (the last shards shrink)
        self._cost = 0  # cost of the artifacts planned so far
        self._shards: list[RehashShard] = []
        self._count = 0  # artifacts planned so far
        self._start = 0  # ordinal of the open shard's first artifact
        self._size = 0  # source bytes of the open shard
        self._byte_start = byte_start  # where the open shard starts in the file
        self._byte_end = byte_start
        self._first_path = ""

    @property
    def closed(self) -> Sequence[RehashShard]:
        """The shards closed so far, in plan order."""
        return self._shards

    @property
    def planned_end(self) -> int:
        """The byte offset just past the last artifact line planned so far."""
        return self._byte_end

    def expect(self, count: int) -> None:
        """Expect ``count`` artifacts in all (a registry header's
        ``artifact_count``), so that the last shards shrink. A count that
        turns out wrong changes only the shards' sizes: past it, shards are
        cut at ``shard_bytes`` again."""
        self._expected = count

    def _limit_at(self, planned: int, cost: int) -> int:
        """The cost at which a shard opening after ``planned`` artifacts (of
        ``cost`` in all) closes."""
        expected = self._expected
        if expected is None or planned == 0 or planned >= expected:
            return self._shard_bytes
        remaining = (expected - planned) * cost // planned
        floor = max(1, self._shard_bytes // TAPER_PARTS)
        return max(floor, min(self._shard_bytes, -(-remaining // 2)))

    def start_at(self, byte_start: int) -> None:
        """Set where the first artifact line may start (before any is added)."""
        self._byte_start = self._byte_end = byte_start

    def add(self, sizes: Sequence[int], ends: Sequence[int] | None = None, paths: Sequence[str] | None = None) -> None:
        """Plan the next artifacts: their ``sizes``, the byte offset just past
        each one's line (``ends``) and their ``paths``, in file order."""
        count = len(sizes)
        if not count:
            return
        totals = list(accumulate(sizes, initial=0))
        position = 0
        planned, cost, file_cost = self._count, self._cost, self._file_cost
        next_limit = None
        if self._expected is not None:

            def next_limit(closing: int) -> int:
                return self._limit_at(planned + closing, cost + totals[closing] + file_cost * closing)

        for closing in self._cutter.add([size + file_cost for size in sizes], next_limit):
            self._open(position, paths)
            self._size += totals[closing] - totals[position]
            self._close(self._count + closing, ends[closing - 1] if ends is not None else 0)
            position = closing
        if position < count:
            self._open(position, paths)
            self._size += totals[count] - totals[position]
        self._count += count
        self._cost += totals[count] + file_cost * count
        if ends is not None:
            self._byte_end = ends[-1]

    def _open(self, position: int, paths: Sequence[str] | None) -> None:
        if self._count + position == self._start and paths is not None:
            self._first_path = paths[position]

    def _close(self, end: int, byte_end: int) -> None:
        self._shards.append(
            RehashShard(
                index=len(self._shards),
                start=self._start,
                end=end,
                size_bytes=self._size,
                byte_start=self._byte_start,
                byte_end=byte_end,
                first_path=self._first_path,
            )
        )
        self._start, self._size, self._byte_start, self._first_path = end, 0, byte_end, ""

    def finish(self) -> tuple[RehashShard, ...]:
        """The plan, the last shard closed."""
        if self._start < self._count:
            self._close(self._count, self._byte_end)
        return tuple(self._shards)


def plan_rehash(
    sizes: Sequence[int],
    *,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
    taper: bool = False,
) -> list[RehashShard]:
    """Cut artifacts (given by their sizes, in registry order) into shards
    balanced by bytes, as :class:`RehashPlanner` does (no byte ranges); with
    ``taper``, the last shards shrink as in a plan told to expect
    ``len(sizes)`` artifacts (:meth:`RehashPlanner.expect`).

    Shards are contiguous, cover every artifact exactly once, and an artifact
    larger than ``shard_bytes`` is a shard of its own. ``[]`` for no
    artifacts. Raises ValueError for a non-positive ``shard_bytes`` or a
    negative ``file_cost_bytes``.
    """
    planner = RehashPlanner(shard_bytes, file_cost_bytes)
    if taper:
        planner.expect(len(sizes))
    planner.add(sizes)
    return list(planner.finish())


class RangeDigests:
    """BLAKE3 of each shard's byte range of a registry file (ECEB-0.1 §5),
    taken from the file's blocks as they come: the bytes from the first
    shard's start are hashed in order, and the hash is cut at each shard's
    end; :attr:`digests` holds those of the shards closed so far, in plan
    order (64 hex characters each)."""

    def __init__(self) -> None:
        self.position = -1  # the next byte to hash; -1 until the header is read
        self.hasher = blake3.blake3()
        self.at_planned_end: Any = None  # the hash as it stood just past the last artifact line
        self.digests: list[str] = []

    def start(self, at: int) -> None:
        """The first shard starts at byte ``at``."""
        self.position = at

    def feed(self, data: bytes, base: int, closing_ends: Sequence[int], planned_end: int) -> None:
        """Hash the file's bytes ``data``, from byte ``base``: ``closing_ends``
        are the ends of the shards closed in them, ``planned_end`` the end of
        the last artifact line planned so far."""
        if self.position < 0:
            return
        view = memoryview(data)
        for end in closing_ends:
            self.hasher.update(view[self.position - base : end - base])
            self.digests.append(str(self.hasher.hexdigest()))
            self.hasher, self.position = blake3.blake3(), end
        if planned_end >= self.position:
            self.hasher.update(view[self.position - base : planned_end - base])
            self.position = planned_end
            self.at_planned_end = self.hasher.copy()
        self.hasher.update(view[self.position - base :])
        self.position = base + len(data)

    def finish(self, shards: int) -> list[str]:
        """One digest per shard of a plan of ``shards``: the last one, closed
        when the file ended, covers the bytes up to its last artifact line."""
        if len(self.digests) < shards and self.at_planned_end is not None:
            self.digests.append(str(self.at_planned_end.hexdigest()))
        return self.digests
