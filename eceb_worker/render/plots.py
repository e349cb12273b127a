"""The two plots of a task on the HTML report page (ECEB-0.1 §10-§12), as
inline SVG text.

:func:`ladder_plot` shows quality (thousandths, 1000 = perfect) against the
budget ladder: every repetition of every ``compiled`` (and budgeted
``naive_top_k``) group when the run's repetitions are given, otherwise each
group's floored mean and lowest quality as the report holds them; the
dynamic floor τ and the baseline's quality as horizontal lines; the minimum
viable budget as a labelled vertical line. :func:`tokens_plot` shows the
provider-reported prompt tokens against the budget, with the budget line
(prompt tokens = budget: a point above it breaks the budget gate) and the
baseline's prompt tokens.

Drawn with matplotlib's object API (a :class:`~matplotlib.figure.Figure`
and the SVG canvas, never pyplot's global figures), its settings applied in
one ``rc_context``: a fixed figure size, text kept as SVG text (no font
file's glyphs decide the bytes), a fixed hash salt and no date, so the same
input gives the same bytes. Every id in an SVG is prefixed with the plot's
own id, so that many SVGs share one HTML page without a clash. Floats are
used for drawing only; every figure printed on the page is an integer the
report or the run holds. Pure: returns text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import matplotlib as mpl
import msgspec
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from eceb_worker.families.eceb.run import Observation
from eceb_worker.families.eceb.verdicts import GroupResult, TaskResult
from eceb_worker.families.eceb.vocabulary import Strategy
from eceb_worker.render.svg import inline_svg

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = [
    "COLOURS",
    "MARKER_AREA",
    "SETTINGS",
    "SIZE",
    "Repetition",
    "budget_axis",
    "inline_svg",
    "ladder_plot",
    "repetitions_of",
    "tokens_plot",
]

COLOURS: Final = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "floor": "#bc4c00",
    "baseline": "#0969da",
    "budget": "#57606a",
    "minimum": "#8250df",
    "naive": "#6e7781",
}
"""The colours of the plots, shared with the page's legend and matrix."""

SETTINGS: Final[dict[RcKeyType, Any]] = {
    "svg.hashsalt": "eceb-report",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 10.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d0d7de",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 9.0,
    "figure.dpi": 100.0,
    "savefig.facecolor": "white",
    "path.simplify": False,
    "text.parse_math": False,
    "text.usetex": False,
}
"""Every setting the plots depend on; the rest are matplotlib's defaults."""


SIZE: Final = (6.4, 4.0)
"""Every plot's size in inches."""


MARKER_AREA: Final = 36.0
"""Every data marker's area in points² (a disc about 7 points across): its
size does not depend on the axis range, so a group of 100 tokens on an axis
of 35,000 stays as visible as one at the top."""

_MARKER_EDGE: Final[dict[str, Any]] = {"edgecolors": "white", "linewidths": 0.6, "zorder": 5, "clip_on": False}
"""Filled markers are outlined in white and drawn over every line, never
clipped at the axes' edge: a point on a line or on the axis stays visible."""

_NAIVE: Final[dict[str, Any]] = {
    "marker": "^",
    "facecolors": "none",
    "edgecolors": COLOURS["naive"],
    "s": MARKER_AREA,
    "zorder": 5,
    "clip_on": False,
}
"""``naive_top_k``'s markers: hollow grey triangles, drawn as the others are."""

_SPREAD: Final = 0.07
"""Horizontal spread of a group's repetitions, in doublings of the budget
(repetitions of equal quality stay visible side by side)."""


