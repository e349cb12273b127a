"""The HTML page of two evaluation reports compared
(:mod:`eceb_worker.families.eceb.comparison`): self-contained and the same
bytes for the same reports, like the report page (:mod:`~eceb_worker.render.html`).

The header says whether the new report regressed and how many times, says
when the claim classes differ (ECEB-0.1 §15) or either run is
non-empirical, and sets the two reports' claim, tasks passing k/n and mean
savings side by side. Two plots show, task by task, the prompt-token
savings and the minimum viable budget of the old report against the new
one; a table gives every task's change, and every regression is listed
with the thresholds it was judged by. Pure: returns bytes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, Final

import matplotlib as mpl
from markupsafe import Markup
from matplotlib.figure import Figure

from eceb_worker.core.figures import grouped, percent_bps, signed
from eceb_worker.families.eceb.comparison import Comparison, TaskChange
from eceb_worker.families.eceb.report import Report
from eceb_worker.render.comparison import (
    claim_class_note,
    comparison_verdict,
    passing_change_text,
    task_change_text,
)
from eceb_worker.render.html import render_page, report_header
from eceb_worker.render.plots import COLOURS, MARKER_AREA, SETTINGS, SIZE, budget_axis, inline_svg

__all__ = ["comparison_html"]

_LABEL_CHARACTERS: Final = 40
"""A task id longer than this is shortened on a plot's axis (the table gives it whole)."""

_PLOTTED: Final = 300
"""At most this many tasks on a plot (the first, by task id); the table has every task."""


def _label(task_id: str) -> str:
    """A task id as a plot's axis shows it: characters that do not print
    replaced by ``?`` (SVG text is XML), a long id shortened."""
    shown = "".join(c if c.isprintable() else "?" for c in task_id)
    return shown if len(shown) <= _LABEL_CHARACTERS else shown[: _LABEL_CHARACTERS - 1] + "…"


def change_plot(
    tasks: Sequence[TaskChange],
    values: Callable[[TaskChange], tuple[int | None, int | None]],
    *,
    what: str,
    budgets: bool,
    plot_id: str,
) -> str:
    """One figure of every task in ``tasks`` that ``values`` (old, new)
    gives a figure for: the old value a hollow circle, the new one a filled
    dot (red when the task regressed), joined by a line. ``budgets``: the
    values are budgets in tokens (a base-2 logarithmic axis ticked at
    them), else basis points drawn as percent. ``what`` names the axis. An
    ``<svg>`` element whose id is ``plot_id``."""

    def known(task: TaskChange) -> tuple[int | None, int | None]:
        """Its values, a budget that is not positive (only an edited report holds one) left out."""
        old, new = values(task)
        if budgets:
            return (old if old is not None and old > 0 else None, new if new is not None and new > 0 else None)
        return old, new

    shown = [t for t in tasks if any(v is not None for v in known(t))][:_PLOTTED]
    with mpl.rc_context(SETTINGS), warnings.catch_warnings():
        # A task id in a script the bundled font lacks is still text the browser draws.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        height = max(SIZE[1], 0.9 + 0.26 * len(shown))
        figure = Figure(figsize=(SIZE[0], height), layout="constrained")
        axes = figure.add_subplot()
        scale = 1.0 if budgets else 0.01
        seen: set[str] = set()

        def label(key: str) -> str | None:
            if key in seen:
                return None
            seen.add(key)
            return key

        for row, task in enumerate(reversed(shown)):
            old, new = known(task)
            colour = COLOURS["fail"] if task.regressions else COLOURS["pass"]
            if old is not None and new is not None:
                axes.plot([old * scale, new * scale], [row, row], color=COLOURS["naive"], linewidth=1.0)
            if old is not None:
                axes.scatter(
                    [old * scale],
                    [row],
                    facecolors="white",
                    edgecolors=COLOURS["naive"],
                    s=MARKER_AREA,
                    zorder=3,
                    label=label("old"),
                )
            if new is not None:
                key = "new, task regressed" if task.regressions else "new"
                axes.scatter([new * scale], [row], color=colour, s=MARKER_AREA, zorder=4, label=label(key))
        axes.set_yticks(range(len(shown)), [_label(t.task_id) for t in reversed(shown)])
        axes.set_ylim(-0.7, max(len(shown), 1) - 0.3)
        axes.grid(axis="y", visible=False)
        if budgets:
            ladder = sorted({v for t in shown for v in known(t) if v is not None})
            budget_axis(axes, ladder)
        else:
            drawn = [v * scale for t in shown for v in known(t) if v is not None]
            axes.set_xlim(min([0.0, *drawn]) - 5.0, max([100.0, *drawn]) + 5.0)
        axes.set_xlabel(what)
        if not shown:
            axes.text(0.5, 0.5, f"no task has a {what} in either report", transform=axes.transAxes, ha="center")
        handles, labels = axes.get_legend_handles_labels()
        if handles:
            figure.legend(handles, labels, loc="outside right upper")
        return inline_svg(figure, plot_id, f"{what}, old against new, task by task")


