"""Shard plans: how re-hashing (ECEB-0.1 §5) and gate evaluation (§10-§14)
are cut into units of work.

A plan is pure data. The same plan runs in-process (``eceb corpus verify``,
``eceb evaluate``) or on a cluster, and the same reduce turns its partial
results into one report whatever the shard size or completion order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Final

import msgspec

__all__ = [
    "DEFAULT_FILE_COST_BYTES",
    "DEFAULT_SHARD_BYTES",
    "DEFAULT_SHARD_OBSERVATIONS",
    "DEFAULT_TASK_BYTES",
    "EvaluationShard",
    "RehashShard",
    "group_shards",
    "plan_evaluation",
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
"""Default largest cost of one task sent to a cluster (a Celery task, a
distributed job's re-hash shard), in byte-equivalents: some 130 ms of work
on one core from local disk, seconds from object storage. A task costs about
5 ms of broker and result-backend round trips whatever its size (see
docs/PERFORMANCE.md), a few percent of this."""

GUIDED_TASKS_PER_WORKER: Final = 2
"""With a known worker count, a task takes at most this fraction (1 in
``GUIDED_TASKS_PER_WORKER * workers``) of the work not yet handed out: tasks
shrink towards the end of a plan, so the workers finish close together."""

DEFAULT_SHARD_OBSERVATIONS: Final = 200_000
"""Default size of one evaluation shard, in observations: about two seconds of
decoding, checking and gating on one core (see docs/PERFORMANCE.md)."""


def _contiguous(costs: Sequence[int], limit: int) -> list[tuple[int, int]]:
    """Cut ``costs`` into contiguous ``(start, end)`` ranges, closing a range as
    soon as its total reaches ``limit``; every position in exactly one range."""
    ranges: list[tuple[int, int]] = []
    start = total = 0
    for position, cost in enumerate(costs):
        total += cost
        if total >= limit:
            ranges.append((start, position + 1))
            start, total = position + 1, 0
    if start < len(costs):
        ranges.append((start, len(costs)))
    return ranges


class RehashShard(msgspec.Struct, frozen=True, kw_only=True):
    """A contiguous range of a registry's artifacts (in corpus-root order).

    Fields:
        index: 0-based position of the shard in its plan.
        start: index of the first artifact; ``end``: one past the last.
        size_bytes: source bytes the shard re-hashes.
    """

    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=0)]
    size_bytes: Annotated[int, msgspec.Meta(ge=0)]


def plan_rehash(
    sizes: Sequence[int],
    *,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
) -> list[RehashShard]:
    """Cut artifacts (given by their sizes, in registry order) into shards
    balanced by bytes.

    Each artifact costs ``size + file_cost_bytes``; a shard closes as soon as
    its cost reaches ``shard_bytes``, so shards are contiguous, cover every
    artifact exactly once, and an artifact larger than ``shard_bytes`` is a
    shard of its own. ``[]`` for no artifacts. Raises ValueError for a
    non-positive ``shard_bytes`` or a negative ``file_cost_bytes``.
    """
    if shard_bytes <= 0:
        raise ValueError(f"shard_bytes must be positive, got {shard_bytes}")
    if file_cost_bytes < 0:
        raise ValueError(f"file_cost_bytes must not be negative, got {file_cost_bytes}")
    ranges = _contiguous([size + file_cost_bytes for size in sizes], shard_bytes)
    return [
        RehashShard(index=index, start=start, end=end, size_bytes=sum(sizes[start:end]))
        for index, (start, end) in enumerate(ranges)
    ]


def group_shards(
    shards: Sequence[RehashShard],
    *,
    task_bytes: int = DEFAULT_TASK_BYTES,
    workers: int | None = None,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
) -> list[tuple[int, int]]:
    """Cut a re-hash plan into runs of consecutive shards, each run one task
    for a cluster.

    Returns ``(first, end)`` ranges of positions in ``shards``: contiguous,
    in plan order, covering every shard exactly once, each at least one
    shard. A shard costs ``size_bytes + file_cost_bytes`` per artifact, as in
    :func:`plan_rehash`. A run holds only shards that follow one another in
    the registry (each starting where the previous one ends), and closes as
    soon as its cost reaches its target:
    ``task_bytes``, or, when ``workers`` is given, the smaller of
    ``task_bytes`` and the cost not yet handed out divided by
    ``GUIDED_TASKS_PER_WORKER * workers`` (guided self-scheduling: large
    tasks first, smaller ones at the end, so that the workers, taking tasks
    in order as they free up, finish within a small task of each other).
    ``[]`` for no shards. Raises ValueError for a non-positive
    ``task_bytes`` or ``workers`` or a negative ``file_cost_bytes``.
    """
    if task_bytes <= 0:
        raise ValueError(f"task_bytes must be positive, got {task_bytes}")
    if workers is not None and workers <= 0:
        raise ValueError(f"workers must be positive, got {workers}")
    if file_cost_bytes < 0:
        raise ValueError(f"file_cost_bytes must not be negative, got {file_cost_bytes}")
    costs = [shard.size_bytes + file_cost_bytes * (shard.end - shard.start) for shard in shards]
    remaining = sum(costs)
    ranges: list[tuple[int, int]] = []
    first = total = 0
    target = task_bytes
    for position, cost in enumerate(costs):
        if total == 0 and workers is not None:  # a new run: its target from the work left
            target = min(task_bytes, max(1, remaining // (GUIDED_TASKS_PER_WORKER * workers)))
        total += cost
        apart = position + 1 < len(shards) and shards[position + 1].start != shards[position].end
        if total >= target or apart:
            ranges.append((first, position + 1))
            remaining -= total
            first, total = position + 1, 0
    if first < len(costs):
        ranges.append((first, len(costs)))
    return ranges


class EvaluationShard(msgspec.Struct, frozen=True, kw_only=True):
    """A contiguous range of task ids (sorted) to evaluate together.

    Fields:
        index: 0-based position of the shard in its plan.
        start: index of the first task id; ``end``: one past the last.
        observations: observations the shard decodes and gates.
    """

    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=0)]
    observations: Annotated[int, msgspec.Meta(ge=0)]


def plan_evaluation(
    observation_counts: Sequence[int], *, shard_observations: int = DEFAULT_SHARD_OBSERVATIONS
) -> list[EvaluationShard]:
    """Cut tasks (given by their observation counts, in task id order) into
    shards balanced by observations; a task never spans two shards (its
    groups are evaluated together) and counts at least 1 (a task without
    observations is still evaluated). Raises ValueError for a non-positive
    ``shard_observations``.
    """
    if shard_observations <= 0:
        raise ValueError(f"shard_observations must be positive, got {shard_observations}")
    ranges = _contiguous([max(count, 1) for count in observation_counts], shard_observations)
    return [
        EvaluationShard(index=index, start=start, end=end, observations=sum(observation_counts[start:end]))
        for index, (start, end) in enumerate(ranges)
    ]
