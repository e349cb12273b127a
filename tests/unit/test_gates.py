"""The seven gates of ECEB-0.1 §11 on one group, alone and together, and
the ladder walk, threshold and savings of §10 and §12."""

from __future__ import annotations

import pytest

from eceb_worker.core.arithmetic import savings_bps
from eceb_worker.families.eceb.run import FactorialExperiment
from eceb_worker.families.eceb.tasks import quality_threshold
from tests.support.evaluation_builders import (
    STALE,
    aux,
    baseline,
    configuration,
    evaluate,
    gates,
    obs,
    replace,
    reps,
    task,
)


def passing(budget: int = 100, n: int = 2, **kwargs: object) -> list:
    return reps(n, budget=budget, **kwargs)  # type: ignore[arg-type]


def test_everything_passes_at_the_first_budget() -> None:
    result = evaluate(baseline() + passing(100))
    assert result.passed
    assert result.minimum_viable_budget == 100
    assert result.token_savings_bps == 9100  # floor(10000 * (1000 - 90) / 1000)
    # Budgets above the minimum have no observations: reported, not hidden (§10).
    assert gates(result) == {("repetitions", "compiled", 200), ("repetitions", "compiled", 300)}


@pytest.mark.parametrize(
    ("change", "gate"),
    [
        ({"n": 1}, "repetitions"),
        ({"tokens": 101}, "budget"),
        ({"quality": 799}, "quality"),
        ({"answer": "no such street"}, "answer_terms"),
        ({"selected": ("extra",)}, "provenance"),
        ({"digests": {"req": STALE}}, "provenance"),
        ({"selected": ("req", "secret")}, "policy"),
        ({"selected": ("req", "denied")}, "policy"),
    ],
)
def test_each_gate_failing_alone(change: dict, gate: str) -> None:
    result = evaluate(baseline(quality=900) + passing(100, **change) + passing(200))
    assert {g for g, s, b in gates(result) if b == 100} == {gate}
    assert result.minimum_viable_budget == 200
    assert result.passed


def test_repeatability_failing_alone() -> None:
    group = [obs(repetition=1, context="a"), obs(repetition=2, context="b")]
    result = evaluate(baseline() + group + passing(200))
    assert {g for g, s, b in gates(result) if b == 100} == {"repeatability"}
    assert result.minimum_viable_budget == 200


def test_unknown_artifact_is_a_policy_violation_and_a_provenance_failure() -> None:
    result = evaluate(baseline() + passing(100, selected=("req", "ghost")) + passing(200))
    failing = [a for a in result.failed_assertions if a.budget == 100]
    assert {a.gate for a in failing} == {"policy", "provenance"}
    group = next(g for g in result.groups if g.budget == 100)
    assert group.policy_violations == 2  # one per repetition
    assert group.provenance_coverage_bps == 10_000  # the required artifact itself was there


def test_stale_digest_is_provenance_not_policy() -> None:
    result = evaluate(baseline() + passing(100, selected=("req", "extra"), digests={"extra": STALE}) + passing(200))
    failing = {a.gate for a in result.failed_assertions if a.budget == 100}
    assert failing == {"provenance"}
    assert next(g for g in result.groups if g.budget == 100).policy_violations == 0


def test_denied_and_disallowed_counts_once_per_selection_with_both_reasons() -> None:
    t = task(denied_artifacts=("secret",))
    result = evaluate(baseline(the_task=t) + passing(100, the_task=t, selected=("req", "secret")), the_task=t)
    group = next(g for g in result.groups if g.budget == 100)
    assert group.policy_violations == 2
    messages = [a.message for a in result.failed_assertions if a.gate == "policy"]
    assert all("classification restricted not allowed" in m and "denied" in m for m in messages)


def test_several_gates_fail_together_in_one_group() -> None:
    group = [
        obs(repetition=1, tokens=150, quality=100, answer="x", selected=("secret",), context="a"),
        obs(repetition=2, tokens=150, quality=100, answer="x", selected=("secret",), context="b"),
    ]
    result = evaluate(baseline() + group + passing(200))
    assert {g for g, s, b in gates(result) if b == 100} == {
        "budget",
        "quality",
        "answer_terms",
        "provenance",
        "policy",
        "repeatability",
    }
    per_rep = [a for a in result.failed_assertions if a.budget == 100 and a.gate == "quality"]
    assert [a.repetition for a in per_rep] == [1, 2]


