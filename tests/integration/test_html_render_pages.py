"""The HTML report's pages, whole: the same bytes every time and in a fresh
interpreter, and any report the schema accepts renders, both pages without
markup from the report. Each renders the pages many times (every task's
plots drawn with matplotlib), hence this tier; the page's parts are pinned
in ``tests/unit/test_html_render.py``."""

from __future__ import annotations

import subprocess
import sys

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eceb_worker.families.eceb.comparison import Thresholds, compare_reports
from eceb_worker.families.eceb.verdicts import Assertion, GroupResult, TaskResult
from eceb_worker.render.comparison_html import comparison_html
from eceb_worker.render.html import report_html
from tests.support.paths import REPO
from tests.unit.test_html_render import Page, make_report


def test_same_bytes_twice() -> None:
    report, repetitions = make_report()
    assert report_html(report) == report_html(report)
    assert report_html(report, repetitions) == report_html(report, repetitions)
    assert report_html(report) != report_html(report, repetitions)


_FRESH = """
import sys
from tests.unit.test_html_render import make_report
from eceb_worker.render.html import report_html
report, repetitions = make_report()
sys.stdout.buffer.write(report_html(report, repetitions))
"""


def test_same_bytes_in_a_fresh_interpreter() -> None:
    report, repetitions = make_report()
    fresh = subprocess.run([sys.executable, "-c", _FRESH], cwd=REPO, capture_output=True, check=True, timeout=120)
    assert fresh.stdout == report_html(report, repetitions)


_INT = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
_MAYBE = st.one_of(st.none(), _INT, st.integers(min_value=1, max_value=1 << 20))
_GROUP = st.builds(
    GroupResult,
    strategy=st.sampled_from(["full_permitted_context", "compiled", "naive_top_k"]),
    budget=_MAYBE,
    observations=st.integers(0, 4),
    passed=st.booleans(),
    prompt_tokens=_MAYBE,
    cost_micro_usd=_MAYBE,
    auxiliary_cost_micro_usd=_INT,
    quality_milli=_MAYBE,
    minimum_quality_milli=_MAYBE,
    latency_ms=_MAYBE,
    provenance_coverage_bps=_MAYBE,
    policy_violations=_INT,
    repeatable=st.one_of(st.none(), st.booleans()),
)
_ASSERTION = st.builds(
    Assertion,
    gate=st.sampled_from(["quality", "budget", "policy", "repetitions", "no_viable_budget", "baseline_missing"]),
    strategy=st.sampled_from(["", "full_permitted_context", "compiled", "naive_top_k"]),
    budget=_MAYBE,
    repetition=_MAYBE,
    message=st.text(max_size=30),
)
_TASK = st.builds(
    TaskResult,
    task_id=st.text(max_size=60),
    passed=st.booleans(),
    minimum_viable_budget=_MAYBE,
    baseline_prompt_tokens=_MAYBE,
    compiled_prompt_tokens=_MAYBE,
    token_savings_bps=_MAYBE,
    baseline_cost_micro_usd=_MAYBE,
    compiled_cost_micro_usd=_MAYBE,
    cost_savings_bps=_MAYBE,
    baseline_quality_milli=_MAYBE,
    quality_floor_milli=_INT,
    compiled_quality_milli=_MAYBE,
    provenance_coverage_bps=_MAYBE,
    policy_violations=_MAYBE,
    repeatability=st.one_of(st.none(), st.booleans()),
    policy_violations_all_groups=_INT,
    failed_assertions=st.lists(_ASSERTION, max_size=3).map(tuple),
    groups=st.lists(_GROUP, max_size=4).map(tuple),
)
_TASKS = st.lists(_TASK, max_size=3, unique_by=lambda t: t.task_id).map(tuple)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=_TASKS, new=_TASKS, non_empirical=st.booleans())
def test_any_report_the_schema_accepts_renders(
    old: tuple[TaskResult, ...], new: tuple[TaskResult, ...], non_empirical: bool
) -> None:
    """Whatever a decodable report holds (edited by hand: budgets that are
    not positive, negative or huge figures, markup in ids and messages),
    both pages render, without a warning (warnings are errors here), and
    nothing in them is markup the report put there."""
    report, _ = make_report(non_empirical=non_empirical)
    before, after = msgspec.structs.replace(report, tasks=old), msgspec.structs.replace(report, tasks=new)
    data = report_html(after)
    assert "script" not in {tag for tag, _ in Page(data).tags}
    comparison = compare_reports(before, after, Thresholds())
    assert "script" not in {tag for tag, _ in Page(comparison_html(comparison, before, after)).tags}
