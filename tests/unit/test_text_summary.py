"""The summary ``eceb evaluate`` prints, worded for a reader who has not
read ECEB-0.1: units spelled out, what the minimum viable budget is,
failures that did not decide a verdict marked, a negative saving shown
before it saturates, a pointer to the HTML report; and the exact integer
formats behind it."""

from __future__ import annotations

import msgspec
import pytest

from eceb_worker.core.figures import grouped, percent, percent_bps, signed, usd
from eceb_worker.families.eceb.disclosure import DEFAULT_DISCLOSURE_CHECK, DISCLOSURE_OFF
from eceb_worker.families.eceb.explanations import decides_verdict, signed_savings_bps
from eceb_worker.families.eceb.report import Report, ReportInputs, reduce_report
from eceb_worker.families.eceb.verdicts import TaskResult
from eceb_worker.render.text import (
    MINIMUM_VIABLE_BUDGET,
    NOT_DECIDING,
    html_pointer,
    report_lines,
    saving_text,
    task_line,
    verdict_line,
)
from tests.support.evaluation_builders import baseline, evaluate, reps, task

ROOT = "f" * 64


def as_report(*tasks: TaskResult, non_empirical: bool = True) -> Report:
    inputs = ReportInputs(
        benchmark_id="bench",
        task_root=ROOT,
        corpus_root=ROOT,
        artifact_count=12_345,
        run_id="run-1",
        run_digest=ROOT,
    )
    return reduce_report(
        tasks,
        inputs=inputs,
        claim_class="conformance_seed" if non_empirical else "public_reproduction",
        non_empirical=non_empirical,
        factorial_experiment=None,
        eceb_version="0.1.0",
        disclosure_check=DISCLOSURE_OFF,
    )


def named(result: TaskResult, task_id: str) -> TaskResult:
    return msgspec.structs.replace(result, task_id=task_id)


def passing(**baseline_kwargs: object) -> TaskResult:
    """Passes at 200 (150 tokens); 100 fails on quality; a naive_top_k group fails on policy."""
    return evaluate(
        [
            *baseline(cost=2_000, **baseline_kwargs),  # type: ignore[arg-type]
            *reps(2, budget=100, tokens=90, quality=100),
            *reps(2, budget=200, tokens=150, cost=1_234),
            *reps(2, strategy="naive_top_k", budget=None, tokens=500, selected=("req", "denied")),
        ]
    )


def test_figures_are_exact_integer_formats() -> None:
    assert grouped(1_234_567) == "1,234,567" and grouped(-1_250) == "-1,250" and grouped(0) == "0"
    assert signed(1_250) == "+1,250" and signed(-40) == "-40" and signed(0) == "0"
    assert percent(6_250) == "62.50 %" and percent(-1) == "-0.01 %" and percent(10_000) == "100.00 %"
    assert percent(-4_000) == "-40.00 %" and percent(5) == "0.05 %"
    assert usd(1_234) == "$0.001234" and usd(12_345_678) == "$12.345678" and usd(-5) == "-$0.000005"
    assert percent_bps(6_250) == "62.50 % (6,250 bps)" and percent_bps(None) == "n/a"


@pytest.mark.parametrize(
    ("full", "compiled", "expected"),
    [(1_000, 150, 8_500), (300, 420, -4_000), (3, 4, -3_334), (3, 2, 3_333), (0, 5, None), (None, 5, None)],
)
def test_savings_before_saturation_floor_like_the_spec(full: int | None, compiled: int | None, expected: int) -> None:
    assert signed_savings_bps(full, compiled) == expected


def test_a_passing_task_spells_out_its_units() -> None:
    result = passing()
    assert result.passed and result.minimum_viable_budget == 200
    assert task_line(result) == (
        "PASS  t: minimum viable budget 200 tokens; 85.00 % of prompt tokens saved (8,500 bps); "
        "38.30 % of cost saved (3,830 bps)"
    )
    lines = list(report_lines(as_report(result), "corpus/"))
    assert (
        "      prompt tokens, mean per repetition: 1,000 tokens with the full permitted context, 150 tokens compiled"
        in (lines)
    )
    assert (
        "      cost, mean per repetition: $0.002000 (2,000 micro-USD) with the full permitted context, "
        "$0.001234 (1,234 micro-USD) compiled"
    ) in lines
    assert "      quality (thousandths): 900 with the full permitted context, 900 compiled, floor 800" in lines


def test_the_minimum_viable_budget_is_explained_once() -> None:
    lines = list(report_lines(as_report(passing(), named(passing(), "u")), "corpus/"))
    assert lines.count(MINIMUM_VIABLE_BUDGET) == 1
    assert "the smallest budget of a task's ladder (in prompt tokens)" in MINIMUM_VIABLE_BUDGET
    assert "passes every gate" in MINIMUM_VIABLE_BUDGET


def test_a_passing_tasks_failures_are_marked_as_not_deciding() -> None:
    result = passing()
    failures = [line for line in report_lines(as_report(result), "corpus/") if line.startswith("      quality:")]
    assert failures and all(line.endswith(NOT_DECIDING) for line in failures)
    naive = [line for line in report_lines(as_report(result), "corpus/") if "naive_top_k" in line]
    assert naive and all(line.endswith(" (did not decide the verdict)") for line in naive)
    assert not any(decides_verdict(result, a) for a in result.failed_assertions)