def test_favourable_budget_with_a_policy_violation_is_not_chosen() -> None:
    """§11: never stop at a favourable budget while concealing a violation there."""
    favourable = passing(100, tokens=10, quality=1000, selected=("req", "denied"))
    result = evaluate(baseline() + favourable + passing(200, tokens=150))
    assert result.minimum_viable_budget == 200
    assert result.policy_violations == 0
    assert result.policy_violations_all_groups == 2
    assert any(a.gate == "policy" and a.budget == 100 for a in result.failed_assertions)


def test_ladder_walk_with_missing_repetitions() -> None:
    result = evaluate(baseline() + passing(100, n=1) + passing(300))
    assert result.minimum_viable_budget == 300
    assert {(g, b) for g, s, b in gates(result)} == {("repetitions", 100), ("repetitions", 200)}
    assert next(g for g in result.groups if g.budget == 200).observations == 0


def test_no_viable_budget_fails_the_task() -> None:
    result = evaluate(baseline() + passing(100, quality=0))
    assert not result.passed
    assert result.minimum_viable_budget is None
    assert result.token_savings_bps is None
    assert ("no_viable_budget", "", None) in gates(result)


def test_threshold_from_the_regression_bound() -> None:
    # baseline mean floor((950 + 960) / 2) = 955; τ = max(700, 955 - 100) = 855
    base = baseline(quality=950)
    base[1] = obs(
        strategy="full_permitted_context",
        budget=None,
        repetition=2,
        tokens=1000,
        selected=("req", "extra"),
        context="full",
        quality=960,
    )
    result = evaluate(base + passing(100, quality=854) + passing(200, quality=855))
    assert result.baseline_quality_milli == 955
    assert result.quality_floor_milli == 855
    assert result.minimum_viable_budget == 200


def test_threshold_from_the_absolute_floor() -> None:
    result = evaluate(baseline(quality=750) + passing(100, quality=699) + passing(200, quality=700))
    assert result.quality_floor_milli == 700
    assert result.minimum_viable_budget == 200


def test_quality_threshold_formula() -> None:
    assert quality_threshold(700, 900, 50) == 850
    assert quality_threshold(700, 720, 100) == 700


def test_savings_floor_and_saturation() -> None:
    assert savings_bps(3, 1) == 6666  # floor(10000 * 2 / 3)
    assert savings_bps(1000, 1000) == 0
    assert savings_bps(300, 420) == 0  # negative saturates
    result = evaluate(baseline(tokens=300) + passing(100, tokens=90) + passing(200))
    assert result.token_savings_bps == 7000
    negative = evaluate(baseline(tokens=50, cost=50) + passing(100, tokens=90))
    assert negative.passed
    assert negative.token_savings_bps == 0
    assert negative.cost_savings_bps == 0


def test_cost_includes_output_cached_input_and_auxiliary_records() -> None:
    base = baseline(tokens=1000, cost=730, output_cost=200, cached=300)
    compiled = passing(100, tokens=90, cost=90, output_cost=10)
    extra = [aux(cost=50), aux(cost=31, kind="retry"), aux(cost=7, kind="tool_call")]
    result = evaluate(base + compiled, auxiliary=extra)
    assert result.baseline_cost_micro_usd == 930
    # (2 * (90 + 10) + 50 + 31 + 7) // 2 = 144
    assert result.compiled_cost_micro_usd == 144
    assert result.cost_savings_bps == 8451  # floor(10000 * (930 - 144) / 930)
    group = next(g for g in result.groups if g.budget == 100)
    assert group.auxiliary_cost_micro_usd == 88


def test_zero_cost_baseline_gives_no_cost_savings() -> None:
    result = evaluate(baseline(cost=0) + passing(100, cost=0))
    assert result.passed
    assert result.cost_savings_bps is None


def test_baseline_missing_fails_the_task() -> None:
    result = evaluate(passing(100))
    assert not result.passed
    assert ("baseline_missing", "", None) in gates(result)
    assert result.minimum_viable_budget == 100


def test_compiled_missing_fails_the_task() -> None:
    result = evaluate(baseline())
    assert not result.passed
    assert ("compiled_missing", "", None) in gates(result)


def test_baseline_failing_a_gate_fails_the_task() -> None:
    result = evaluate(baseline(selected=("req", "extra", "denied")) + passing(100))
    assert not result.passed
    assert ("policy", "full_permitted_context", None) in gates(result)
    assert result.minimum_viable_budget == 100
    assert result.token_savings_bps is None


