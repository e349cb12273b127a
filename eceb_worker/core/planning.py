"""Cutting work into shards: one rule for every plan (re-hash shards,
ECEB-0.1 §5; evaluation shards, §10-§14).

A plan is pure data: the same plan runs in this process or on a cluster, and
the same reduce turns its partial results into one report whatever the shard
size or completion order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate

__all__ = ["RangeCutter", "cut_ranges"]


class RangeCutter:
    """Cuts costs, as they come, into contiguous ranges: a range closes as
    soon as its total cost reaches ``limit``, so every position falls in
    exactly one range and a position costing ``limit`` or more is a range of
    its own. Costs are non-negative integers.

    Raises ValueError for a non-positive ``limit`` (``name`` is how the
    message calls it).
    """

    def __init__(self, limit: int, *, name: str = "limit") -> None:
        if limit <= 0:
            raise ValueError(f"{name} must be positive, got {limit}")
        self.limit = limit
        self.open_cost = 0
        """Cost of the range still open (less than ``limit``)."""

    def add(self, costs: Sequence[int], next_limit: Callable[[int], int] | None = None) -> list[int]:
        """Take the next ``costs``; returns the offsets ``e`` (``1 <=
        e <= len(costs)``, ascending) at which a range closes, just after
        ``costs[e - 1]``. The range still open at the end stays open.
        ``next_limit(e)``, when given, is called at each close and returns
        the (positive) limit of the range that opens at ``e``."""
        totals = list(accumulate(costs, initial=0))
        count = len(costs)
        closes: list[int] = []
        position = 0
        while position < count:
            # The first position whose cumulative cost reaches the limit closes the range.
            closing = bisect_left(totals, totals[position] + self.limit - self.open_cost, lo=position + 1)
            if closing > count:
                self.open_cost += totals[count] - totals[position]
                break
            closes.append(closing)
            self.open_cost = 0
            position = closing
            if next_limit is not None:
                self.limit = next_limit(closing)
        return closes


def cut_ranges(costs: Sequence[int], limit: int, *, name: str = "limit") -> list[tuple[int, int]]:
    """Every ``(start, end)`` range of ``costs`` as :class:`RangeCutter` cuts
    it: contiguous, in order, covering every position once; ``[]`` for no costs."""
    ends = RangeCutter(limit, name=name).add(costs)
    if not ends or ends[-1] != len(costs):
        ends.append(len(costs))
    starts = [0, *ends[:-1]]
    return [(start, end) for start, end in zip(starts, ends, strict=True) if end > start]
