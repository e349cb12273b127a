"""The paired summary's core (task-context-benchmark-reference.md, "Credit and
quality calculation" and "Fixed paid comparison schedule"): exact metrics
known or unknown with their reason, A − B differences, the preferred arm
(success first), medians, the executed order against the schedule, and a
verdict only when every condition holds, whatever the order of the inputs."""

from __future__ import annotations

from fractions import Fraction

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.core.canonical import canonical_json
from eceb_worker.families.paired.coverage import NOT_COUNTED, breakdown, coverage, has_started
from eceb_worker.families.paired.credits import NOT_BILLING, Rate, estimate
from eceb_worker.families.paired.journal import seconds_between
from eceb_worker.families.paired.records import Cost
from eceb_worker.families.paired.schedule import Arm, TaskKind, plan
from eceb_worker.families.paired.summary import (
    measures,
    pair_differences,
    preferred,
    schedule_check,
    summary,
    verdict,
)
from eceb_worker.families.paired.summary_document import (
    CREDITS,
    METRICS,
    SUMMARY_SCHEMA,
    AttemptSummary,
    Breakdown,
    Measure,
    MetricDifference,
    Outcome,
    PairSummary,
)
from eceb_worker.families.paired.transport import Usage

pytestmark = pytest.mark.unit

EXPERIMENT = "/exp"
NO_RATE = "no rate snapshot was frozen"
RATE = Rate(
    id="r1",
    as_of="2026-11-01",
    model="gpt-5-codex",
    speed_tier="standard",
    unit="credits_per_million_tokens",
    input="1.25",
    cached_input="0.125",
    output="10",
)
LEDGER = {(e.pair, e.arm): e.position for e in plan().executions}
VALUES: dict[str, str] = {
    "input_tokens": "2000",
    "cached_input_tokens": "500",
    "uncached_input_tokens": "1500",
    "output_tokens": "300",
    "reasoning_output_tokens": "100",
    CREDITS: "0.02",
    "wall_clock_seconds": "1.5",
    "cue_estimate_tokens": "1200",
    "context_cost_tokens": "40",
}


def attempt(
    arm: Arm,
    *,
    outcome: Outcome = Outcome.PASSED,
    values: dict[str, str] | None = None,
    unknown: dict[str, str] | None = None,
    reasons: tuple[str, ...] = (),
    ledger: int | None = None,
    name: str = "task-pair",
) -> AttemptSummary:
    """One arm's attempt whose metrics are VALUES, but for ``values`` and the ``unknown`` ones (metric -> reason)."""
    shown = {**VALUES, **(values or {})}
    missing = unknown or {}
    return AttemptSummary(
        arm=arm,
        attempt_id=f"{name}/{arm.value}",
        state="completed",
        synthetic=True,
        outcome=outcome,
        reasons=reasons,
        evidence=(),
        schema_identity=(),
        ledger_position=ledger,
        started_at="2026-12-01T00:00:00Z",
        ended_at="2026-12-01T00:00:01.5Z",
        credits=None,
        measures=tuple(
            Measure(metric=m, value=None, unknown=missing[m])
            if m in missing
            else Measure(metric=m, value=shown[m], unknown=None)
            for m in METRICS
        ),
        assessment=None,
        binding=None,
    )


def pair(
    position: int,
    *,
    a: AttemptSummary | None = None,
    b: AttemptSummary | None = None,
    complete: bool = True,
    problems: tuple[str, ...] = (),
    token: str = "0badcafe",
    differences: tuple[MetricDifference, ...] | None = None,
) -> PairSummary:
    """Schedule pair ``position``: by default both arms passed, A at 0.02 credits and B at 0.01, each at the
    ledger position the schedule gives it."""
    scheduled = plan().pairs[position - 1]
    name = f"task-pair-{position:02d}-{scheduled.task.value}-r{scheduled.repeat}-{token}"
    first = a or attempt(Arm.A, ledger=LEDGER[(position, Arm.A)], name=name)
    second = b or attempt(Arm.B, values={CREDITS: "0.01"}, ledger=LEDGER[(position, Arm.B)], name=name)
    arm, why = preferred(first, second)
    return PairSummary(
        directory=f"{EXPERIMENT}/{name}",
        name=name,
        position=position,
        task=scheduled.task,
        repeat=scheduled.repeat,
        order=scheduled.order,
        pilot=scheduled.pilot,
        complete=complete,
        problems=problems,
        arms=(first, second),
        differences=pair_differences(first, second) if differences is None else differences,
        preferred=arm,
        preference=why,
    )


