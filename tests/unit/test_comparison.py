"""Comparing two evaluation reports: each kind of regression on its own,
the thresholds, added and removed tasks, claim classes, the refusal of
different roots, the document and its texts, and properties (task order
does not matter; a report compared with itself never regresses)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.documents import DOCUMENTS
from eceb_worker.errors import InputError
from eceb_worker.families.eceb.comparison import (
    COMPARISON_SCHEMA,
    Comparison,
    Thresholds,
    compare_reports,
    encode_comparison,
)
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.report import Report, ReportInputs, reduce_report
from eceb_worker.families.eceb.verdicts import Assertion, GroupResult, TaskResult
from eceb_worker.families.eceb.vocabulary import ClaimClass
from eceb_worker.render.comparison import comparison_lines, comparison_markdown
from eceb_worker.render.markdown import markdown_text
from tests.support.profiles import examples

ROOT = "a" * 64


def group(strategy: str, budget: int | None, *, violations: int = 0, passed: bool = True) -> GroupResult:
    return GroupResult(
        strategy=strategy,
        budget=budget,
        observations=2,
        passed=passed,
        prompt_tokens=100,
        cost_micro_usd=100,
        auxiliary_cost_micro_usd=0,
        quality_milli=900,
        minimum_quality_milli=900,
        latency_ms=1,
        provenance_coverage_bps=10_000,
        policy_violations=violations,
        repeatable=True,
    )


def failure(gate: str, strategy: str = "compiled", budget: int | None = 256) -> Assertion:
    return Assertion(gate=gate, strategy=strategy, budget=budget, repetition=1, message=f"{gate} failed")  # type: ignore[arg-type]


def result(
    task_id: str,
    *,
    passed: bool = True,
    budget: int | None = 512,
    token: int | None = 8_000,
    cost: int | None = 7_000,
    failures: tuple[Assertion, ...] = (),
    violations: int = 0,
    naive_violations: int = 0,
) -> TaskResult:
    groups: tuple[GroupResult, ...] = (
        group("full_permitted_context", None),
        group("compiled", 512, violations=violations),
    )
    if naive_violations:
        groups += (group("naive_top_k", 5, violations=naive_violations, passed=False),)
    return TaskResult(
        task_id=task_id,
        passed=passed,
        minimum_viable_budget=budget,
        baseline_prompt_tokens=1_000,
        compiled_prompt_tokens=200,
        token_savings_bps=token if passed else None,
        baseline_cost_micro_usd=1_000,
        compiled_cost_micro_usd=300,
        cost_savings_bps=cost if passed else None,
        baseline_quality_milli=900,
        quality_floor_milli=800,
        compiled_quality_milli=880,
        provenance_coverage_bps=10_000,
        policy_violations=0,
        repeatability=True,
        policy_violations_all_groups=violations + naive_violations,
        failed_assertions=failures,
        groups=groups,
    )


def report(
    *tasks: TaskResult,
    claim_class: ClaimClass = "conformance_seed",
    non_empirical: bool = True,
    task_root: str = ROOT,
    corpus_root: str = ROOT,
) -> Report:
    inputs = ReportInputs(
        benchmark_id="b", task_root=task_root, corpus_root=corpus_root, artifact_count=3, run_id="r", run_digest=ROOT
    )
    return reduce_report(
        tasks,
        inputs=inputs,
        claim_class=claim_class,
        non_empirical=non_empirical,
        factorial_experiment=None,
        eceb_version="0.1.0",
        disclosure_check=DISCLOSURE_OFF,
    )


OLD = report(result("t-1"), result("t-2"), result("t-3", passed=False, budget=None))


def kinds(comparison: Comparison) -> list[tuple[str | None, str]]:
    return [(r.task_id, r.kind) for r in comparison.regressions]


def test_a_report_compared_with_itself_has_no_change_and_no_regression() -> None:
    comparison = compare_reports(OLD, OLD, Thresholds())
    assert not comparison.regressed and comparison.regressions == ()
    assert [t.change for t in comparison.tasks] == ["kept"] * 3
    assert not any(t.changed for t in comparison.tasks)
    assert comparison.summary_change.passing_tasks == 0
    assert comparison.summary_change.mean_token_savings_bps == 0


def test_pass_to_fail_names_the_task_and_its_failed_gates() -> None:
    new = report(result("t-1", passed=False, failures=(failure("quality"),)), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, new, Thresholds())
    assert kinds(comparison)[0] == ("t-1", "pass_to_fail")
    assert "task t-1 passed before and fails now (1 failed assertion(s): quality)" in comparison.regressions[0].message
    assert comparison.tasks[0].old_passed is True and comparison.tasks[0].new_passed is False
    assert comparison.tasks[0].token_savings_change_bps is None  # a failing task has no savings


def test_fail_to_pass_is_a_change_not_a_regression() -> None:
    new = report(result("t-1"), result("t-2"), result("t-3"))
    comparison = compare_reports(OLD, new, Thresholds())
    assert not comparison.regressed
    assert comparison.tasks[2].changed and comparison.summary_change.passing_tasks == 1


@pytest.mark.parametrize(("allowed", "regressed"), [(0, True), (255, True), (256, False)])
def test_budget_up_beyond_the_allowed_increase(allowed: int, regressed: bool) -> None:
    new = report(result("t-1", budget=768), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, new, Thresholds(max_budget_increase=allowed))
    assert comparison.tasks[0].budget_change == 256
    assert (("t-1", "budget_up") in kinds(comparison)) is regressed
    if regressed:
        message = comparison.regressions[0].message
        assert f"rose from 512 to 768 tokens (+256, more than the {allowed} allowed)" in message


def test_budget_down_is_no_regression() -> None:
    new = report(result("t-1", budget=256), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, new, Thresholds())
    assert comparison.tasks[0].budget_change == -256 and not comparison.regressed


@pytest.mark.parametrize(("allowed", "regressed"), [(0, True), (1_249, True), (1_250, False)])
def test_token_savings_drop_in_basis_points(allowed: int, regressed: bool) -> None:
    new = report(result("t-1", token=6_750), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, new, Thresholds(max_token_savings_drop_bps=allowed))
    assert comparison.tasks[0].token_savings_change_bps == -1_250
    task_kinds = [kind for task_id, kind in kinds(comparison) if task_id == "t-1"]
    assert ("token_savings_drop" in task_kinds) is regressed
    if regressed:
        assert "token savings fell from 80.00 % (8,000 bps) to 67.50 % (6,750 bps): -1,250 bps" in (
            comparison.regressions[0].message
        )
    # the mean fell by 625 bps: a regression of the whole report under 625 allowed
    mean = [kind for task_id, kind in kinds(comparison) if task_id is None]
    assert mean == (["mean_token_savings_drop"] if allowed < 625 else [])


def test_cost_savings_drop_is_judged_by_its_own_threshold() -> None:
    new = report(result("t-1", cost=6_000), result("t-2"), OLD.tasks[2])
    loose_tokens = compare_reports(OLD, new, Thresholds(max_token_savings_drop_bps=10_000))
    assert kinds(loose_tokens) == [("t-1", "cost_savings_drop"), (None, "mean_cost_savings_drop")]
    assert not compare_reports(OLD, new, Thresholds(max_cost_savings_drop_bps=1_000)).regressed


def test_savings_rising_is_no_regression() -> None:
    new = report(result("t-1", token=9_000, cost=9_000), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, new, Thresholds())
    assert not comparison.regressed and comparison.tasks[0].token_savings_change_bps == 1_000


def test_new_policy_violations_unless_allowed() -> None:
    new = report(result("t-1", violations=2), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, new, Thresholds())
    assert kinds(comparison) == [("t-1", "policy_violations")]
    assert comparison.tasks[0].policy_violations_increase == 2
    assert "2 more policy violation(s) in its baseline and compiled groups (0 before, 2 now)" in (
        comparison.regressions[0].message
    )
    assert not compare_reports(OLD, new, Thresholds(allow_new_policy_violations=True)).regressed
    fewer = compare_reports(new, OLD, Thresholds())
    assert fewer.tasks[0].policy_violations_increase == 0 and not fewer.regressed


def test_naive_top_k_violations_and_gates_never_decide() -> None:
    naive = (failure("policy", "naive_top_k", 5),)
    new = report(result("t-1", naive_violations=4, failures=naive), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, new, Thresholds())
    assert not comparison.regressed
    assert comparison.tasks[0].new_failed_gates == () and comparison.tasks[0].new_policy_violations == 0


def test_a_failing_task_failing_for_new_gates_regresses_unless_allowed() -> None:
    def failing(*gates: str) -> TaskResult:
        failures = tuple(failure(gate, "full_permitted_context", None) for gate in gates)
        return result("t-3", passed=False, budget=None, failures=(*failures, failure("quality", budget=1_024)))

    before = report(result("t-1"), result("t-2"), failing("budget"))
    after = report(result("t-1"), result("t-2"), failing("repeatability", "budget", "answer_terms"))
    comparison = compare_reports(before, after, Thresholds())
    assert comparison.tasks[2].new_failed_gates == ("answer_terms", "repeatability")
    assert kinds(comparison) == [("t-3", "new_failed_gate")]
    assert "task t-3 failed before and now also fails for gate(s) answer_terms, repeatability" in (
        comparison.regressions[0].message
    )
    assert not compare_reports(before, after, Thresholds(allow_new_failed_gates=True)).regressed


def test_gates_failing_below_the_minimum_viable_budget_do_not_decide() -> None:
    after = report(result("t-1", failures=(failure("quality", budget=256),)), result("t-2"), OLD.tasks[2])
    comparison = compare_reports(OLD, after, Thresholds())
    assert comparison.tasks[0].new_failed_gates == () and not comparison.regressed


def test_a_pass_to_fail_is_not_also_a_new_gate() -> None:
    failing = result("t-1", passed=False, failures=(failure("policy", "full_permitted_context", None),))
    comparison = compare_reports(OLD, report(failing, result("t-2"), OLD.tasks[2]), Thresholds())
    assert comparison.tasks[0].new_failed_gates == ("policy",)
    assert kinds(comparison) == [("t-1", "pass_to_fail")]


def test_removed_and_added_tasks() -> None:
    new = report(result("t-2"), OLD.tasks[2], result("t-4"))
    comparison = compare_reports(OLD, new, Thresholds(max_token_savings_drop_bps=10_000))
    changes = {t.task_id: t.change for t in comparison.tasks}
    assert changes == {"t-1": "removed", "t-2": "kept", "t-3": "kept", "t-4": "added"}
    assert kinds(comparison) == [("t-1", "removed")]
    assert "task t-1 (passed before) is missing from the new report" in comparison.regressions[0].message
    removed, added = comparison.tasks[0], comparison.tasks[3]
    assert removed.new_passed is None and removed.old_passed is True and removed.budget_change is None
    assert added.old_passed is None and added.new_passed is True and added.old_minimum_viable_budget is None
    assert not compare_reports(OLD, new, Thresholds(allow_removed_tasks=True)).regressed


def test_an_added_task_with_policy_violations_regresses() -> None:
    new = report(*OLD.tasks, result("t-4", passed=False, budget=None, violations=1))
    assert kinds(compare_reports(OLD, new, Thresholds())) == [("t-4", "policy_violations")]


def test_an_added_failing_task_is_no_regression() -> None:
    new = report(*OLD.tasks, result("t-4", passed=False, budget=None, failures=(failure("quality"),)))
    assert not compare_reports(OLD, new, Thresholds()).regressed


def test_claim_classes_that_differ_are_said_in_every_format_and_do_not_regress() -> None:
    new = report(*OLD.tasks, claim_class="public_reproduction", non_empirical=False)
    comparison = compare_reports(OLD, new, Thresholds())
    assert comparison.claim_classes_differ and not comparison.regressed
    note = "claim classes differ: old conformance_seed (non-empirical), new public_reproduction (empirical)"
    assert note in "\n".join(comparison_lines(comparison))
    assert markdown_text(note) in comparison_markdown(comparison)
    assert json.loads(encode_comparison(comparison))["claim_classes_differ"] is True
    same = compare_reports(OLD, OLD, Thresholds())
    assert "claim classes differ" not in comparison_markdown(same) + "\n".join(comparison_lines(same))


def test_the_empirical_label_alone_makes_claims_differ() -> None:
    new = report(*OLD.tasks, non_empirical=False)
    assert compare_reports(OLD, new, Thresholds()).claim_classes_differ


@pytest.mark.parametrize("field", ["task_root", "corpus_root"])
def test_different_roots_are_refused_naming_both_files(field: str) -> None:
    new = report(*OLD.tasks, **{field: "b" * 64})  # type: ignore[arg-type]
    with pytest.raises(InputError) as raised:
        compare_reports(OLD, new, Thresholds(), names=("old.json", "new.json"))
    [problem] = raised.value.problems
    assert problem.file == "new.json" and problem.field == f"inputs.{field}"
    assert "old.json" in problem.message and "b" * 64 in problem.message and ROOT in problem.message
    allowed = compare_reports(OLD, new, Thresholds(), allow_different_roots=True)
    assert getattr(allowed, f"{field.split('_')[0]}_roots_differ") and not allowed.regressed


def test_both_roots_differing_are_two_problems() -> None:
    new = report(*OLD.tasks, task_root="b" * 64, corpus_root="c" * 64)
    with pytest.raises(InputError) as raised:
        compare_reports(OLD, new, Thresholds())
    assert [p.field for p in raised.value.problems] == ["inputs.task_root", "inputs.corpus_root"]


def test_the_document_is_canonical_and_matches_its_published_schema() -> None:
    import jsonschema

    new = report(result("t-1", passed=False), result("t-2", budget=1_024), result("t-5"))
    comparison = compare_reports(OLD, new, Thresholds(max_budget_increase=3))
    data = encode_comparison(comparison)
    assert data.endswith(b"}\n") and data == encode_comparison(
        compare_reports(OLD, new, Thresholds(max_budget_increase=3))
    )
    document = json.loads(data)
    assert document["schema"] == COMPARISON_SCHEMA
    [published] = [d for d in DOCUMENTS if d.schema_id == COMPARISON_SCHEMA]
    schema = json.loads(
        (__import__("pathlib").Path(__file__).parents[2] / "schema" / published.schema_file).read_text()
    )
    jsonschema.validate(document, schema)
    assert msgspec.json.decode(data, type=Comparison) == comparison
    assert document["thresholds"]["max_budget_increase"] == 3


def test_markdown_has_a_heading_a_table_of_changed_tasks_and_the_regressions() -> None:
    new = report(result("t-1", passed=False), result("t-2", budget=1_024), OLD.tasks[2])
    text = comparison_markdown(compare_reports(OLD, new, Thresholds()))
    assert text.startswith("## eceb compare: regressed\n")
    assert "### Changed tasks (2 of 3)" in text
    assert "| t-1 | kept | PASS -> FAIL |" in text
    assert "### Regressions (2)" in text  # pass_to_fail, budget_up (the mean of the passing tasks is unchanged)
    assert "- **budget_up**: task t-2: minimum viable budget rose from 512 to 1,024 tokens" in text
    assert text.endswith("\n")
    assert compare_reports(OLD, OLD, Thresholds()).regressed is False
    assert comparison_markdown(compare_reports(OLD, OLD, Thresholds())).startswith("## eceb compare: no regression\n")


def test_markdown_cells_keep_table_syntax_intact() -> None:
    odd = report(result("a|b"), result("t<script>"))
    text = comparison_markdown(compare_reports(odd, report(result("t<script>")), Thresholds()))
    assert "| a\\|b | removed |" in text
    assert "<script>" not in text.replace("\\<", "")  # a backslash shows the < as it is: no tag


def test_text_names_every_regression_and_ends_with_the_verdict() -> None:
    new = report(result("t-1", passed=False), result("t-2"), OLD.tasks[2])
    lines = list(comparison_lines(compare_reports(OLD, new, Thresholds())))
    assert lines[-1] == "REGRESSED: 1 regression(s) (2/3 -> 1/3 tasks pass)"
    assert any(line.startswith("REGRESSION  pass_to_fail: task t-1 passed before") for line in lines)
    assert "  t-1: PASS -> FAIL; token savings 80.00 % (8,000 bps) -> n/a; cost savings 70.00 % (7,000 bps) -> n/a" in (
        "\n".join(lines)
    )
    assert (
        list(comparison_lines(compare_reports(OLD, OLD, Thresholds())))[-1] == "no regression (2/3 -> 2/3 tasks pass)"
    )


def test_a_report_naming_a_task_twice_is_refused() -> None:
    twice = msgspec.structs.replace(OLD, tasks=(*OLD.tasks, OLD.tasks[0]))
    with pytest.raises(ValueError, match="twice"):
        compare_reports(twice, OLD, Thresholds())


_task_results = st.lists(
    st.builds(
        result,
        st.sampled_from([f"t-{n}" for n in range(8)]),
        passed=st.booleans(),
        budget=st.sampled_from([None, 256, 512, 1_024]),
        token=st.integers(0, 10_000),
        cost=st.one_of(st.none(), st.integers(0, 10_000)),
        violations=st.integers(0, 3),
    ),
    max_size=8,
    unique_by=lambda t: t.task_id,
)


def _thresholds() -> st.SearchStrategy[Thresholds]:
    return st.builds(
        Thresholds,
        max_token_savings_drop_bps=st.integers(0, 10_000),
        max_cost_savings_drop_bps=st.integers(0, 10_000),
        max_budget_increase=st.integers(0, 1_024),
        allow_new_policy_violations=st.booleans(),
        allow_new_failed_gates=st.booleans(),
        allow_removed_tasks=st.booleans(),
    )


def _shuffled(report_: Report, data: Any) -> Report:
    order = data.draw(st.permutations(report_.tasks))
    return msgspec.structs.replace(report_, tasks=tuple(order))


@given(old=_task_results, new=_task_results, thresholds=_thresholds(), data=st.data())
def test_the_order_of_the_tasks_does_not_matter(
    old: list[TaskResult], new: list[TaskResult], thresholds: Thresholds, data: Any
) -> None:
    old_report, new_report = report(*old), report(*new)
    expected = encode_comparison(compare_reports(old_report, new_report, thresholds))
    shuffled = compare_reports(_shuffled(old_report, data), _shuffled(new_report, data), thresholds)
    assert encode_comparison(shuffled) == expected
    ids = [t.task_id for t in shuffled.tasks]
    assert ids == sorted({t.task_id for t in (*old, *new)})
    assert shuffled.regressed == bool(shuffled.regressions)


@settings(max_examples=examples(ci=50, long=1000))
@given(tasks=_task_results, thresholds=_thresholds())
def test_a_report_never_regresses_against_itself(tasks: list[TaskResult], thresholds: Thresholds) -> None:
    same = report(*tasks)
    comparison = compare_reports(same, same, thresholds)
    assert not comparison.regressed and not any(t.changed for t in comparison.tasks)
    assert comparison_markdown(comparison).startswith("## eceb compare: no regression")


@settings(max_examples=examples(ci=40, long=1000))
@given(old=_task_results, new=_task_results)
def test_the_strictest_thresholds_regress_whenever_looser_ones_do(old: list[TaskResult], new: list[TaskResult]) -> None:
    loose = Thresholds(
        max_token_savings_drop_bps=500,
        max_cost_savings_drop_bps=500,
        max_budget_increase=256,
        allow_new_policy_violations=True,
        allow_new_failed_gates=True,
        allow_removed_tasks=True,
    )
    old_report, new_report = report(*old), report(*new)
    if compare_reports(old_report, new_report, loose).regressed:
        assert compare_reports(old_report, new_report, Thresholds()).regressed
