"""The HTML report page and its plots: self-contained (nothing fetched),
hostile text kept as text, the non-empirical banner exactly when the run
says so, the exact figures printed, the gates matrix, every repetition
drawn with the run, unique ids across all inline SVGs; and the comparison
page. The same bytes every time (and in a fresh interpreter), and any
report the schema accepts rendering, are in
``tests/integration/test_html_render_pages.py`` (each draws many plots)."""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser

import msgspec
import pytest

from eceb_worker.families.eceb.comparison import Thresholds, compare_reports
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.report import Report, ReportInputs, reduce_report
from eceb_worker.families.eceb.run import Observation
from eceb_worker.families.eceb.verdicts import TaskResult
from eceb_worker.render.comparison_html import comparison_html
from eceb_worker.render.html import GROUP_GATES, report_html
from eceb_worker.render.plots import Repetition, ladder_plot, repetitions_of, tokens_plot
from tests.support.evaluation_builders import baseline, evaluate, obs, reps, task

pytestmark = pytest.mark.unit

ROOT = "e" * 64
HOSTILE = '<script>alert("x")</script>&amp;<b>bold</b> $x$ id="y'
SVG = "{http://www.w3.org/2000/svg}"


def passing_observations(task_id: str = "t") -> list[Observation]:
    """Passes at 200 (150 tokens, 1,234 micro-USD); 100 fails on quality;
    a naive_top_k group at 200 fails on policy."""
    observations = [
        *baseline(cost=2_000),
        *reps(2, budget=100, tokens=90, quality=100),
        *reps(2, budget=200, tokens=150, cost=1_234),
        *reps(2, strategy="naive_top_k", budget=200, tokens=180, selected=("req", "denied")),
    ]
    return [msgspec.structs.replace(o, task_id=task_id) for o in observations]


def negative_observations() -> list[Observation]:
    """Passes at 200 with more prompt tokens than the baseline (150 > 100)."""
    the_task = task(task_id="negative")
    return [
        *baseline(tokens=100, cost=100, the_task=the_task),
        *reps(2, the_task=the_task, budget=200, tokens=150, cost=150),
    ]


def failing_observations() -> list[Observation]:
    """No budget passes: every compiled group misses the quality floor."""
    the_task = task(task_id="failing")
    return [
        *baseline(the_task=the_task),
        *(obs(budget=b, repetition=r, the_task=the_task, quality=10) for b in (100, 200) for r in (1, 2)),
    ]


def result_of(observations: list[Observation], task_id: str) -> TaskResult:
    return evaluate(observations, task(task_id=task_id))


def make_report(
    *, non_empirical: bool = True, hostile: bool = False
) -> tuple[Report, dict[str, tuple[Repetition, ...]]]:
    runs = {
        "passing": passing_observations("passing"),
        "negative": negative_observations(),
        "failing": failing_observations(),
    }
    if hostile:
        runs[HOSTILE] = passing_observations(HOSTILE)
    results = [result_of(observations, task_id) for task_id, observations in runs.items()]
    inputs = ReportInputs(
        benchmark_id="bench", task_root=ROOT, corpus_root=ROOT, artifact_count=4, run_id="run-1", run_digest=ROOT
    )
    report = reduce_report(
        results,
        inputs=inputs,
        claim_class="conformance_seed" if non_empirical else "public_reproduction",
        non_empirical=non_empirical,
        factorial_experiment=None,
        eceb_version="0.1.0",
        disclosure_check=DISCLOSURE_OFF,
    )
    return report, {task_id: repetitions_of(observations) for task_id, observations in runs.items()}


@functools.cache
def rendered(*, non_empirical: bool = True, with_repetitions: bool = False) -> bytes:
    """The page of :func:`make_report`'s report (with its repetitions or
    without), rendered once for all the tests that read it (each page draws
    every task's plots); fresh renders are compared byte for byte in
    ``tests/integration/test_html_render_pages.py``."""
    report, repetitions = make_report(non_empirical=non_empirical)
    return report_html(report, repetitions if with_repetitions else None)


class Page(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self, data: bytes) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(data.decode("utf-8"))
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "wbr":  # a line-break opportunity inside a word: no space
            self.text.append("\x00")

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all_text(self) -> str:
        return " ".join(" ".join(self.text).replace(" \x00 ", "").split())

    def ids(self) -> list[str]:
        return [value for _, attrs in self.tags for name, value in attrs.items() if name == "id" and value]