def nine() -> list[PairSummary]:
    return [pair(position) for position in range(1, 10)]


def value_of(found: tuple[Measure, ...] | tuple[MetricDifference, ...], metric: str) -> tuple[str | None, str | None]:
    (shown,) = [m for m in found if m.metric == metric]
    return shown.value, shown.unknown


def overall(pairs: list[PairSummary]) -> Breakdown:
    return breakdown("all", [p for p in pairs if p.complete])


def decide(pairs: list[PairSummary], frozen_pairs: int = 9) -> tuple[bool, tuple[str, ...]]:
    found = verdict(pairs, frozen_pairs, overall(pairs), problems=(), synthetic=True)
    if not found.reached:
        assert (found.result, found.basis) == (None, None)
    return found.reached, found.reasons


# --- seconds_between


def test_seconds_between_is_exact_to_nine_fraction_digits() -> None:
    assert seconds_between("2026-12-01T15:04:05.123456789Z", "2026-12-01T15:04:06Z") == Fraction(876543211, 10**9)
    assert seconds_between("2026-12-01T15:04:05.000000001Z", "2026-12-01T15:04:05.000000002Z") == Fraction(1, 10**9)
    assert seconds_between("2026-12-01T15:04:05.5Z", "2026-12-01T15:04:05.25Z") == Fraction(-1, 4)
    assert seconds_between("2026-12-01T15:04:05Z", "2026-12-01T15:04:05Z") == 0


def test_seconds_between_crosses_day_month_and_year_boundaries() -> None:
    assert seconds_between("2026-12-31T23:59:59.999999999Z", "2027-01-01T00:00:00.000000001Z") == Fraction(2, 10**9)
    assert seconds_between("2028-02-28T23:00:00Z", "2028-03-01T01:00:00Z") == 26 * 3600  # 2028 is a leap year
    assert seconds_between("2026-11-30T12:00:00Z", "2026-12-01T11:59:59.5Z") == Fraction(172799, 2)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-12-01 00:00:00Z",
        "2026-12-01T00:00Z",
        "2026-12-01T00:00:00+01:00",
    ],
)
def test_seconds_between_an_invalid_timestamp_is_none(text: str) -> None:
    assert seconds_between(text, "2026-12-01T00:00:00Z") is None
    assert seconds_between("2026-12-01T00:00:00Z", text) is None


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01T25:00:00Z",
        "2026-12-01T00:60:00Z",
        "2026-12-01T00:00:00",
        "2026-12-01T00:00:00.1234567890Z",
        "2026-12-01T00:00:00.-5Z",
        "2026-12-01T00:00:00.Z",
    ],
    ids=["hour-25", "minute-60", "no-Z", "ten-fraction-digits", "signed-fraction", "empty-fraction"],
)
def test_seconds_between_a_timestamp_outside_rfc3339_utc_is_none(text: str) -> None:
    assert seconds_between("2026-12-01T00:00:00Z", text) is None


# --- measures


def test_the_measures_of_a_completed_usage_are_exact_and_in_order() -> None:
    usage = Usage(input_tokens=2000, cached_input_tokens=500, output_tokens=300, reasoning_output_tokens=100)
    credits = estimate(
        usage, completed=True, rate=RATE, model="gpt-5-codex", speed_tier="standard", started_on="2026-12-01"
    )
    found = measures(
        usage=usage,
        why_no_usage="unused",
        credits=credits,
        wall_clock=Fraction(3, 2),
        why_no_wall_clock="unused",
        context_tokens=1200,
        context_cost=Cost(known=True, tokens=40, basis="measured"),
    )
    assert [(m.metric, m.value, m.unknown) for m in found] == [
        ("input_tokens", "2000", None),
        ("cached_input_tokens", "500", None),
        ("uncached_input_tokens", "1500", None),
        ("output_tokens", "300", None),
        ("reasoning_output_tokens", "100", None),
        (CREDITS, "0.0049375", None),
        ("wall_clock_seconds", "1.5", None),
        ("cue_estimate_tokens", "1200", None),
        ("context_cost_tokens", "40", None),
    ]


