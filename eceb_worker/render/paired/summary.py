"""Text and CSV of ``eceb pair summary`` (the JSON document is the
:class:`~eceb_worker.families.paired.summary.Summary` itself, canonical).

:func:`summary_lines` is the table people read on a terminal: every pair
with both arms' outcomes and credit estimates and its preferred arm, what
keeps an attempt or a pair from counting, the differences (A − B)
summarized overall and per task with their coverage, the schedule check,
the verdict or every reason there is none, and what the figures are not.
:func:`csv_rows` gives the matched pairs, one row each, for analysis
elsewhere. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from eceb_worker.families.paired.differences import MetricSummary
from eceb_worker.families.paired.summary_document import METRICS, AttemptSummary, Breakdown, PairSummary, Summary

__all__ = ["csv_rows", "summary_lines", "verdict_line"]

CSV_HEADER: Final = (
    "directory",
    "position",
    "task",
    "repeat",
    "order",
    "pilot",
    "complete",
    "outcome_A",
    "outcome_B",
    "preferred",
    *(f"{column}_{metric}" for metric in METRICS for column in ("A", "B", "A_minus_B")),
)
"""The CSV's columns: the pair, both outcomes, the preferred arm, then each
metric's A, B and A − B (empty when unknown)."""


def _measure(attempt: AttemptSummary | None, metric: str) -> str:
    if attempt is None:
        return ""
    found = next((m for m in attempt.measures if m.metric == metric), None)
    return found.value if found is not None and found.value is not None else ""


def _arms(pair: PairSummary) -> tuple[AttemptSummary | None, AttemptSummary | None]:
    by_arm = {arm.arm.value: arm for arm in pair.arms}
    return by_arm.get("A"), by_arm.get("B")


def csv_rows(summary: Summary) -> list[list[str]]:
    """:data:`CSV_HEADER`, then one row per pair directory, by position."""
    rows = [list(CSV_HEADER)]
    for pair in summary.pairs:
        a, b = _arms(pair)
        row = [
            pair.directory,
            "" if pair.position is None else str(pair.position),
            pair.task.value if pair.task is not None else "",
            "" if pair.repeat is None else str(pair.repeat),
            "/".join(arm.value for arm in pair.order) if pair.order is not None else "",
            "" if pair.pilot is None else str(pair.pilot).lower(),
            str(pair.complete).lower(),
            a.outcome.value if a is not None else "",
            b.outcome.value if b is not None else "",
            pair.preferred.value if pair.preferred is not None else "",
        ]
        for metric in METRICS:
            shown = next(d for d in pair.differences if d.metric == metric)
            row += [_measure(a, metric), _measure(b, metric), shown.value or ""]
        rows.append(row)
    return rows


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def _credit(attempt: AttemptSummary | None) -> str:
    if attempt is None or attempt.credits is None:
        return "-"
    if attempt.credits.credits is not None:
        return attempt.credits.credits
    return f"unavailable ({attempt.credits.unavailable.value if attempt.credits.unavailable else '?'})"


def _metric_rows(metrics: Sequence[MetricSummary]) -> list[list[str]]:
    rows = [["metric", "median", "min", "max", "+", "-", "0", "known", "unknown"]]
    for m in metrics:
        rows.append(
            [
                m.metric,
                m.median or "-",
                m.minimum or "-",
                m.maximum or "-",
                str(m.positive),
                str(m.negative),
                str(m.zero),
                str(m.known),
                str(m.unknown),
            ]
        )
    return rows


def _unknowns(metric: MetricSummary) -> list[str]:
    """The metric's unknown reasons, each said once with the pairs it holds for."""
    pairs: dict[str, list[str]] = {}
    for reason in metric.unknown_reasons:
        where, _, why = reason.partition(": ")
        pairs.setdefault(why, []).append(where.removeprefix("pair "))
    return [f"{metric.metric} unknown in pairs {', '.join(shown)}: {why}" for why, shown in pairs.items()]


def _breakdown(group: Breakdown, indent: str = "  ") -> list[str]:
    lines = [f"{indent}{group.group} ({group.pairs} pairs):"]
    lines += _table(_metric_rows(group.metrics), indent + "  ")
    for metric in group.metrics:
        lines += [f"{indent}    {line}" for line in _unknowns(metric)]
    return lines