def _pair(old: int | None, new: int | None, show: Callable[[int], str], change: int | None, unit: str) -> str:
    before = "—" if old is None else show(old)
    after = "—" if new is None else show(new)
    moved = "" if change is None or change == 0 else f" ({signed(change)} {unit})"
    return f"{before} → {after}{moved}"


def _verdict(passed: bool | None) -> str:
    return "—" if passed is None else ("PASS" if passed else "FAIL")


def _row(task: TaskChange) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "change": task.change,
        "changed": task.changed,
        "regressed": bool(task.regressions),
        "verdict": f"{_verdict(task.old_passed)} → {_verdict(task.new_passed)}",
        "budget": _pair(
            task.old_minimum_viable_budget, task.new_minimum_viable_budget, grouped, task.budget_change, "tokens"
        ),
        "tokens": _pair(
            task.old_token_savings_bps, task.new_token_savings_bps, percent_bps, task.token_savings_change_bps, "bps"
        ),
        "cost": _pair(
            task.old_cost_savings_bps, task.new_cost_savings_bps, percent_bps, task.cost_savings_change_bps, "bps"
        ),
        "violations": _pair(task.old_policy_violations, task.new_policy_violations, grouped, None, ""),
        "gates": ", ".join(task.new_failed_gates),
        "summary": task_change_text(task),
    }


def comparison_html(comparison: Comparison, old: Report, new: Report) -> bytes:
    """The page of ``comparison``, the comparison of report ``old`` with
    report ``new`` (:func:`~eceb_worker.families.eceb.comparison.compare_reports`):
    UTF-8 HTML, the same bytes for the same arguments."""
    change = comparison.summary_change
    thresholds = comparison.thresholds
    return render_page(
        "comparison.html.j2",
        verdict=comparison_verdict(comparison),
        regressed=comparison.regressed,
        claim_note=claim_class_note(comparison),
        roots=[
            what
            for what, differ in (
                ("task roots", comparison.task_roots_differ),
                ("corpus roots", comparison.corpus_roots_differ),
            )
            if differ
        ],
        old=report_header(old),
        new=report_header(new),
        changes={
            "passing": passing_change_text(change.passing_tasks),
            "tokens": "n/a"
            if change.mean_token_savings_bps is None
            else f"{signed(change.mean_token_savings_bps)} bps",
            "cost": "n/a" if change.mean_cost_savings_bps is None else f"{signed(change.mean_cost_savings_bps)} bps",
        },
        thresholds=[
            ("largest allowed fall of token savings", f"{grouped(thresholds.max_token_savings_drop_bps)} bps"),
            ("largest allowed fall of cost savings", f"{grouped(thresholds.max_cost_savings_drop_bps)} bps"),
            ("largest allowed rise of a minimum viable budget", f"{grouped(thresholds.max_budget_increase)} tokens"),
            ("new policy violations allowed", "yes" if thresholds.allow_new_policy_violations else "no"),
            ("newly failing gates allowed", "yes" if thresholds.allow_new_failed_gates else "no"),
            ("removed tasks allowed", "yes" if thresholds.allow_removed_tasks else "no"),
        ],
        regressions=[
            ("whole report" if r.task_id is None else r.task_id, r.kind, r.message) for r in comparison.regressions
        ],
        tasks=[_row(task) for task in comparison.tasks],
        changed=sum(1 for task in comparison.tasks if task.changed),
        savings_plot=Markup(  # noqa: S704 - matplotlib's SVG, its text escaped
            change_plot(
                comparison.tasks,
                lambda t: (t.old_token_savings_bps, t.new_token_savings_bps),
                what="prompt-token savings (%)",
                budgets=False,
                plot_id="savings",
            )
        ),
        budget_plot=Markup(  # noqa: S704
            change_plot(
                comparison.tasks,
                lambda t: (t.old_minimum_viable_budget, t.new_minimum_viable_budget),
                what="minimum viable budget (tokens)",
                budgets=True,
                plot_id="budgets",
            )
        ),
        plotted=min(len(comparison.tasks), _PLOTTED),
    )