def test_without_usage_every_token_metric_is_unknown_with_its_reason() -> None:
    why = "the turn did not complete: its partial usage is never a total"
    credits = estimate(
        None, completed=False, rate=None, model="gpt-5-codex", speed_tier="standard", started_on="2026-12-01"
    )
    assert credits.reason is not None
    found = measures(
        usage=None,
        why_no_usage=why,
        credits=credits,
        wall_clock=Fraction(7, 4),
        why_no_wall_clock="unused",
        context_tokens=800,
        context_cost=Cost(known=False, tokens=None, basis="the cue's production was not measured"),
    )
    assert [(m.metric, m.value, m.unknown) for m in found] == [
        ("input_tokens", None, why),
        ("cached_input_tokens", None, why),
        ("uncached_input_tokens", None, why),
        ("output_tokens", None, why),
        ("reasoning_output_tokens", None, why),
        (CREDITS, None, credits.reason),
        ("wall_clock_seconds", "1.75", None),
        ("cue_estimate_tokens", "800", None),
        ("context_cost_tokens", None, "the cue's production was not measured"),
    ]


def test_a_missing_reasoning_count_alone_is_the_only_unknown() -> None:
    usage = Usage(input_tokens=2000, cached_input_tokens=500, output_tokens=300, reasoning_output_tokens=None)
    found = measures(
        usage=usage,
        why_no_usage="unused",
        credits=None,
        wall_clock=None,
        why_no_wall_clock="attempt.json is missing",
        context_tokens=None,
        context_cost=None,
    )
    assert [m.metric for m in found if m.value is None and m.metric in METRICS[:5]] == ["reasoning_output_tokens"]
    assert value_of(found, "reasoning_output_tokens") == (None, "the completed turn reported no reasoning count")
    assert [value_of(found, m)[0] for m in METRICS[:4]] == ["2000", "500", "1500", "300"]
    assert value_of(found, "wall_clock_seconds") == (None, "attempt.json is missing")
    assert value_of(found, "context_cost_tokens") == (None, "costs.json cannot be read")


def test_cached_input_over_input_has_no_uncached_input() -> None:
    usage = Usage(input_tokens=10, cached_input_tokens=11, output_tokens=3)
    found = measures(
        usage=usage,
        why_no_usage="unused",
        credits=None,
        wall_clock=None,
        why_no_wall_clock="unused",
        context_tokens=1,
        context_cost=None,
    )
    assert value_of(found, "uncached_input_tokens") == (None, "cached input exceeds input: not a subset")
    assert value_of(found, "input_tokens") == ("10", None)


def counted_measures(usage: Usage) -> tuple[Measure, ...]:
    credits = estimate(
        usage, completed=True, rate=RATE, model="gpt-5-codex", speed_tier="standard", started_on="2026-12-01"
    )
    return measures(
        usage=usage,
        why_no_usage="unused",
        credits=credits,
        wall_clock=Fraction(1),
        why_no_wall_clock="unused",
        context_tokens=1,
        context_cost=None,
    )


def test_a_missing_counter_is_unknown_for_each_metric_that_needs_it_and_no_other() -> None:
    usage = Usage(input_tokens=10000, cached_input_tokens=None, output_tokens=1000, reasoning_output_tokens=0)
    found = counted_measures(usage)
    lacks = "missing_counters: the completed turn's usage lacks cached_input_tokens"
    assert value_of(found, "cached_input_tokens") == (None, lacks)
    assert value_of(found, "uncached_input_tokens") == (None, lacks)
    assert value_of(found, CREDITS) == (None, "the completed turn's usage lacks cached_input_tokens")
    assert [value_of(found, m)[0] for m in ("input_tokens", "output_tokens", "reasoning_output_tokens")] == [
        "10000",
        "1000",
        "0",
    ]


