"""An HTML page carries no terminal control, whatever a report holds: a
report made by hand (its ids and messages are not checked for control
characters when it is only read back) is shown with each non-printable
character escaped, so ``cat report.html`` cannot rewrite the terminal."""

from __future__ import annotations

import msgspec
import pytest

from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.report import ReportInputs, reduce_report
from eceb_worker.render.html import report_html
from tests.support.evaluation_builders import baseline, evaluate, reps, task

pytestmark = pytest.mark.unit

ROOT = "e" * 64
CONTROLS = "a\x1b]0;title\x07\x1b[2K\x1b[1A\rb"


def test_a_page_escapes_the_controls_of_a_hand_made_id() -> None:
    the_task = task(task_id=CONTROLS)
    observations = [*baseline(cost=2_000, the_task=the_task), *reps(2, the_task=the_task, budget=200, tokens=150)]
    observations = [msgspec.structs.replace(o, task_id=CONTROLS) for o in observations]
    inputs = ReportInputs(
        benchmark_id="bench", task_root=ROOT, corpus_root=ROOT, artifact_count=4, run_id="run-1", run_digest=ROOT
    )
    report = reduce_report(
        [evaluate(observations, the_task)],
        inputs=inputs,
        claim_class="conformance_seed",
        non_empirical=True,
        factorial_experiment=None,
        eceb_version="0.1.0",
        disclosure_check=DISCLOSURE_OFF,
    )
    page = report_html(report, None).decode("utf-8")
    assert not any(not character.isprintable() and character not in "\n" for character in page)
    assert "\\x1b]0;title\\x07" in page