def verdict_line(summary: Summary) -> str:
    """The verdict in one line: ``verdict: <result>`` (labelled synthetic
    when it is) or ``verdict: none (<n> reasons)``; what ``eceb pair summary
    -q`` prints."""
    verdict = summary.verdict
    if verdict.reached:
        label = " (synthetic: verifies software handling only)" if verdict.synthetic else ""
        return f"verdict: {verdict.result}{label}"
    return f"verdict: none ({len(verdict.reasons)} reasons)"


def summary_lines(summary: Summary) -> list[str]:
    """The lines of ``summary`` for a terminal (module)."""
    lines = [f"paired summary: {len(summary.pairs)} pair directories, freeze {summary.freeze_digest}"]
    lines.append(f"  {summary.label}")
    if summary.statement is not None:
        lines.append(f"  SYNTHETIC: {summary.statement}")
    lines.append(f"  repository {summary.repository} at {summary.reviewed_revision}")
    lines += [f"  ! {problem}" for problem in summary.repository_problems]
    rows = [["pair", "task", "rep", "order", "A", "B", "A credits", "B credits", "A-B credits", "preferred"]]
    for pair in summary.pairs:
        a, b = _arms(pair)
        credits = next(d for d in pair.differences if d.metric == "credits")
        rows.append(
            [
                "?" if pair.position is None else str(pair.position) + (" pilot" if pair.pilot else ""),
                pair.task.value if pair.task is not None else pair.name,
                "" if pair.repeat is None else str(pair.repeat),
                "/".join(arm.value for arm in pair.order) if pair.order is not None else "",
                a.outcome.value if a is not None else "-",
                b.outcome.value if b is not None else "-",
                _credit(a),
                _credit(b),
                credits.value or "unknown",
                pair.preferred.value if pair.preferred is not None else "none",
            ]
        )
    lines.append("pairs (credit estimates, not account billing):")
    lines += _table(rows)
    for pair in summary.pairs:
        shown = f"pair {pair.position}" if pair.position is not None else pair.name
        if not pair.complete:
            lines.append(f"  {shown} ({pair.directory}) does not count:")
            lines += [f"    - {problem}" for problem in pair.problems]
        for arm in pair.arms:
            if arm.outcome.value != "passed":
                lines.append(f"  {shown} arm {arm.arm.value}: {arm.outcome.value} ({arm.state})")
                lines += [f"    - {reason}" for reason in arm.reasons]
    lines.append("differences, overview minus task cue (A - B); positive: the task cue arm used less:")
    lines += _breakdown(summary.overall)
    for group in summary.per_task:
        lines += _breakdown(group)
    schedule = summary.schedule
    lines.append("schedule:")
    state = "follows the frozen schedule" if schedule.follows_schedule else "does NOT follow the frozen schedule"
    lines.append(f"  executed order ({len(schedule.executed)} executions) {state}")
    lines += [f"    - {deviation}" for deviation in schedule.deviations]
    if schedule.not_executed:
        lines.append(f"  not executed: {', '.join(schedule.not_executed)}")
    imbalance = ", ".join(
        f"{i.task.value if i.task is not None else 'overall'} {i.a_first} A-first : {i.b_first} B-first ({i.ratio})"
        for i in schedule.imbalance
    )
    lines.append(f"  order imbalance of the counted pairs: {imbalance}")
    lines.append("  A-first against B-first pairs (carry-over within a pair shows here):")
    for group in schedule.by_order:
        lines += _breakdown(group, "    ")
    verdict = summary.verdict
    lines.append(verdict_line(summary))
    if verdict.reached:
        lines.append(f"  {verdict.basis}")
    else:
        lines += [f"  - {reason}" for reason in verdict.reasons]
    lines += [f"note: {note}" for note in summary.assessment_notes]
    lines.append(f"note: {summary.credit_label}.")
    lines.append(f"note: {summary.rounding}")
    lines += [f"note: {note}" for note in summary.notes]
    return lines