def test_a_negative_counter_is_unknown_like_a_missing_one() -> None:
    usage = Usage(
        input_tokens=None,
        cached_input_tokens=0,
        output_tokens=5,
        reasoning_output_tokens=0,
        not_counts=("input_tokens",),
    )
    found = counted_measures(usage)
    no_count = "missing_counters: the completed turn's usage reports input_tokens as no count (not an integer >= 0)"
    assert value_of(found, "input_tokens") == (None, no_count)
    assert value_of(found, "uncached_input_tokens") == (None, no_count)
    assert value_of(found, "cached_input_tokens") == ("0", None)
    assert value_of(found, CREDITS)[0] is None


def test_counters_past_the_range_are_unknown_as_overflows_with_the_others_known() -> None:
    usage = Usage(input_tokens=10**20, cached_input_tokens=0, output_tokens=2**63, reasoning_output_tokens=3)
    found = counted_measures(usage)
    assert value_of(found, "input_tokens") == (None, f"overflow: input_tokens {10**20} exceeds {2**63 - 1}")
    assert value_of(found, "uncached_input_tokens") == (None, f"overflow: input_tokens {10**20} exceeds {2**63 - 1}")
    assert value_of(found, "output_tokens") == (None, f"overflow: output_tokens {2**63} exceeds {2**63 - 1}")
    assert [value_of(found, m)[0] for m in ("cached_input_tokens", "reasoning_output_tokens")] == ["0", "3"]
    credits = value_of(found, CREDITS)
    assert (
        credits[0] is None and credits[1] is not None and "input_tokens" in credits[1] and "output_tokens" in credits[1]
    )
    unknown = {m.metric: m.unknown for m in found if m.unknown is not None}
    differences = pair_differences(attempt(Arm.A, unknown=unknown), attempt(Arm.B, values={"input_tokens": "10"}))
    assert value_of(differences, "input_tokens")[0] is None and value_of(differences, "output_tokens")[0] is None


# --- one pair


def test_pair_differences_are_a_minus_b() -> None:
    a = attempt(Arm.A, values={"output_tokens": "300", CREDITS: "0.0049375", "wall_clock_seconds": "1.5"})
    b = attempt(
        Arm.B,
        values={"input_tokens": "1500", "output_tokens": "400", CREDITS: "0.004", "wall_clock_seconds": "2.25"},
    )
    found = pair_differences(a, b)
    assert [d.metric for d in found] == list(METRICS)
    assert value_of(found, "input_tokens") == ("500", None)
    assert value_of(found, "output_tokens") == ("-100", None)
    assert value_of(found, CREDITS) == ("0.0009375", None)
    assert value_of(found, "wall_clock_seconds") == ("-0.75", None)
    assert value_of(found, "cue_estimate_tokens") == ("0", None)
    assert value_of(pair_differences(b, a), "input_tokens") == ("-500", None)


def test_an_unknown_difference_names_the_arm_whose_value_is_unknown() -> None:
    a = attempt(Arm.A, unknown={CREDITS: NO_RATE, "output_tokens": "the turn did not complete"})
    b = attempt(Arm.B, unknown={"output_tokens": "no usage"})
    found = pair_differences(a, b)
    assert value_of(found, CREDITS) == (None, f"arm A: {NO_RATE}")
    assert value_of(found, "output_tokens") == (None, "arm A: the turn did not complete; arm B: no usage")
    assert value_of(pair_differences(b, attempt(Arm.A)), "output_tokens") == (None, "arm B: no usage")
    assert {d.unknown for d in pair_differences(a, None)} == {
        f"arm A: {NO_RATE}; arm B: no attempt",
        "arm A: the turn did not complete; arm B: no attempt",
        "arm B: no attempt",
    }
    assert {d.unknown for d in pair_differences(None, None)} == {"arm A: no attempt; arm B: no attempt"}