def test_baseline_quality_is_judged_against_the_absolute_floor() -> None:
    result = evaluate(baseline(quality=600) + passing(100, quality=700))
    assert ("quality", "full_permitted_context", None) in gates(result)
    assert not result.passed


def test_zero_token_baseline_is_its_own_failure() -> None:
    result = evaluate(baseline(tokens=0) + passing(100))
    assert ("baseline_zero_tokens", "full_permitted_context", None) in gates(result)
    assert not result.passed


def test_answer_terms_match_case_insensitively_after_unicode_folding() -> None:
    t = task(required_answer_terms=("Straße", "ﬁle", "Ω"))
    answer = "STRASSE, FILE and ω"  # ß→ss by case folding; the ligature ﬁ→fi by NFKC; Ω/ω by case
    result = evaluate(baseline(the_task=t, answer=answer) + passing(100, the_task=t, answer=answer), the_task=t)
    assert result.passed


def test_comparability_across_strategies() -> None:
    configs = [configuration("c"), configuration("other", model="small")]
    observations = baseline() + passing(100, configuration_id="other")
    result = evaluate(observations, configurations=configs)
    assert ("comparability", "", None) in gates(result)
    assert not result.passed
    declared = evaluate(observations, configurations=configs, factorial=FactorialExperiment(factors=("model",)))
    assert declared.passed


def test_task_text_must_match() -> None:
    result = evaluate(baseline() + passing(100, query="Another question?"))
    assert ("comparability", "", None) in gates(result)


def test_naive_top_k_is_reported_but_does_not_decide() -> None:
    naive = reps(2, strategy="naive_top_k", budget=None, quality=0, selected=("req", "denied"))
    result = evaluate(baseline() + passing(100) + naive)
    assert result.passed
    assert ("quality", "naive_top_k", None) in gates(result)
    assert [g.strategy for g in result.groups] == [
        "full_permitted_context",
        "compiled",
        "compiled",
        "compiled",
        "naive_top_k",
    ]


def test_prompt_tokens_are_the_provider_reported_input_tokens() -> None:
    """Local token counts are labelled separately and never gate (§16)."""
    from tests.support.evaluation_builders import replace

    local_over = [replace(o, local_prompt_tokens=10_000) for o in passing(100, tokens=100)]
    result = evaluate(baseline() + local_over)
    assert result.minimum_viable_budget == 100  # 100 <= 100: the budget gate is inclusive
    cached = [replace(o, cached_input_tokens=90) for o in passing(100, tokens=101)]
    assert evaluate(baseline() + cached + passing(200)).minimum_viable_budget == 200  # cached tokens still count


def test_provenance_coverage_is_the_lowest_repetition_share() -> None:
    t = task(required_artifacts=("req", "extra"))
    group = [
        obs(the_task=t, repetition=1, selected=("req", "extra")),
        obs(the_task=t, repetition=2, selected=("req",)),
    ]
    result = evaluate(baseline(the_task=t) + group, the_task=t)
    assert next(g for g in result.groups if g.budget == 100).provenance_coverage_bps == 5000


def test_repetitions_sharing_a_selection_each_report_its_failures() -> None:
    """Repetitions that select the same artifacts are judged once, and every
    one of them still reports the failures; a repetition that selects the
    same artifacts in another order is judged alike."""
    group = [
        obs(repetition=1, selected=("req", "secret", "ghost")),
        obs(repetition=2, selected=("req", "secret", "ghost")),
        obs(repetition=3, selected=("ghost", "secret", "req")),
        obs(repetition=4, selected=("req",)),
    ]
    result = evaluate(baseline() + group + passing(200))
    failing = sorted((a.gate, a.repetition, a.message) for a in result.failed_assertions if a.budget == 100)
    assert failing == sorted(
        [
            *(("policy", r, "selected 'ghost': unknown artifact") for r in (1, 2, 3)),
            *(("policy", r, "selected 'secret': classification restricted not allowed") for r in (1, 2, 3)),
            *(("provenance", r, "selected artifact 'ghost' is not in the registry") for r in (1, 2, 3)),
        ]
    )
    assert next(g for g in result.groups if g.budget == 100).policy_violations == 6