def test_self_contained_nothing_fetched() -> None:
    data = rendered(with_repetitions=True)
    page = Page(data)
    tags = {tag for tag, _ in page.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "image", "base"}
    for tag, attrs in page.tags:
        for name in ("src", "href", "xlink:href", "action", "srcset"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith("#"), (tag, name, value)
                assert "http:" not in value and "https:" not in value and "//" not in value
    text = data.decode()
    assert "@import" not in text and "@font-face" not in text
    assert all(ref.startswith("url(#") for ref in _urls(text)), set(_urls(text))
    assert text.startswith("<!DOCTYPE html>") and text.endswith("</html>\n")


def _urls(text: str) -> list[str]:
    found, at = [], text.find("url(")
    while at >= 0:
        found.append(text[at : at + 6])
        at = text.find("url(", at + 1)
    return found


def test_every_id_is_unique_across_the_inline_plots() -> None:
    report, _ = make_report()
    page = Page(rendered(with_repetitions=True))
    ids = page.ids()
    repeated = [i for i, n in Counter(ids).items() if n > 1]
    assert not repeated
    svgs = [attrs for tag, attrs in page.tags if tag == "svg"]
    assert len(svgs) == 2 * len(report.tasks)
    assert all(attrs.get("class") == "plot" and attrs.get("role") == "img" for attrs in svgs)
    references = [v for _, a in page.tags for k, v in a.items() if k == "xlink:href" and v]
    assert references and all(ref[1:] in set(ids) for ref in references)


def test_hostile_task_id_stays_text() -> None:
    report, repetitions = make_report(hostile=True)
    data = report_html(report, repetitions)
    page = Page(data)
    assert "script" not in {tag for tag, _ in page.tags}
    assert "b" not in {tag for tag, _ in page.tags}
    assert HOSTILE in page.all_text()
    assert b"&lt;script&gt;" in data


@pytest.mark.parametrize("non_empirical", [True, False])
def test_non_empirical_banner_iff_the_run_says_so(non_empirical: bool) -> None:
    page = Page(rendered(non_empirical=non_empirical))
    assert ("non-empirical" in page.ids()) is non_empirical
    assert ("NON-EMPIRICAL" in page.all_text()) is non_empirical
    assert ("conformance_seed" if non_empirical else "public_reproduction") in page.all_text()


@pytest.mark.parametrize("non_empirical", [True, False])
def test_the_header_prints_the_claim_class_with_its_meaning(non_empirical: bool) -> None:
    report, _ = make_report(non_empirical=non_empirical)
    text = " ".join(Page(rendered(non_empirical=non_empirical)).all_text().split())
    meaning = (
        "synthetic or hand-authored records proving the evaluator's behaviour; not a model-performance claim"
        if non_empirical
        else "a public, immutable corpus and a replayable model and judge configuration"
    )
    assert f"Claim class {report.claim_class} : {meaning}. Never upgraded: a result of one claim class is not " in text
    assert "not evidence for a stronger one (ECEB-0.1 §15)." in text
    assert "provider-reported; local counts absent" in text


def test_the_figures_are_printed_exactly() -> None:
    report, _ = make_report()
    text = Page(rendered()).all_text()
    tasks = {t.task_id: t for t in report.tasks}
    passing, negative = tasks["passing"], tasks["negative"]
    assert passing.passed and negative.passed and not tasks["failing"].passed
    assert report.summary.passing_tasks == 2 and report.summary.total_tasks == 3
    assert "2/3" in text
    # 1000 -> 150 tokens: 8,500 bps; the mean over both passing tasks: (8,500 + 0) // 2.
    assert passing.token_savings_bps == 8_500 and negative.token_savings_bps == 0
    assert "85.00 % (8,500 bps)" in text
    assert "42.50 %" in text and "4,250 bps" in text
    assert "floored mean over 2 passing task(s): 8,500 bps ÷ 2" in text
    # Cost: 2,000 -> 1,234 micro-USD.
    assert "$0.002000 (2,000 micro-USD)" in text and "$0.001234 (1,234 micro-USD)" in text
    assert "38.30 % (3,830 bps)" in text
    # The negative saving, before it saturates: 100 -> 150 tokens is -5,000 bps.
    assert "-50.00 % (-5,000 bps)" in text and "saturates it to 0.00 % (0 bps)" in text
    assert "its minimum viable budget is 200 tokens" in text
    assert "no budget of its ladder (100, 200, 300) passes every gate" in text
    assert f"floor τ {passing.quality_floor_milli} / 1000" in text


def _matrix(data: bytes, anchor: str) -> dict[str, dict[str, str]]:
    """The gates matrix of the task section ``anchor``: gate -> column -> cell."""
    text = data.decode().replace("<wbr>", "")  # the line-break opportunities inside ids
    section = text[text.index(f'id="{anchor}"') :]
    start = section.index('<table class="matrix">')
    table = section[start : section.index("</table>", start)]
    rows = table.split("<tr>")[1:]
    head = [cell.split("</th>")[0].split(">")[-1] for cell in rows[0].split("<th")[2:]]
    matrix = {}
    for row in rows[1:]:
        gate = row.split("</th>")[0].split(">")[-1]
        cells = [cell.split('"')[0] for cell in row.split('class="cell ')[1:]]
        matrix[gate] = dict(zip(head, cells, strict=True))
    return matrix


def test_gates_by_group_matrix() -> None:
    report, _ = make_report()
    anchor = f"task-{[t.task_id for t in report.tasks].index('passing') + 1}"
    matrix = _matrix(rendered(), anchor)
    assert list(matrix) == [*GROUP_GATES, "group"]
    assert list(matrix["quality"]) == [
        "baseline",
        "compiled @ 100",
        "compiled @ 200",
        "compiled @ 300",
        "naive_top_k @ 200",
    ]
    assert matrix["quality"]["compiled @ 100"] == "fail"
    assert matrix["quality"]["compiled @ 200"] == "pass"
    assert matrix["policy"]["naive_top_k @ 200"] == "fail"
    assert matrix["repetitions"]["compiled @ 300"] == "fail"
    assert matrix["quality"]["compiled @ 300"] == "none"
    assert matrix["group"] == {
        "baseline": "pass",
        "compiled @ 100": "fail",
        "compiled @ 200": "pass",
        "compiled @ 300": "fail",
        "naive_top_k @ 200": "fail",
    }


def test_failed_assertions_listed_and_marked() -> None:
    report, _ = make_report()
    data = rendered().decode()
    text = Page(data.encode()).all_text()
    passing = next(t for t in report.tasks if t.task_id == "passing")
    for assertion in passing.failed_assertions:
        assert assertion.message in text
    section = data[data.index('id="task-3"') :]  # "passing": every failure of a passing task does not decide
    section = section[: section.index("</section>")]
    assert section.count('class="undeciding"') == len(passing.failed_assertions)
    failing = data[data.index('id="task-1"') :]
    failing = failing[: failing.index("</section>")]
    assert 'class="decides"' in failing and "decides the verdict" in failing


def data_markers(svg: str) -> int:
    """Markers drawn in a plot's axes (its legend left out)."""
    root = ET.fromstring(svg)
    axes = next(g for g in root.iter(f"{SVG}g") if g.get("id", "").endswith("-axes_1"))
    return sum(len(list(g.iter(f"{SVG}use"))) for g in axes.iter(f"{SVG}g") if "PathCollection" in g.get("id", ""))


def test_plots_draw_every_repetition_with_the_run_and_group_figures_without() -> None:
    observations = [
        *baseline(),
        *reps(3, budget=100, tokens=90, quality=100),
        *(obs(budget=200, repetition=r, tokens=150, quality=870 + r) for r in (1, 2, 3)),
    ]
    result = evaluate(observations)
    repetitions = repetitions_of(observations)
    for plot in (ladder_plot, tokens_plot):
        # 6 repetitions, and a cross at budget 300 (no observation).
        assert data_markers(plot(result, repetitions, plot_id="p")) == 7
    # Without the run: each group's mean (2), the lowest quality where it differs (budget 200), the cross.
    assert data_markers(ladder_plot(result, None, plot_id="p")) == 4
    assert data_markers(tokens_plot(result, None, plot_id="p")) == 3


def test_plots_are_deterministic_svg_text() -> None:
    result = evaluate(passing_observations())
    first = ladder_plot(result, None, plot_id="ladder-1")
    assert first == ladder_plot(result, None, plot_id="ladder-1")
    assert first.startswith('<svg class="plot" role="img" aria-label="quality against budget" id="ladder-1" ')
    assert "<text" in first and "@font-face" not in first and "<?xml" not in first and "DOCTYPE" not in first
    assert "Matplotlib" not in first and "<dc:date>" not in first
    assert f"floor τ {result.quality_floor_milli}" in first and "minimum viable budget 200" in first


def test_page_says_where_the_repetitions_come_from() -> None:
    assert "render with the run" in Page(rendered()).all_text()
    assert "Every repetition of the run is drawn" in Page(rendered(with_repetitions=True)).all_text()


def test_comparison_page() -> None:
    old, _ = make_report()
    worse = [
        t
        if t.task_id != "passing"
        else msgspec.structs.replace(t, passed=False, token_savings_bps=None, cost_savings_bps=None)
        for t in old.tasks
    ]
    new = msgspec.structs.replace(old, claim_class="public_reproduction", tasks=tuple(worse))
    comparison = compare_reports(old, new, Thresholds())
    data = comparison_html(comparison, old, new)
    assert data == comparison_html(comparison, old, new)
    page = Page(data)
    text = page.all_text()
    assert comparison.regressed and "REGRESSED" in text
    assert "pass_to_fail" in text and "claim classes differ" in text
    assert [attrs.get("id") for tag, attrs in page.tags if tag == "svg"] == ["savings", "budgets"]
    assert not [i for i, n in Counter(page.ids()).items() if n > 1]
    same = compare_reports(old, old, Thresholds())
    assert "no regression" in Page(comparison_html(same, old, old)).all_text()


def test_comparison_page_keeps_hostile_ids_as_text() -> None:
    old, _ = make_report(hostile=True)
    data = comparison_html(compare_reports(old, old, Thresholds()), old, old)
    page = Page(data)
    assert "script" not in {tag for tag, _ in page.tags}
    assert HOSTILE in page.all_text()