def test_a_passed_arm_beats_a_failed_one_even_when_the_failed_one_is_cheaper() -> None:
    good = attempt(Arm.A, values={CREDITS: "0.5"})
    wrong = attempt(Arm.B, outcome=Outcome.FAILED, values={CREDITS: "0.001"})
    assert preferred(good, wrong) == (Arm.A, "only arm A passed (arm B: failed)")
    cheap_wrong_a = attempt(Arm.A, outcome=Outcome.FAILED, values={CREDITS: "0"})
    assert preferred(cheap_wrong_a, attempt(Arm.B, values={CREDITS: "9"}))[0] is Arm.B
    unassessed = attempt(Arm.B, outcome=Outcome.UNASSESSED, values={CREDITS: "0.001"})
    assert preferred(good, unassessed) == (Arm.A, "only arm A passed (arm B: unassessed)")


def test_with_both_passed_fewer_credits_is_preferred() -> None:
    a, b = attempt(Arm.A, values={CREDITS: "0.0049375"}), attempt(Arm.B, values={CREDITS: "0.0049374"})
    assert preferred(a, b) == (Arm.B, "both passed; arm B used fewer credits")
    assert preferred(attempt(Arm.A, values={CREDITS: "0.001"}), b) == (Arm.A, "both passed; arm A used fewer credits")


def test_equal_or_unknown_credits_or_no_success_prefer_no_arm() -> None:
    a, b = attempt(Arm.A, values={CREDITS: "0.010"}), attempt(Arm.B, values={CREDITS: "0.01"})
    assert preferred(a, b) == (None, "both passed with equal credit estimates")
    unknown = attempt(Arm.B, unknown={CREDITS: NO_RATE})
    assert preferred(a, unknown) == (None, "both passed; a credit estimate is unavailable")
    failed_a = attempt(Arm.A, outcome=Outcome.FAILED, values={CREDITS: "0"})
    failed_b = attempt(Arm.B, outcome=Outcome.INCOMPLETE)
    assert preferred(failed_a, failed_b) == (None, "neither arm passed (A: failed, B: incomplete)")
    assert preferred(a, None) == (None, "the pair lacks an arm's attempt")


# --- groups of pairs


def test_a_breakdown_of_an_even_count_has_the_exact_midpoint_as_its_median() -> None:
    # B has 2000 input tokens and 0.02 credits: the differences are 3, 10, -1, 4 and 0.001, -0.5, 0.0031, 0.002
    rows = [("2003", "0.021"), ("2010", "-0.48"), ("1999", "0.0231"), ("2004", "0.022")]
    pairs = [
        pair(n, differences=pair_differences(attempt(Arm.A, values={"input_tokens": i, CREDITS: c}), attempt(Arm.B)))
        for n, (i, c) in enumerate(rows, 1)
    ]
    unknown = attempt(Arm.A, unknown={"input_tokens": "no usage", CREDITS: NO_RATE})
    pairs.append(pair(5, differences=pair_differences(unknown, attempt(Arm.B))))
    found = breakdown("all", list(reversed(pairs)))
    assert (found.group, found.pairs) == ("all", 5)
    assert [m.metric for m in found.metrics] == list(METRICS)
    credits = next(m for m in found.metrics if m.metric == CREDITS)
    assert (credits.median, credits.minimum, credits.maximum) == ("0.0015", "-0.5", "0.0031")
    assert (credits.known, credits.unknown, credits.unknown_reasons) == (4, 1, (f"pair 5: arm A: {NO_RATE}",))
    assert (credits.positive, credits.negative, credits.zero) == (3, 1, 0)
    tokens = next(m for m in found.metrics if m.metric == "input_tokens")
    assert (tokens.median, tokens.minimum, tokens.maximum, tokens.known) == ("3.5", "-1", "10", 4)
    assert found == breakdown("all", pairs)


def test_the_exact_schedule_order_follows_with_its_imbalance() -> None:
    check = schedule_check(nine())
    assert check.executed == tuple(f"pair {e.pair} arm {e.arm.value}" for e in plan().executions)
    assert len(check.executed) == 18
    assert (check.follows_schedule, check.deviations, check.not_executed) == (True, (), ())
    assert [(i.task, i.a_first, i.b_first, i.ratio) for i in check.imbalance] == [
        (TaskKind.EXPLANATION, 2, 1, "2:1"),
        (TaskKind.DISCOVERY, 1, 2, "2:1"),
        (TaskKind.VERIFICATION, 2, 1, "2:1"),
        (None, 5, 4, "5:4"),
    ]
    assert [(b.group, b.pairs) for b in check.by_order] == [("A first", 5), ("B first", 4)]


