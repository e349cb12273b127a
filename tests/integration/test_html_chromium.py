"""The HTML report pages of both bundled examples (rendered with their
runs) and of a comparison with a planted regression, opened in a real
headless Chromium from ``file://``: they load without a console or page
error and request nothing but the file itself, every plot is drawn (a
non-zero box, paths with a non-empty bounding box, markers), and a
screenshot is not blank."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.support.chromium import chromium, open_page, picture_stats, plot_measures
from tests.support.report_pages import PUBLIC, SEED, evaluate_example, planted_regression, render_page

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    here = tmp_path_factory.mktemp("pages")
    seed = evaluate_example(SEED, here / "seed-report.json")
    public = evaluate_example(PUBLIC, here / "public-report.json")
    regressed = evaluate_example(SEED, here / "seed-regressed.json", planted_regression(here))
    return {
        "enterprise-seed": render_page(here / "seed.html", seed, run=SEED / "run.json"),
        "public-eng-mix": render_page(here / "public.html", public, run=PUBLIC / "run.json"),
        "comparison": render_page(here / "comparison.html", seed, regressed),
    }


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


PLOTS = {"enterprise-seed": 2 * 15, "public-eng-mix": 2 * 20, "comparison": 2}


@pytest.mark.parametrize("name", list(PLOTS))
def test_page_loads_offline_with_every_plot_drawn(name: str, pages: dict[str, Path], browser: Browser) -> None:
    path = pages[name]
    with open_page(browser, path) as opened:
        assert opened.console_errors == []
        assert opened.page_errors == []
        assert opened.refused == []
        assert opened.requests == [path.resolve().as_uri()]
        measures = plot_measures(opened.page)
        assert len(measures) == PLOTS[name]
        for plot in measures:
            assert plot["width"] > 100 and plot["height"] > 100, plot
            assert plot["drawn"] > 10 and plot["markers"] > 0 and plot["texts"] > 3, plot
        colours, coloured = picture_stats(opened.page.screenshot())
        assert colours > 50 and coloured > 50, (colours, coloured)
        first_plot = opened.page.locator("svg.plot").first
        first_plot.scroll_into_view_if_needed()
        colours, coloured = picture_stats(first_plot.screenshot())
        assert colours > 20 and coloured > 20, (colours, coloured)


def test_the_seed_page_says_what_a_reader_needs(pages: dict[str, Path], browser: Browser) -> None:
    with open_page(browser, pages["enterprise-seed"]) as opened:
        page = opened.page
        assert page.locator("#non-empirical").is_visible()
        assert "NON-EMPIRICAL" in page.locator("#non-empirical").inner_text()
        body = page.locator("body").inner_text()
        assert "8/15" in body and "72.69 %" in body and "7,269 bps" in body
        assert "floored mean over 8 passing task(s): 58,156 bps ÷ 8" in body
        assert "Every repetition of the run is drawn" in body
        assert page.locator("section.task").count() == 15
        assert page.locator("table.matrix").count() == 15


def test_the_comparison_page_names_the_planted_regression(pages: dict[str, Path], browser: Browser) -> None:
    with open_page(browser, pages["comparison"]) as opened:
        verdict = opened.page.locator("#verdict").inner_text()
        assert "REGRESSED" in verdict
        body = opened.page.locator("body").inner_text()
        assert "db-failover-steps" in body and "budget_up" in body
        assert "minimum viable budget rose from 512 to 1,024 tokens" in body


_WORDS_SPLIT = """
() => {
  // Every run of characters between two break opportunities (a space, or just after _ / - . :)
  // of a header, a heading, a card or a task id must lie on one line: no word is wrapped mid-word.
  const split = [];
  const places = "th, h1, h2, h3, .card .label, .card .value, .card .sub, table.index td:first-child, "
    + "table.changes td:first-child";
  for (const element of document.querySelectorAll(places)) {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      const text = node.data;
      let start = 0;
      for (let i = 0; i <= text.length; i++) {
        const space = i === text.length || /\\s/.test(text[i]);
        const after = !space && /[_\\/\\-.:]/.test(text[i]);
        if (!space && !after) continue;
        const stop = after ? i + 1 : i;
        if (stop - start > 1) {
          const range = document.createRange();
          range.setStart(node, start);
          range.setEnd(node, stop);
          const tops = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0)
            .map((r) => Math.round(r.top)));
          if (tops.size > 1) split.push(text.slice(start, stop));
        }
        start = i + 1;
      }
    }
  }
  return split;
}
"""


@pytest.mark.parametrize("width", [1280, 900, 600])
@pytest.mark.parametrize("name", list(PLOTS))
def test_no_header_card_or_id_is_wrapped_mid_word(
    name: str, width: int, pages: dict[str, Path], browser: Browser
) -> None:
    with open_page(browser, pages[name], width=width) as opened:
        split = opened.page.evaluate(_WORDS_SPLIT)
        assert split == [], f"wrapped mid-word at {width}px: {split[:10]}"
        overflow = opened.page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px (only a wide table may)"
