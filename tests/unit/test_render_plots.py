"""The prompt-token plot's budget line and markers, and the line-break
opportunities of ids on the HTML pages (no id wraps between two letters)."""

from __future__ import annotations

import re

import msgspec
import pytest

from eceb_worker.render.html import breakable
from eceb_worker.render.plots import MARKER_AREA, tokens_plot
from tests.unit.test_html_render import make_report

pytestmark = pytest.mark.unit


def _vertices(svg: str, gid: str) -> list[tuple[float, float]]:
    group = svg[svg.index(f'id="p-{gid}"') :]
    path = group[group.index('<path d="') + len('<path d="') :]
    return [(float(x), float(y)) for x, y in re.findall(r"[ML] ([-\d.]+) ([-\d.]+)", path[: path.index('"')])]


def test_the_budget_line_joins_each_ladder_budget_at_its_own_height_with_straight_segments() -> None:
    report, _ = make_report()
    task = next(t for t in report.tasks if t.task_id == "passing")
    budgets = sorted({g.budget for g in task.groups if g.budget and g.strategy in ("compiled", "naive_top_k")})
    assert budgets == [100, 200, 300]
    points = _vertices(tokens_plot(task, None, plot_id="p"), "budget-line")
    assert len(points) == len(budgets)  # one vertex a budget: no sampled curve between them
    (x0, y0), (x1, y1), (x2, y2) = points
    assert x0 < x1 < x2 and y0 > y1 > y2
    # The token axis is linear: the heights rise in proportion to the budgets (100, 200, 300).
    assert abs((y0 - y1) - (y1 - y2)) < 0.01


def _disc_diameters(svg: str) -> list[float]:
    """The width of each disc marker of a plot (SVG units: points)."""
    sizes = []
    for d in re.findall(r'<path id="p-m[0-9a-f]+" d="([^"]+)"', svg):
        if "C" in d:  # discs only (the budget's cap mark is a straight line)
            xs = [float(x) for x in re.findall(r"(-?[\d.]+) -?[\d.]+", d)]
            sizes.append(max(xs) - min(xs))
    return sizes


def test_markers_keep_their_size_on_a_35000_token_axis() -> None:
    report, _ = make_report()
    task = next(t for t in report.tasks if t.task_id == "passing")
    wide = msgspec.structs.replace(task, baseline_prompt_tokens=35_000)
    for shown in (task, wide):
        sizes = _disc_diameters(tokens_plot(shown, None, plot_id="p"))
        assert sizes and all(abs(size - MARKER_AREA**0.5) < 0.1 for size in sizes), sizes


@pytest.mark.parametrize(
    ("given", "html"),
    [
        ("conformance_seed", "conformance_<wbr>seed"),
        ("infra/db-failover.md", "infra/<wbr>db-<wbr>failover.<wbr>md"),
        ("repetition", "repetition"),
        ("a" * 40, "a" * 16 + "<wbr>" + "a" * 16 + "<wbr>" + "a" * 8),
        ("<b>_x&y", "&lt;b&gt;_<wbr>x&amp;y"),
        ("trailing__", "trailing__"),
    ],
)
def test_ids_may_wrap_only_after_their_separators(given: str, html: str) -> None:
    assert str(breakable(given)) == html