def test_a_swapped_pair_order_is_a_deviation() -> None:
    pairs = nine()
    name = pairs[1].name  # pair 2, discovery B/A: executions 3 (B) then 4 (A)
    a = attempt(Arm.A, ledger=3, name=name)
    b = attempt(Arm.B, values={CREDITS: "0.01"}, ledger=4, name=name)
    pairs[1] = pair(2, a=a, b=b)
    check = schedule_check(pairs)
    assert check.follows_schedule is False
    assert check.deviations == (
        "pair 2 arm A ran as execution 3; the schedule's is execution 4",
        "pair 2 arm B ran as execution 4; the schedule's is execution 3",
    )
    assert check.executed[2:4] == ("pair 2 arm A", "pair 2 arm B")
    assert check.not_executed == ()


def test_a_missing_pair_and_an_unstarted_arm_are_not_executed() -> None:
    pairs = nine()[:8]
    name = pairs[6].name  # pair 7, explanation A/B: executions 13 and 14
    pairs[6] = pair(7, b=attempt(Arm.B, outcome=Outcome.NOT_STARTED, ledger=None, name=name), complete=False)
    check = schedule_check(pairs)
    assert check.not_executed == (
        "pair 7 arm B (execution 14)",
        "pair 9 arm A (execution 17)",
        "pair 9 arm B (execution 18)",
    )
    assert (check.follows_schedule, check.deviations) == (True, ())
    assert len(check.executed) == 15
    # the imbalance is of the complete pairs shown: pairs 7 and 9 are not among them
    assert [(i.a_first, i.b_first, i.ratio) for i in check.imbalance] == [
        (1, 1, "1:1"),
        (1, 2, "2:1"),
        (1, 1, "1:1"),
        (3, 4, "4:3"),
    ]


def test_a_pair_run_twice_is_a_deviation() -> None:
    pairs = [*nine(), pair(4, token="feedface")]
    check = schedule_check(pairs)
    assert check.follows_schedule is False
    assert len(check.deviations) == 2
    assert all(" ran again in task-pair-04-explanation-r2-" in d for d in check.deviations)


# --- the verdict


def test_nine_complete_pairs_all_passed_with_known_credits_reach_a_verdict() -> None:
    pairs = nine()
    found = verdict(pairs, 9, overall(pairs), problems=(), synthetic=True)
    assert (found.reached, found.reasons, found.synthetic) == (True, (), True)
    assert found.result == "task cue (B) used fewer credits"
    assert found.basis is not None and "median credit difference A − B 0.01" in found.basis
    assert NOT_BILLING in found.basis and "9 positive" in found.basis
    cheaper_a = [pair(n, b=attempt(Arm.B, values={CREDITS: "0.03"}, ledger=LEDGER[(n, Arm.B)])) for n in range(1, 10)]
    assert verdict(cheaper_a, 9, overall(cheaper_a), problems=(), synthetic=False).result == (
        "frozen overview (A) used fewer credits"
    )
    even = [pair(n, b=attempt(Arm.B, values={CREDITS: "0.02"}, ledger=LEDGER[(n, Arm.B)])) for n in range(1, 10)]
    assert verdict(even, 9, overall(even), problems=(), synthetic=False).result == "no difference in credits"


def test_one_failed_attempt_prevents_the_verdict() -> None:
    pairs = nine()
    failed = attempt(Arm.B, outcome=Outcome.FAILED, reasons=("the answer is wrong",), values={CREDITS: "0.001"})
    pairs[2] = pair(3, b=failed)
    assert decide(pairs) == (False, ("pair 3 arm B did not succeed (failed): the answer is wrong",))


def test_one_unassessed_attempt_prevents_the_verdict() -> None:
    pairs = nine()
    pairs[0] = pair(1, a=attempt(Arm.A, outcome=Outcome.UNASSESSED))
    assert decide(pairs) == (False, ("pair 1 arm A did not succeed (unassessed): unassessed",))


