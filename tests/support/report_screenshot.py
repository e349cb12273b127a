"""Regenerate ``docs/report-example.png``, the README's picture of the HTML
report: the enterprise seed evaluated, rendered with its run
(``eceb render REPORT --run RUN --html``), opened in headless Chromium, and
the page's header stacked over one task's section (``db-failover-steps``:
a passing task with failures at a smaller budget), in 256 colours.

    .venv/bin/python -m tests.support.report_screenshot [OUT.png]
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from PIL import Image

from tests.support.chromium import chromium, open_page
from tests.support.paths import REPO
from tests.support.report_pages import SEED, evaluate_example, render_page

OUT = REPO / "docs" / "report-example.png"
TASK = "db-failover-steps"
WIDTH = 1280


def screenshot(out: Path = OUT) -> Path:
    """Write the picture to ``out``; returns it."""
    with tempfile.TemporaryDirectory() as scratch:
        here = Path(scratch)
        report = evaluate_example(SEED, here / "report.json")
        page_path = render_page(here / "report.html", report, run=SEED / "run.json")
        with chromium() as browser, open_page(browser, page_path, width=WIDTH) as opened:
            page = opened.page
            header = page.locator("main > header").screenshot()
            section = page.locator("section.task", has=page.locator("h2", has_text=TASK)).first.screenshot()
    parts = [Image.open(io.BytesIO(png)).convert("RGB") for png in (header, section)]
    margin = 24
    width = max(p.width for p in parts) + 2 * margin
    picture = Image.new("RGB", (width, sum(p.height + margin for p in parts) + margin), "white")
    at = margin
    for part in parts:
        picture.paste(part, (margin, at))
        at += part.height + margin
    picture.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, optimize=True)
    return out


if __name__ == "__main__":
    written = screenshot(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
    print(f"{written}: {written.stat().st_size} bytes")