def test_a_failing_task_counts_and_leaves_unmarked_the_failures_that_decide() -> None:
    result = evaluate(
        [
            *baseline(quality=600),  # below the absolute floor of 700: the baseline fails
            *reps(2, budget=100, tokens=90, quality=100),
            *reps(2, budget=200, tokens=150),
        ]
    )
    assert not result.passed and result.minimum_viable_budget == 200
    deciding = [a for a in result.failed_assertions if decides_verdict(result, a)]
    assert deciding and all(a.strategy == "full_permitted_context" for a in deciding)
    assert task_line(result) == (
        f"FAIL  t: first passing budget 200 tokens, but the task fails; {len(deciding)} failed assertion(s) "
        "decide the verdict"
    )
    lines = list(report_lines(as_report(result), "corpus/"))
    assert all(not line.endswith(NOT_DECIDING) for line in lines if "full_permitted_context rep" in line)
    assert all(line.endswith(NOT_DECIDING) for line in lines if "compiled@100" in line)


def test_no_viable_budget_is_worded_and_every_compiled_failure_decides() -> None:
    result = evaluate([*baseline(), *reps(2, budget=100, quality=100), *reps(2, budget=200, quality=100)])
    assert task_line(result).startswith("FAIL  t: no budget of the ladder passes every gate; ")
    assert all(decides_verdict(result, a) for a in result.failed_assertions)


def test_a_negative_saving_is_shown_before_it_saturates() -> None:
    result = evaluate([*baseline(tokens=100), *reps(2, budget=200, tokens=150, cost=200)], the_task=task())
    assert result.passed and result.token_savings_bps == 0
    line = task_line(result)
    assert "-50.00 % of prompt tokens saved (-5,000 bps: the compiled context has more prompt tokens than the " in line
    assert "reported as 0 bps, as savings saturate at 0)" in line
    assert "-100.00 % of cost saved (-10,000 bps: the compiled context has a higher cost than the baseline" in line


def test_a_zero_baseline_cost_has_no_cost_saving() -> None:
    assert saving_text("cost", None, 0, 10) == "cost saved: n/a (the baseline cost is zero)"
    assert saving_text("cost", None, None, None) == "cost saved: n/a"


def test_the_header_says_the_claim_and_the_counts_with_separators() -> None:
    lines = list(report_lines(as_report(passing()), "s3://bucket/corpus"))
    assert lines[0] == "benchmark bench (task root ffffffffffffffff...), run run-1"
    assert lines[1].startswith("claim class conformance_seed, NON-EMPIRICAL: the run declares synthetic scores")
    assert lines[2] == (
        "claim class conformance_seed means: synthetic or hand-authored records proving the evaluator's behaviour; "
        "not a model-performance claim; a result of one claim class is not evidence for a stronger one (ECEB-0.1 §15)"
    )
    assert lines[3].startswith("token counts compared: the provider-reported input tokens (provider-native")
    assert lines[3].endswith("the run records no local token counts")
    assert lines[4] == (
        "disclosure check: off: answers were not checked for text of artifacts their task may not see "
        "(--no-disclosure-check)"
    )
    assert (
        lines[5]
        == "corpus s3://bucket/corpus: 12,345 artifacts verified against the registry, root ffffffffffffffff..."
    )
    checked = msgspec.structs.replace(as_report(passing()), disclosure_check=DEFAULT_DISCLOSURE_CHECK)
    assert list(report_lines(checked, "x"))[4] == (
        "disclosure check: on: every answer checked against the artifacts its task may not see (a run of 8 "
        "normalised tokens in common, or a marked secret value, fails the group)"
    )
    empirical = list(report_lines(as_report(passing(), non_empirical=False), "x"))
    assert empirical[1] == "claim class public_reproduction (empirical)"
    assert empirical[2] == (
        "claim class public_reproduction means: a public, immutable corpus and a replayable model and judge "
        "configuration; a result of one claim class is not evidence for a stronger one (ECEB-0.1 §15)"
    )


def test_the_means_give_their_sums_and_counts() -> None:
    failing = evaluate([*reps(2, budget=200)])
    lines = list(report_lines(as_report(passing(), named(passing(), "u"), named(failing, "v")), "x"))
    mean = next(line for line in lines if line.startswith("mean savings"))
    assert mean == (
        "mean savings over the 2 passing task(s) (floored): prompt tokens 85.00 % (8,500 bps), 17,000 bps / 2 task(s); "
        "cost 38.30 % (3,830 bps), 7,660 bps / 2 task(s) with a cost baseline; the 1 failing task(s) count in tasks "
        "passing k/n, not in the means"
    )


def test_the_pointer_names_the_report_written() -> None:
    lines = list(report_lines(as_report(passing()), "x", report_path="out/report.json"))
    assert lines[-1] == "HTML report with plots: eceb render out/report.json --html -o report.html"
    assert (
        html_pointer("my reports/r.json")
        == "HTML report with plots: eceb render 'my reports/r.json' --html -o report.html"
    )
    assert list(report_lines(as_report(passing()), "x"))[-1] == (
        "HTML report with plots: write the report with -o FILE, then eceb render FILE --html -o report.html"
    )


def test_the_verdict_line_is_unchanged() -> None:
    assert verdict_line(as_report(passing(), named(evaluate([*reps(2, budget=200)]), "u"))) == "1/2 tasks pass"


def test_no_float_is_ever_formatted() -> None:
    text = "\n".join(report_lines(as_report(passing()), "x"))
    assert "e+" not in text and ".0 " not in text
    big = 2**53 - 1
    assert percent(big) == f"{grouped(big // 100)}.{big % 100:02d} %"
    assert usd(big) == f"${grouped(big // 1_000_000)}.{big % 1_000_000:06d}"