def test_one_incomplete_pair_prevents_the_verdict() -> None:
    pairs = nine()
    pairs[4] = pair(5, complete=False, problems=("manifest.json: changed since it was prepared",))
    reached, reasons = decide(pairs)
    assert not reached
    assert reasons == (
        f"pair 5 ({pairs[4].name}) does not count: manifest.json: changed since it was prepared",
        "8 complete pairs; the frozen policy needs exactly 9",
    )


def test_a_pair_count_short_by_one_prevents_the_verdict() -> None:
    assert decide(nine()[:8]) == (False, ("8 complete pairs; the frozen policy needs exactly 9",))
    assert decide(nine(), frozen_pairs=10) == (False, ("9 complete pairs; the frozen policy needs exactly 10",))


def test_two_complete_directories_for_one_position_prevent_the_verdict() -> None:
    pairs = [*nine(), pair(4, token="feedface")]
    names = ", ".join(sorted(p.name for p in pairs if p.position == 4))
    assert decide(pairs) == (False, (f"pair 4 was run in 2 directories ({names}): which one counts is not stated",))


def test_one_unknown_credit_prevents_the_verdict() -> None:
    pairs = nine()
    pairs[5] = pair(6, b=attempt(Arm.B, unknown={CREDITS: NO_RATE}, ledger=LEDGER[(6, Arm.B)]))
    assert pairs[5].complete and all(arm.outcome is Outcome.PASSED for arm in pairs[5].arms)
    assert decide(pairs) == (False, (f"1 credit differences are unknown: pair 6: arm B: {NO_RATE}",))


def test_problems_beyond_the_pairs_are_listed_first() -> None:
    pairs = nine()
    found = verdict(pairs, 9, overall(pairs), problems=("the repository cannot be read",), synthetic=False)
    assert (found.reached, found.reasons) == (False, ("the repository cannot be read",))


# --- the document


def varied_pairs() -> list[PairSummary]:
    """Nine pairs, a second directory of pair 4, an incomplete one of pair 7 and one whose manifest cannot be read."""
    pairs = nine()
    pairs[2] = pair(3, b=attempt(Arm.B, outcome=Outcome.FAILED, values={CREDITS: "0.001"}, ledger=6))
    pairs[5] = pair(6, b=attempt(Arm.B, unknown={CREDITS: NO_RATE}, ledger=11))
    pairs[7] = pair(8, a=attempt(Arm.A, values={"input_tokens": "999", CREDITS: "0.0049375"}, ledger=16))
    pairs.append(pair(4, token="feedface"))
    pairs.append(pair(7, token="00c0ffee", complete=False, problems=("attempts/B: incomplete journal",)))
    unreadable = msgspec.structs.replace(
        pair(1, token="deadbeef", complete=False, problems=("manifest.json cannot be read",)),
        position=None,
        task=None,
        repeat=None,
        order=None,
        pilot=None,
    )
    pairs.append(unreadable)
    return pairs


PAIRS = varied_pairs()
DIRECTORIES = sorted({p.directory for p in PAIRS})
ASSESSMENTS = [f"{EXPERIMENT}/assessments-{n}.json" for n in range(3)]


def document(pairs: list[PairSummary], directories: list[str], assessments: list[str]) -> bytes:
    return canonical_json(
        summary(
            label="test",
            synthetic=True,
            freeze_digest="f" * 64,
            repository="/repo",
            reviewed_revision="1" * 40,
            repository_problems=(),
            directories=directories,
            assessments=assessments,
            frozen_pairs=9,
            pairs=pairs,
        )
    )


@given(st.permutations(PAIRS), st.permutations(DIRECTORIES), st.permutations(ASSESSMENTS))
def test_the_summary_does_not_depend_on_the_order_of_its_inputs(
    pairs: list[PairSummary], directories: list[str], assessments: list[str]
) -> None:
    assert document(pairs, directories, assessments) == document(PAIRS, DIRECTORIES, ASSESSMENTS)