def test_every_gate_is_a_named_rule_in_one_table() -> None:
    """A gate's rule, its section and its report order live in GATES alone;
    GateName names the same gates for the type checker."""
    from typing import get_args

    from eceb_worker.families.eceb.gates import GATE_ORDER, GATES, GroupGate, TaskCheck
    from eceb_worker.families.eceb.verdicts import GateName

    assert [gate.name for gate in GATES] == sorted((g.name for g in GATES), key=lambda n: GATE_ORDER[n])
    assert {gate.name for gate in GATES} == set(get_args(GateName))
    assert len({gate.name for gate in GATES}) == len(GATES)
    assert [g.name for g in GATES if isinstance(g, GroupGate)] == [
        "repetitions",
        "budget",
        "quality",
        "answer_terms",
        "provenance",
        "policy",
        "repeatability",
        "disclosure",
        "abstention",
    ]
    assert {g.name for g in GATES if isinstance(g, TaskCheck)} == {
        "baseline_missing",
        "compiled_missing",
        "comparability",
        "baseline_zero_tokens",
        "off_ladder",
        "duplicate_selection",
        "no_viable_budget",
    }
    assert all(callable(g.rule) and g.rule.__doc__ and g.section.startswith("§") for g in GATES)


def test_a_compiled_budget_off_the_ladder_fails_its_task() -> None:
    result = evaluate(baseline() + passing(100) + reps(2, budget=150) + [obs(budget=None)])
    assert not result.passed
    assert result.minimum_viable_budget == 100  # the ladder is still walked and reported
    off = [(a.budget, a.repetition) for a in result.failed_assertions if a.gate == "off_ladder"]
    assert off == [(None, 1), (150, 1), (150, 2)]
    assert [g.budget for g in result.groups if g.strategy == "compiled"] == [100, 200, 300]


@pytest.mark.parametrize(("strategy", "budget", "decides"), [("compiled", 100, True), ("naive_top_k", 7, False)])
def test_an_artifact_selected_twice_is_a_failed_assertion(strategy: str, budget: int, decides: bool) -> None:
    twice = reps(2, strategy=strategy, budget=budget, selected=("req", "extra", "req"))
    result = evaluate(baseline() + passing(100) + twice)
    assert [
        (a.strategy, a.budget, a.repetition, a.message)
        for a in result.failed_assertions
        if a.gate == "duplicate_selection"
    ] == [
        (strategy, budget, 1, "selects 'req' 2 times"),
        (strategy, budget, 2, "selects 'req' 2 times"),
    ]
    assert result.passed is not decides


def test_an_artifact_selected_twice_is_judged_by_its_first_digest() -> None:
    stale_first = obs(selected=("req",), digests={"req": STALE})
    twice = replace(stale_first, selected_artifacts=(*stale_first.selected_artifacts, *obs().selected_artifacts))
    result = evaluate([*baseline(), twice, replace(twice, repetition=2)])
    assert ("provenance", "compiled", 100) in gates(result)


def test_a_budget_without_observations_reports_null_figures() -> None:
    result = evaluate(baseline() + passing(100))
    empty = next(g for g in result.groups if g.budget == 200)
    assert (empty.observations, empty.passed) == (0, False)
    assert empty.prompt_tokens is empty.cost_micro_usd is empty.quality_milli is None
    assert empty.provenance_coverage_bps is None and empty.repeatable is None
    assert empty.policy_violations == 0 and empty.auxiliary_cost_micro_usd == 0
    assert [a.gate for a in result.failed_assertions if a.budget == 200] == ["repetitions"]


def test_zero_tokens_fail_the_baseline_but_a_zero_price_only_leaves_cost_savings_undefined() -> None:
    free = [configuration(input_rate=0)]
    priced_at_zero = evaluate(baseline(cost=0) + passing(100, cost=0), configurations=free)
    assert priced_at_zero.passed
    assert (priced_at_zero.token_savings_bps, priced_at_zero.cost_savings_bps) == (9100, None)
    no_tokens = evaluate(baseline(tokens=0, cost=0) + passing(100, tokens=0, cost=0), configurations=free)
    assert not no_tokens.passed
    assert ("baseline_zero_tokens", "full_permitted_context", None) in gates(no_tokens)
    assert no_tokens.token_savings_bps is None and no_tokens.cost_savings_bps is None


def test_auxiliary_costs_of_an_off_ladder_budget_are_counted_nowhere() -> None:
    """An off-ladder budget forms no group: its auxiliary costs are neither a
    problem of their own nor added to any group; the task fails ``off_ladder``."""
    result = evaluate(baseline() + passing(100) + reps(2, budget=150), auxiliary=[aux(budget=150, cost=999)])
    assert not result.passed
    assert {a.gate for a in result.failed_assertions if a.budget == 150} == {"off_ladder"}
    assert all(g.auxiliary_cost_micro_usd == 0 for g in result.groups)
