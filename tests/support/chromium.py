"""A real headless Chromium (Debian's ``chromium``) driven by playwright,
for the HTML report pages: open a local file with every request other than
the file itself refused and recorded, every console error and page error
kept, what the page draws measured, and a screenshot judged not blank.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, Route, sync_playwright

__all__ = ["CHROMIUM", "LAUNCH_ARGS", "Opened", "chromium", "open_page", "picture_stats", "plot_measures"]

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_chromium() -> Path:
    """The browser, or a test failure saying how to install it."""
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (Debian's package)")
    return CHROMIUM


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium (:data:`CHROMIUM`), closed on exit."""
    executable = require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable), args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Opened:
    """A page opened by :func:`open_page`, and what it did while loading."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.requests: list[str] = []
        self.refused: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []


@contextmanager
def open_page(browser: Browser, path: Path, *, width: int = 1280, height: int = 1000) -> Iterator[Opened]:
    """Open ``path`` from ``file://`` in a fresh context: every request is
    recorded, any but the file itself refused (and recorded as refused)."""
    url = path.resolve().as_uri()
    context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=True)
    page = context.new_page()
    opened = Opened(page)

    def route(request_route: Route) -> None:
        if request_route.request.url == url:
            request_route.continue_()
        else:
            opened.refused.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    page.on("request", lambda request: opened.requests.append(request.url))
    page.on("console", lambda message: message.type == "error" and opened.console_errors.append(message.text))
    page.on("pageerror", lambda error: opened.page_errors.append(str(error)))
    try:
        page.goto(url, wait_until="load")
        yield opened
    finally:
        context.close()


_MEASURE = """
() => Array.from(document.querySelectorAll("svg.plot")).map((svg) => {
  const box = svg.getBoundingClientRect();
  const paths = Array.from(svg.querySelectorAll("path"));
  const drawn = paths.filter((p) => { const b = p.getBBox(); return b.width > 0 || b.height > 0; });
  return {
    id: svg.id, width: box.width, height: box.height, paths: paths.length, drawn: drawn.length,
    markers: svg.querySelectorAll("use").length, texts: svg.querySelectorAll("text").length,
  };
})
"""


def plot_measures(page: Page) -> list[dict[str, Any]]:
    """Each inline plot's id, rendered size (CSS pixels), count of paths,
    of paths with a non-empty bounding box, of markers and of texts."""
    measures: list[dict[str, Any]] = page.evaluate(_MEASURE)
    return measures


def picture_stats(png: bytes) -> tuple[int, int]:
    """A PNG's distinct colours and its share of pixels that are not white, in thousandths."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    counts = image.getcolors(maxcolors=image.width * image.height) or []
    white = sum(count for count, colour in counts if colour == (255, 255, 255))
    total = image.width * image.height
    return len(counts), 1000 * (total - white) // total