class Repetition(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What the plots show of one observation of the run (ECEB-0.1 §8).

    Fields:
        strategy, budget, repetition: its group and place in it.
        quality_milli: the judge's score, thousandths.
        prompt_tokens: provider-reported prompt tokens (``input_tokens``).
    """

    strategy: Strategy
    budget: int | None
    repetition: int
    quality_milli: int
    prompt_tokens: int


def repetitions_of(observations: Iterable[Observation]) -> tuple[Repetition, ...]:
    """The :class:`Repetition` of each observation, ordered by strategy,
    budget (none first) and repetition."""
    shown = (
        Repetition(
            strategy=o.strategy,
            budget=o.budget,
            repetition=o.repetition,
            quality_milli=o.quality_milli,
            prompt_tokens=o.input_tokens,
        )
        for o in observations
    )
    return tuple(sorted(shown, key=lambda r: (r.strategy, -1 if r.budget is None else r.budget, r.repetition)))


def _budgeted(task: TaskResult) -> list[GroupResult]:
    """The task's groups that have a budget: each ladder budget's
    ``compiled`` group, and budgeted ``naive_top_k`` groups (budgets are
    positive in any evaluation; a report edited to hold others has them
    left off the budget axis, which is logarithmic)."""
    return [
        g for g in task.groups if g.budget is not None and g.budget > 0 and g.strategy in ("compiled", "naive_top_k")
    ]


def _budgets(task: TaskResult) -> list[int]:
    """The budgets the axis shows: those of :func:`_budgeted` groups, and
    the minimum viable budget (always one of them in an evaluation)."""
    budgets = {g.budget for g in _budgeted(task) if g.budget is not None}
    if task.minimum_viable_budget is not None and task.minimum_viable_budget > 0:
        budgets.add(task.minimum_viable_budget)
    return sorted(budgets)


def _spread(budget: int, index: int, count: int) -> float:
    """The x of repetition ``index`` of ``count`` at ``budget``, spread around it."""
    return float(budget * 2.0 ** (_SPREAD * (index - (count - 1) / 2)))


def budget_axis(axes: Axes, budgets: Sequence[int], axis: str = "x") -> None:
    """A base-2 logarithmic budget axis (``axis``: ``"x"`` or ``"y"``),
    ticked at the ``budgets`` themselves (ascending)."""
    scale = axes.set_xscale if axis == "x" else axes.set_yscale
    scale("log", base=2)
    if budgets:
        (axes.set_xlim if axis == "x" else axes.set_ylim)(budgets[0] / 1.5, budgets[-1] * 1.5)
    ticks = axes.xaxis if axis == "x" else axes.yaxis
    ticks.set_major_locator(FixedLocator([float(b) for b in budgets]))
    ticks.set_major_formatter(FuncFormatter(lambda value, _pos: f"{round(value):,}"))
    ticks.set_minor_locator(NullLocator())
    (axes.set_xlabel if axis == "x" else axes.set_ylabel)("budget (tokens)")


def _minimum_viable(axes: Axes, task: TaskResult) -> None:
    """The minimum viable budget (or, for a failing task, its first passing
    budget) as a labelled vertical line."""
    budget = task.minimum_viable_budget
    if budget is None or budget <= 0:
        return
    words = "minimum viable budget" if task.passed else "first passing budget"
    axes.axvline(budget, color=COLOURS["minimum"], linewidth=1.4, label=f"{words} {budget:,}")
    axes.annotate(
        f"{budget:,}",
        xy=(budget, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(3, -10),
        textcoords="offset points",
        color=COLOURS["minimum"],
        fontsize=8,
    )


def _unobserved(axes: Axes, task: TaskResult) -> None:
    """A grey cross at the foot of each budget whose group has no observation."""
    missing = [g.budget for g in _budgeted(task) if g.observations == 0 and g.budget is not None]
    if missing:
        axes.scatter(
            [float(b) for b in missing],
            [0.04] * len(missing),
            transform=axes.get_xaxis_transform(),
            marker="x",
            color=COLOURS["naive"],
            s=30,
            label="no observation",
            zorder=3,
        )


def _by_group(repetitions: Sequence[Repetition]) -> dict[tuple[str, int], list[Repetition]]:
    grouped: dict[tuple[str, int], list[Repetition]] = {}
    for r in repetitions:
        if r.budget is not None and r.budget > 0 and r.strategy in ("compiled", "naive_top_k"):
            grouped.setdefault((r.strategy, r.budget), []).append(r)
    return grouped


def _points(
    axes: Axes,
    task: TaskResult,
    repetitions: Sequence[Repetition] | None,
    value: str,
) -> list[float]:
    """Draw each budgeted group's ``value`` (``quality`` or ``tokens``):
    every repetition, or the group's figures from the report; returns every
    y drawn. A ``compiled`` group's points are green when it passes, red
    when it fails; ``naive_top_k``'s are hollow grey triangles."""
    drawn: list[float] = []
    passed = {(g.strategy, g.budget): g.passed for g in task.groups}
    labelled: set[str] = set()

    def label(key: str) -> str | None:
        if key in labelled:
            return None
        labelled.add(key)
        return key

    if repetitions is not None:
        for (strategy, budget), items in sorted(_by_group(repetitions).items()):
            xs = [_spread(budget, i, len(items)) for i in range(len(items))]
            ys = [float(r.quality_milli if value == "quality" else r.prompt_tokens) for r in items]
            drawn += ys
            if strategy == "naive_top_k":
                axes.scatter(xs, ys, label=label("naive_top_k"), **_NAIVE)
                continue
            ok = passed.get((strategy, budget), False)
            key = "repetition, group passes" if ok else "repetition, group fails"
            axes.scatter(xs, ys, c=COLOURS["pass" if ok else "fail"], s=MARKER_AREA, label=label(key), **_MARKER_EDGE)
        return drawn
    for group in _budgeted(task):
        mean = group.quality_milli if value == "quality" else group.prompt_tokens
        if mean is None or group.budget is None:
            continue
        x = float(group.budget)
        if group.strategy == "naive_top_k":
            axes.scatter([x], [mean], label=label("naive_top_k"), **_NAIVE)
            drawn.append(float(mean))
            continue
        colour = COLOURS["pass" if group.passed else "fail"]
        verdict = "passes" if group.passed else "fails"
        key = f"mean, group {verdict}"
        axes.scatter([x], [mean], c=colour, s=MARKER_AREA, label=label(key), **_MARKER_EDGE)
        drawn.append(float(mean))
        lowest = group.minimum_quality_milli
        if value == "quality" and lowest is not None and lowest != mean:
            axes.vlines(x, lowest, mean, color=colour, linewidth=1.0)
            axes.scatter(
                [x],
                [lowest],
                c=colour,
                marker="v",
                s=MARKER_AREA,
                label=label(f"lowest, group {verdict}"),
                **_MARKER_EDGE,
            )
            drawn.append(float(lowest))
    return drawn


def _task_figure(task: TaskResult) -> tuple[Figure, Axes, list[int]]:
    """A task plot's figure and axes, the budget axis drawn; with the
    task's ladder budgets (inside the caller's ``rc_context``)."""
    figure = Figure(figsize=SIZE, layout="constrained")
    axes = figure.add_subplot()
    budgets = _budgets(task)
    budget_axis(axes, budgets)
    return figure, axes, budgets


def _baseline(axes: Axes, value: int | None, label: str, drawn: list[float]) -> None:
    """The baseline's line at ``value`` (none when unknown), labelled
    ``label.format(value)``; ``value`` joins what the y range must show."""
    if value is not None:
        axes.axhline(value, color=COLOURS["baseline"], linestyle=":", linewidth=1.4, label=label.format(value))
        drawn.append(float(value))


def _finished(figure: Figure, axes: Axes, task: TaskResult, plot_id: str, label: str) -> str:
    """The task plot completed (the minimum viable budget, the groups
    without observation, the legend) as inline SVG."""
    _minimum_viable(axes, task)
    _unobserved(axes, task)
    handles, labels = axes.get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="outside lower center", ncols=2)
    return inline_svg(figure, plot_id, label)


