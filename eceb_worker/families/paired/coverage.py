"""What each started pair gives each metric's coverage, and the breakdown of
a group of pairs (task-context-benchmark-reference.md, "Credit and quality
calculation": "Known/unknown coverage belongs to each metric"; "Incomplete
journals remain visible").

- :func:`has_started` says whether a pair belongs in the coverage at all;
- :func:`coverage` gives what one pair gives each metric, known or unknown
  with its reason;
- :func:`breakdown` summarizes the differences of a group of pairs
  (median, minimum, maximum, signs, coverage: descriptive values only).

Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from eceb_worker.families.paired.differences import Difference, summarize
from eceb_worker.families.paired.summary_document import METRICS, Breakdown, MetricDifference, Outcome, PairSummary

__all__ = ["NOT_COUNTED", "breakdown", "coverage", "has_started"]


_LACKING: Final = (Outcome.INCOMPLETE, Outcome.NOT_STARTED)
NOT_COUNTED: Final = "the pair does not count and its evidence is missing or changed: it supports no metric"
"""Why each metric of a started pair whose evidence is missing or changed is unknown in the coverage."""


def has_started(pair: PairSummary) -> bool:
    """True when ``pair`` has its schedule position (its manifest was read)
    and an attempt of it started, whatever became of it."""
    return pair.position is not None and any(arm.outcome is not Outcome.NOT_STARTED for arm in pair.arms)


def coverage(pair: PairSummary) -> tuple[MetricDifference, ...]:
    """What ``pair`` gives each metric's coverage, in :data:`METRICS` order.

    A complete pair: its differences. A started pair that does not count
    because an arm's journal is incomplete or did not start (and for no
    other reason): the differences both its arms support (e.g. the cue
    estimates), each other one unknown with its reason. Any other pair that
    does not count (evidence missing or changed): every metric unknown
    (:data:`NOT_COUNTED`), since nothing it shows is trusted."""
    if pair.complete:
        return pair.differences
    lacking = sum(1 for arm in pair.arms if arm.outcome in _LACKING)
    supports = len(pair.arms) == 2 and len(pair.problems) == lacking
    supports = supports and not any(arm.outcome is Outcome.UNVERIFIED for arm in pair.arms)
    if supports:
        return pair.differences
    return tuple(MetricDifference(metric=d.metric, value=None, unknown=NOT_COUNTED) for d in pair.differences)


def breakdown(group: str, pairs: Sequence[PairSummary]) -> Breakdown:
    """The differences of ``pairs`` (any order) summarized, metric by metric:
    what each pair gives the coverage (:func:`coverage`), so a started pair
    that does not count is unknown for every metric it cannot support."""
    metrics = []
    for metric in METRICS:
        found = []
        for pair in pairs:
            shown = next(d for d in coverage(pair) if d.metric == metric)
            found.append(Difference(pair=pair.position or 0, value=shown.value, unknown=shown.unknown))
        metrics.append(summarize(metric, found))
    return Breakdown(group=group, pairs=len(pairs), metrics=tuple(metrics))
