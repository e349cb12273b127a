"""Paired differences, overview minus task (A − B), summarized
descriptively (task-context-benchmark-reference.md, "Credit and quality
calculation": "Pair differences are overview minus task; medians and
ranges summarize matched differences. Known/unknown coverage belongs to
each metric"; "Three repeats support descriptive values only").

:func:`difference` is one pair's A − B of one metric, or the reason it is
unknown. :func:`summarize` gives, over the matched pairs of one metric,
the median (the exact midpoint of the two middle values for an even
count), the minimum, the maximum, how many differences are positive,
negative and zero, and the coverage: how many are known and why each
other one is not. No p-value and no interval. Every figure is an exact
decimal string (token counts are integers, credits exact decimals, so a
midpoint is a finite decimal too). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import msgspec

from eceb_worker.families.paired.credits import exact_decimal

__all__ = ["Difference", "MetricSummary", "difference", "summarize"]


class Difference(msgspec.Struct, frozen=True, kw_only=True):
    """One matched pair's A − B of one metric: ``value`` (an exact decimal
    string) or ``None`` with ``unknown``, the reason."""

    pair: int
    value: str | None
    unknown: str | None


def difference(pair: int, a: Fraction | int | None, b: Fraction | int | None, why: str = "") -> Difference:
    """A − B for schedule pair ``pair``; unknown when either side is (``why``
    says why, else which arm's value is missing)."""
    if a is None or b is None:
        missing = "A and B" if a is None and b is None else "A" if a is None else "B"
        return Difference(pair=pair, value=None, unknown=why or f"arm {missing} has no value")
    return Difference(pair=pair, value=exact_decimal(Fraction(a) - Fraction(b)), unknown=None)


class MetricSummary(msgspec.Struct, frozen=True, kw_only=True):
    """The matched differences of one metric, summarized.

    Fields: ``metric``; ``known`` and ``unknown`` (counts) and
    ``unknown_reasons`` (``"pair N: why"``, by pair); ``median``,
    ``minimum``, ``maximum`` (exact decimal strings, ``None`` with no known
    difference); ``positive``, ``negative``, ``zero`` (A − B above, below,
    at zero: positive means the task cue arm used less).
    """

    metric: str
    known: int
    unknown: int
    unknown_reasons: tuple[str, ...]
    median: str | None
    minimum: str | None
    maximum: str | None
    positive: int
    negative: int
    zero: int


def summarize(metric: str, differences: Sequence[Difference]) -> MetricSummary:
    """The summary of ``differences`` (any order: the result does not depend on it)."""
    ordered = sorted(differences, key=lambda d: d.pair)
    values = sorted(Fraction(d.value) for d in ordered if d.value is not None)
    reasons = tuple(f"pair {d.pair}: {d.unknown}" for d in ordered if d.value is None)
    median: str | None = None
    if values:
        middle = len(values) // 2
        exact = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
        median = exact_decimal(exact)
    return MetricSummary(
        metric=metric,
        known=len(values),
        unknown=len(reasons),
        unknown_reasons=reasons,
        median=median,
        minimum=exact_decimal(values[0]) if values else None,
        maximum=exact_decimal(values[-1]) if values else None,
        positive=sum(1 for v in values if v > 0),
        negative=sum(1 for v in values if v < 0),
        zero=sum(1 for v in values if v == 0),
    )