def test_the_summary_orders_and_counts_what_it_was_given() -> None:
    found = summary(
        label="test",
        synthetic=True,
        freeze_digest="f" * 64,
        repository="/repo",
        reviewed_revision="1" * 40,
        repository_problems=(),
        directories=list(reversed(DIRECTORIES)),
        assessments=ASSESSMENTS,
        frozen_pairs=9,
        pairs=list(reversed(PAIRS)),
    )
    assert found.schema == SUMMARY_SCHEMA and found.credit_label == NOT_BILLING
    assert found.directories == tuple(DIRECTORIES)
    assert [(p.position, p.name[-8:]) for p in found.pairs][:6] == [
        (None, "deadbeef"),
        (1, "0badcafe"),
        (2, "0badcafe"),
        (3, "0badcafe"),
        (4, "0badcafe"),
        (4, "feedface"),
    ]
    assert found.overall.pairs == 11, "every started pair with its position: the incomplete pair 7 too"
    assert [(b.group, b.pairs) for b in found.per_task] == [("explanation", 5), ("discovery", 3), ("verification", 3)]
    incomplete = [r for m in found.overall.metrics for r in m.unknown_reasons if r.startswith("pair 7: ")]
    assert incomplete == [f"pair 7: {NOT_COUNTED}"] * len(METRICS)
    assert found.verdict.reached is False


def test_a_started_pair_that_does_not_count_is_in_every_metrics_coverage() -> None:
    """Pair 2's arm B journal is incomplete: pair 2 is unknown for each metric
    arm B cannot support and known for those both arms do; pair 3 never
    started and is left out; pair 5's evidence changed: it supports none."""
    lacking = "incomplete journal: any usage seen is partial, never a total"
    journal_metrics = [m for m in METRICS if m not in ("cue_estimate_tokens", "context_cost_tokens")]
    b_incomplete = attempt(
        Arm.B, outcome=Outcome.INCOMPLETE, unknown=dict.fromkeys(journal_metrics, lacking), ledger=LEDGER[(2, Arm.B)]
    )
    b_unverified = attempt(Arm.B, outcome=Outcome.UNVERIFIED, ledger=LEDGER[(5, Arm.B)])
    not_started = attempt(Arm.A, outcome=Outcome.NOT_STARTED, unknown=dict.fromkeys(METRICS, "did not start"))
    pairs = [
        pair(1),
        pair(
            2,
            b=b_incomplete,
            complete=False,
            problems=("arm B is incomplete: attempt-start.json without attempt.json",),
        ),
        pair(3, a=not_started, b=msgspec.structs.replace(not_started, arm=Arm.B), complete=False, problems=("x", "y")),
        pair(4),
        pair(5, b=b_unverified, complete=False, problems=("arm B is unverified: provider.jsonl: changed",)),
    ]
    found = breakdown("all", [p for p in pairs if has_started(p)])
    assert found.pairs == 4
    metrics = {m.metric: m for m in found.metrics}
    for metric in journal_metrics:
        assert (metrics[metric].known, metrics[metric].unknown) == (2, 2), metric
        assert metrics[metric].unknown_reasons == (f"pair 2: arm B: {lacking}", f"pair 5: {NOT_COUNTED}")
    cue = metrics["cue_estimate_tokens"]
    assert (cue.known, cue.unknown, cue.unknown_reasons) == (3, 1, (f"pair 5: {NOT_COUNTED}",))
    assert [d.metric for d in coverage(pairs[0])] == list(METRICS)


def summarized(pairs: list[PairSummary]) -> tuple[bool, tuple[str, ...]]:
    found = summary(
        label="test",
        synthetic=True,
        freeze_digest="f" * 64,
        repository="/repo",
        reviewed_revision="1" * 40,
        repository_problems=(),
        directories=[p.directory for p in pairs],
        assessments=(),
        frozen_pairs=9,
        pairs=pairs,
    )
    return found.verdict.reached, found.verdict.reasons


def test_an_order_that_deviates_from_the_frozen_schedule_prevents_the_verdict() -> None:
    assert summarized(nine())[0] is True
    pairs = nine()
    name = pairs[1].name
    pairs[1] = pair(2, a=attempt(Arm.A, ledger=3, name=name), b=attempt(Arm.B, ledger=4, name=name))
    reached, reasons = summarized(pairs)
    assert reached is False
    assert "the executed order deviates from the frozen schedule: pair 2 arm A ran as execution 3; " in reasons[0]
