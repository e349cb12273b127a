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
    "EvaluationShard",
    "RehashShard",
    "plan_evaluation",
    "plan_rehash",
]

DEFAULT_SHARD_BYTES: Final = 64 * 1024 * 1024
"""Default cost of one re-hash shard, in byte-equivalents: some 15 ms of work
on one core (about 1,800 files of 4 KiB, or 64 MiB of large files). Small
enough that the processes sharing a plan finish within one shard of each
other, large enough that handing a shard over (well under a millisecond)
stays a few percent of it. A file larger than this is a shard of its own."""

DEFAULT_FILE_COST_BYTES: Final = 32 * 1024
"""Fixed cost charged per artifact (open, stat, read, close), in
byte-equivalents: measured at about 6 us per local file on one core, the time
BLAKE3 takes to hash some 30 KB."""


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