def ladder_plot(task: TaskResult, repetitions: Sequence[Repetition] | None, *, plot_id: str) -> str:
    """The budget-ladder plot of ``task`` (ECEB-0.1 §10), an ``<svg>``
    element whose id is ``plot_id`` (letters, digits, ``-``: unique on the
    page).

    ``repetitions``: the task's observations from the run
    (:func:`repetitions_of`), each drawn at its budget; ``None`` draws each
    group's mean and lowest quality from the report. Lines: the dynamic
    floor τ (``quality_floor_milli``), the baseline's quality, the minimum
    viable budget. Quality is in thousandths.
    """
    with mpl.rc_context(SETTINGS):
        figure, axes, _ = _task_figure(task)
        drawn = _points(axes, task, repetitions, "quality")
        floor = task.quality_floor_milli
        axes.axhline(floor, color=COLOURS["floor"], linestyle="--", linewidth=1.2, label=f"floor τ {floor}")
        drawn.append(float(floor))
        _baseline(axes, task.baseline_quality_milli, "baseline {}", drawn)
        low, high = min(drawn), max(drawn)  # a bottom below the top whatever a report holds
        axes.set_ylim(max(-20.0, min(low, 1000.0) - 60.0), min(1020.0, max(high, 0.0) + 60.0))
        axes.set_ylabel("quality (thousandths)")
        return _finished(figure, axes, task, plot_id, "quality against budget")


def tokens_plot(task: TaskResult, repetitions: Sequence[Repetition] | None, *, plot_id: str) -> str:
    """The prompt-token plot of ``task`` (ECEB-0.1 §11.1, §12), an
    ``<svg>`` element whose id is ``plot_id``: prompt tokens of every
    repetition (``repetitions``, see :func:`ladder_plot`) or each group's
    mean against the budget, the budget line (tokens = budget), the
    baseline's prompt tokens and the minimum viable budget.

    The budget axis is logarithmic (base 2) and the token axis linear
    (from 0, so that every count, 0 included, is drawn): the budget line is
    a cap mark at each ladder budget, at the height of that budget, joined
    to the next by a straight dashed segment (no curve between budgets,
    where no group lies). Markers keep :data:`MARKER_AREA` whatever the
    range of the axis.
    """
    with mpl.rc_context(SETTINGS):
        figure, axes, budgets = _task_figure(task)
        drawn = _points(axes, task, repetitions, "tokens")
        if budgets:
            # The budget axis is base-2 logarithmic: the reference y = budget is drawn at each ladder budget
            # (a cap mark) and joined by straight segments, not as the curve y = x would make between them.
            axes.plot(
                budgets,
                budgets,
                color=COLOURS["budget"],
                linestyle="--",
                linewidth=1.2,
                marker="_",
                markersize=16.0,
                markeredgewidth=1.6,
                zorder=3,
                label="budget (tokens = budget, at each ladder budget)",
                gid="budget-line",
            )
            drawn += [float(b) for b in budgets]
        _baseline(axes, task.baseline_prompt_tokens, "baseline {:,} tokens", drawn)
        top = max([0.0, *drawn]) * 1.1 + 1.0
        axes.set_ylim(-top * 0.03, top)  # a margin below 0: a point of few tokens stands clear of the axis
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{round(value):,}"))
        axes.set_ylabel("prompt tokens")
        return _finished(figure, axes, task, plot_id, "prompt tokens against budget")
