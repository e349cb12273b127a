"""Spreading re-hash shards over S3 key prefixes (ECEB-0.1 §5 re-hash, on
object storage): S3 serves a bounded request rate per partitioned key
prefix (:data:`S3_PREFIX_GET_RATE` GET/HEAD requests a second), so the
shards that run at the same time should read from many prefixes, and no
prefix should be read by more shards at once than it serves.

A shard's *prefix* is the partition prefix of the artifacts it reads
(:func:`partition_prefix`: the first ``depth`` directory segments of an
artifact's path below the corpus prefix; docs/INTERPRETATIONS.md, "Which
prefix S3's request rate applies to"). :func:`spread_order` orders shards
so that each prefix's shards are spread evenly over the whole order;
:func:`spread_shards` also says, for ``workers`` workers that take shards in
that order, how many shards of each prefix fall within any ``workers``
consecutive places (the shards running at once when shards take about the
same time: they are cut balanced by cost), and what GET rate each shard of
a prefix may issue so that the prefix stays within its limit.

Pure: no I/O. Ordering shards changes no report byte: answers are reduced
by shard index, in any order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final

import msgspec

from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, RehashShard

__all__ = [
    "S3_PREFIX_GET_RATE",
    "partition_prefix",
    "prefix_cap",
    "spread_order",
    "spread_rehash",
    "spread_shards",
    "window_counts",
]

S3_PREFIX_GET_RATE: Final = 5_500
"""GET and HEAD requests a second that Amazon S3 serves per partitioned
prefix of a bucket (its documented figure; PUT, COPY, POST and DELETE: 3,500)."""

DEFAULT_PREFIX_DEPTH: Final = 1
"""Directory segments of an artifact's path that make its partition prefix:
one, the top-level directory below the corpus prefix (``code/``, ``issue/``)."""


def partition_prefix(path: str, depth: int = DEFAULT_PREFIX_DEPTH) -> str:
    """The partition prefix of artifact ``path`` (relative to the corpus
    prefix, ``/``-separated): its first ``depth`` directory segments, each
    followed by ``/`` (``partition_prefix("code/d001/f1.bin") == "code/"``);
    all its directories when it has fewer; ``""`` for a file at the top of the
    corpus or ``depth`` 0 (the corpus prefix itself). Raises ValueError for a
    negative ``depth``."""
    if depth < 0:
        raise ValueError(f"depth must not be negative, got {depth}")
    directories = path.split("/")[:-1]
    return "".join(segment + "/" for segment in directories[:depth])


def prefix_cap(worker_get_rate: int, limit: int = S3_PREFIX_GET_RATE) -> int:
    """How many workers, each issuing up to ``worker_get_rate`` GET/s, may read
    one prefix at once within ``limit`` GET/s: ``floor(limit / rate)``, at
    least 1 (one worker alone above the limit must itself issue fewer: see
    :attr:`PrefixSpread.shard_get_rates`). Raises ValueError for a
    non-positive rate or limit."""
    if worker_get_rate <= 0 or limit <= 0:
        raise ValueError(f"rates must be positive, got {worker_get_rate} and {limit}")
    return max(1, limit // worker_get_rate)


def spread_rehash(
    shards: Sequence[RehashShard],
    shard_bytes: int,
    *,
    file_cost_bytes: int = DEFAULT_FILE_COST_BYTES,
    depth: int = DEFAULT_PREFIX_DEPTH,
) -> list[int]:
    """The order in which to dispatch a re-hash plan's ``shards`` (cut at
    ``shard_bytes`` with ``file_cost_bytes`` per artifact) over an S3 corpus:
    positions into ``shards``. Each shard's prefix is that of its first
    artifact (``first_path``; :func:`partition_prefix` at ``depth``). The
    full shards are spread over their prefixes (:func:`spread_order`); the
    shrinking shards at the end of the plan (those costing less than
    ``shard_bytes``: :meth:`~eceb_worker.corpus.planning.RehashPlanner.expect`)
    stay last, in plan order, so that workers still finish close together."""
    tail = len(shards)
    while tail > 0 and shards[tail - 1].size_bytes + file_cost_bytes * shards[tail - 1].count < shard_bytes:
        tail -= 1
    head = spread_order([partition_prefix(shard.first_path, depth) for shard in shards[:tail]])
    return [*head, *range(tail, len(shards))]


def spread_order(prefixes: Sequence[str]) -> list[int]:
    """An order of the shards whose prefixes are ``prefixes`` (shard ``i``
    reads ``prefixes[i]``), as positions into ``prefixes``: every position
    exactly once, each prefix's shards in their own order, and the shards of
    each prefix spread evenly over the order.

    At each place ``t`` (0-based) of ``N``, the next shard is taken from the
    prefix furthest behind its share: the largest ``(t + 1) * n_p - N * c_p``
    (``n_p`` the prefix's shards, ``c_p`` those placed so far; ties to the
    prefix with more shards, then the smaller name). Every run of ``w``
    consecutive places then holds at most ``ceil(w * n_p / N) + 1`` shards of
    prefix ``p`` (``tests/unit/test_prefixes.py``). Time: ``N`` times the number
    of distinct shard counts per prefix (at most about ``sqrt(2N)``).
    """
    groups: dict[str, list[int]] = {}
    for position, prefix in enumerate(prefixes):
        groups.setdefault(prefix, []).append(position)
    total = len(prefixes)
    # Prefixes with as many shards as each other, in name order: among them, the
    # one with the fewest placed (the next in turn) is the furthest behind.
    classes: dict[int, deque[str]] = {}
    for prefix in sorted(groups):
        classes.setdefault(len(groups[prefix]), deque()).append(prefix)
    placed = dict.fromkeys(groups, 0)
    order: list[int] = []
    for t in range(total):
        best_lag, best_size = -1, 0
        for size, turn in classes.items():
            if not turn:
                continue
            lag = (t + 1) * size - total * placed[turn[0]]
            if lag > best_lag or (lag == best_lag and size > best_size):
                best_lag, best_size = lag, size
        turn = classes[best_size]
        prefix = turn.popleft()
        order.append(groups[prefix][placed[prefix]])
        placed[prefix] += 1
        if placed[prefix] < best_size:
            turn.append(prefix)
    return order


def window_counts(prefixes: Sequence[str], order: Sequence[int], width: int) -> dict[str, int]:
    """For each prefix, the most of its shards within any ``width``
    consecutive places of ``order`` (all of them when ``width`` is at least
    the number of shards). Raises ValueError for a non-positive ``width``."""
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    counts = dict.fromkeys(prefixes, 0)
    most = dict.fromkeys(prefixes, 0)
    for place, position in enumerate(order):
        prefix = prefixes[position]
        counts[prefix] += 1
        if place >= width:
            counts[prefixes[order[place - width]]] -= 1
        most[prefix] = max(most[prefix], counts[prefix])
    return most


class PrefixSpread(msgspec.Struct, frozen=True, kw_only=True):
    """Shards spread over prefixes (:func:`spread_shards`).

    Fields:
        order: positions into the shards given, in the order to dispatch them.
        prefixes: the distinct prefixes, in name order; the tuples below are
            aligned with it.
        shards: shards of each prefix.
        concurrent: the most shards of each prefix within any ``workers``
            consecutive places of ``order``: the shards of it running at once
            when workers take shards in that order and shards take about the
            same time.
        cap: how many shards of one prefix may run at once
            (:func:`prefix_cap`).
        shard_get_rates: the GET/s one shard of each prefix may issue so that
            ``concurrent`` of them stay within the limit: the worker's rate,
            or ``floor(limit / concurrent)`` where that is lower (integers,
            requests a second).
        peak_get_rates: GET/s of each prefix when ``concurrent`` shards of it
            run at those rates (never above the limit).
    """

    order: tuple[int, ...]
    prefixes: tuple[str, ...]
    shards: tuple[int, ...]
    concurrent: tuple[int, ...]
    cap: int
    shard_get_rates: tuple[int, ...]
    peak_get_rates: tuple[int, ...]

    @property
    def throttled(self) -> tuple[str, ...]:
        """The prefixes whose shards must issue fewer GETs than a worker
        can (more of them run at once than the cap), in name order."""
        return tuple(p for p, n in zip(self.prefixes, self.concurrent, strict=True) if n > self.cap)


def spread_shards(
    prefixes: Sequence[str], *, workers: int, worker_get_rate: int, limit: int = S3_PREFIX_GET_RATE
) -> PrefixSpread:
    """Order the shards whose prefixes are ``prefixes`` (:func:`spread_order`)
    for ``workers`` workers each issuing up to ``worker_get_rate`` GET/s, and
    say what each prefix is asked for (:class:`PrefixSpread`) against
    ``limit`` GET/s per prefix. Raises ValueError for a non-positive
    ``workers``, rate or limit."""
    if workers <= 0:
        raise ValueError(f"workers must be positive, got {workers}")
    cap = prefix_cap(worker_get_rate, limit)
    order = spread_order(prefixes)
    most = window_counts(prefixes, order, workers)
    names = tuple(sorted(most))
    sizes: dict[str, int] = {}
    for prefix in prefixes:
        sizes[prefix] = sizes.get(prefix, 0) + 1
    concurrent = tuple(most[p] for p in names)
    rates = tuple(min(worker_get_rate, limit // n) for n in concurrent)
    return PrefixSpread(
        order=tuple(order),
        prefixes=names,
        shards=tuple(sizes[p] for p in names),
        concurrent=concurrent,
        cap=cap,
        shard_get_rates=rates,
        peak_get_rates=tuple(n * r for n, r in zip(concurrent, rates, strict=True)),
    )
