"""The bundled examples evaluated and rendered as HTML pages by the real
command line (``python -m eceb_cli``, in a fresh process), and a second
night of the enterprise seed with a planted regression, for the browser
tests and the README's screenshot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import EXAMPLES, REPO, SHARED

__all__ = [
    "PUBLIC",
    "PUBLIC_CORPUS",
    "SEED",
    "eceb",
    "evaluate_example",
    "planted_regression",
    "render_page",
]

SEED = EXAMPLES / "enterprise-seed"
PUBLIC = EXAMPLES / "public-eng-mix"
PUBLIC_CORPUS = SHARED / "corpora" / "public-eng-mix" / "files"

_CORPORA = {SEED: SEED / "corpus", PUBLIC: PUBLIC_CORPUS}


def eceb(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``eceb ARGS`` in a fresh interpreter, from the checkout."""
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def evaluate_example(example: Path, report: Path, run: Path | None = None) -> Path:
    """Evaluate ``run`` (the example's own by default) against ``example``'s
    benchmark and corpus into ``report``; exit 0 or 1 (some tasks fail)."""
    corpus = _CORPORA[example]
    if not corpus.is_dir():
        pytest.fail(f"the corpus is expected at {corpus} (../shared beside the checkout)")
    done = eceb("evaluate", example / "benchmark.json", run or example / "run.json", "--corpus", corpus, "-o", report)
    assert done.returncode in (0, 1), done.stderr
    return report


def planted_regression(directory: Path) -> Path:
    """The enterprise seed's run with a regression planted: the
    ``db-failover-steps`` repetitions at budget 512 judged 700 (below its
    floor of 800), so its minimum viable budget rises to 1,024 and its
    savings fall. Returns the run file written in ``directory``."""
    run = json.loads((SEED / "run.json").read_text(encoding="utf-8"))
    for observation in run["observations"]:
        if (observation["task_id"], observation["strategy"], observation.get("budget")) == (
            "db-failover-steps",
            "compiled",
            512,
        ):
            observation["quality_milli"] = 700
    path = directory / "run-regressed.json"
    path.write_text(json.dumps(run), encoding="utf-8")
    return path


def render_page(page: Path, *reports: Path, run: Path | None = None) -> Path:
    """``eceb render REPORTS [--run RUN] --html -o PAGE``; exit 0."""
    extra = ("--run", str(run)) if run is not None else ()
    done = eceb("render", *reports, *extra, "--html", "-o", page)
    assert done.returncode == 0, done.stderr
    return page
