"""Shard plans: how re-hashing is cut into units of work (ECEB-0.1 §5 at scale).

A plan is pure data. The same plan runs in-process (``eceb corpus verify``,
``eceb evaluate``) or on a cluster, and the same reduce turns its partial
results into one report whatever the shard size or completion order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Final

import msgspec

__all__ = ["DEFAULT_FILE_COST_BYTES", "DEFAULT_SHARD_BYTES", "RehashShard", "plan_rehash"]

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
    shards: list[RehashShard] = []
    start = cost = size_total = 0
    for position, size in enumerate(sizes):
        cost += size + file_cost_bytes
        size_total += size
        if cost >= shard_bytes:
            shards.append(RehashShard(index=len(shards), start=start, end=position + 1, size_bytes=size_total))
            start, cost, size_total = position + 1, 0, 0
    if start < len(sizes):
        shards.append(RehashShard(index=len(shards), start=start, end=len(sizes), size_bytes=size_total))
    return shards
