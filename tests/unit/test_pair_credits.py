"""Credit estimates (task-context-benchmark-reference.md, "Credit and
quality calculation"): exact, and unavailable with its reason, never zero."""

from __future__ import annotations

from fractions import Fraction

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.families.paired.credits import (
    NOT_BILLING,
    UNIT,
    CreditEstimate,
    Rate,
    RatesFile,
    Unavailable,
    estimate,
    exact_decimal,
    select_rate,
)
from eceb_worker.families.paired.transport import Usage
from tests.support.paths import REPO

pytestmark = pytest.mark.unit

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


def usage(input_tokens: int = 2000, cached: int = 500, output: int = 300, reasoning: int | None = 100) -> Usage:
    return Usage(
        input_tokens=input_tokens, cached_input_tokens=cached, output_tokens=output, reasoning_output_tokens=reasoning
    )


def run(
    given_usage: Usage | None, *, completed: bool = True, rate: Rate | None = RATE, **settings: str
) -> CreditEstimate:
    return estimate(
        given_usage,
        completed=completed,
        rate=rate,
        model=settings.get("model", "gpt-5-codex"),
        speed_tier=settings.get("speed_tier", "standard"),
        started_on=settings.get("started_on", "2026-12-01"),
    )


def test_the_estimate_is_the_seeds_formula_computed_exactly() -> None:
    result = run(usage())
    # ((2000 - 500) * 1.25 + 500 * 0.125 + 300 * 10) / 1,000,000 = 4937.5 / 1e6
    assert result.credits == "0.0049375" and result.rate == "r1" and result.unavailable is None
    assert result.label == NOT_BILLING


def test_a_missing_reasoning_count_alone_keeps_the_estimate() -> None:
    assert run(usage(reasoning=None)).credits == run(usage()).credits


@pytest.mark.parametrize(
    ("given_usage", "options", "cause"),
    [
        (usage(), {"completed": False}, Unavailable.INCOMPLETE_TURN),
        (None, {}, Unavailable.MISSING_COUNTERS),
        (usage(), {"rate": None}, Unavailable.NO_RATE),
        (usage(), {"model": "gpt-5-mini"}, Unavailable.INCOMPATIBLE_MODEL),
        (usage(), {"speed_tier": "flex"}, Unavailable.INCOMPATIBLE_SPEED_TIER),
        (usage(), {"started_on": "2026-10-31"}, Unavailable.FUTURE_RATE),
        (usage(input_tokens=10, cached=11), {}, Unavailable.SUBSET_VIOLATION),
        (usage(output=10, reasoning=11), {}, Unavailable.SUBSET_VIOLATION),
        (usage(input_tokens=2**63, cached=0), {}, Unavailable.OVERFLOW),
        (usage(output=2**63, reasoning=0), {}, Unavailable.OVERFLOW),
    ],
    ids=[
        "incomplete-turn",
        "missing-counters",
        "no-rate",
        "another-model",
        "another-speed-tier",
        "rate-from-the-future",
        "cached-over-input",
        "reasoning-over-output",
        "input-at-2^63",
        "output-at-2^63",
    ],
)
def test_each_cause_makes_the_estimate_unavailable_never_zero(
    given_usage: Usage | None, options: dict[str, object], cause: Unavailable
) -> None:
    result = run(given_usage, **options)  # type: ignore[arg-type]
    assert (result.credits, result.rate, result.unavailable) == (None, None, cause)
    assert result.reason


@pytest.mark.parametrize(
    ("given_usage", "reason"),
    [
        (
            Usage(input_tokens=10000, cached_input_tokens=None, output_tokens=1000, reasoning_output_tokens=0),
            "the completed turn's usage lacks cached_input_tokens",
        ),
        (
            Usage(input_tokens=None, cached_input_tokens=0, output_tokens=None, not_counts=("output_tokens",)),
            "the completed turn's usage lacks input_tokens; "
            "the completed turn's usage reports output_tokens as no count (not an integer >= 0)",
        ),
    ],
    ids=["absent", "absent-and-negative"],
)
def test_a_missing_counter_of_a_completed_turn_names_each_counter(given_usage: Usage, reason: str) -> None:
    result = run(given_usage)
    assert (result.credits, result.unavailable, result.reason) == (None, Unavailable.MISSING_COUNTERS, reason)


def test_a_reasoning_count_reported_as_no_count_alone_keeps_the_estimate() -> None:
    broken = msgspec.structs.replace(usage(), reasoning_output_tokens=None, not_counts=("reasoning_output_tokens",))
    assert run(broken).credits == run(usage()).credits == "0.0049375"


def test_an_overflow_names_each_counter_past_the_range() -> None:
    result = run(usage(input_tokens=10**20, cached=0, output=2**63, reasoning=0))
    assert result.unavailable is Unavailable.OVERFLOW
    assert result.reason == f"input_tokens {10**20} exceeds {2**63 - 1}; output_tokens {2**63} exceeds {2**63 - 1}"


def test_a_rate_dated_the_day_the_attempt_started_applies() -> None:
    assert run(usage(), started_on="2026-11-01").credits == "0.0049375"


@given(
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    st.from_regex(r"(0|[1-9][0-9]{0,5})(\.[0-9]{1,6})?", fullmatch=True),
)
def test_the_estimate_is_exact_for_any_counters_and_rate(
    input_tokens: int, cached: int, output: int, rate: str
) -> None:
    cached = min(cached, input_tokens)
    given_rate = msgspec.structs.replace(RATE, input=rate, cached_input=rate, output=rate)
    result = run(usage(input_tokens, cached, output, None), rate=given_rate)
    expected = ((input_tokens - cached) + cached + output) * Fraction(rate) / 1_000_000
    assert result.credits is not None and Fraction(result.credits) == expected
    assert "e" not in result.credits.lower()


def test_exact_decimals() -> None:
    assert [exact_decimal(Fraction(n, d)) for n, d in ((0, 1), (5, 1), (1, 8), (49375, 10**7))] == [
        "0",
        "5",
        "0.125",
        "0.0049375",
    ]
    with pytest.raises(ValueError, match="no finite decimal"):
        exact_decimal(Fraction(1, 3))


def test_the_example_rates_decode() -> None:
    rates = msgspec.json.decode((REPO / "examples/paired/rates.json").read_bytes(), type=RatesFile)
    assert rates.synthetic and rates.rates[0].unit == "credits_per_million_tokens"


# --- each cause on its own, and the rate that applies


MAX = 2**63 - 1
STARTED = "2026-12-01"


def rate(rate_id: str, as_of: str = "2026-11-01", **fields: str) -> Rate:
    return msgspec.structs.replace(RATE, id=rate_id, as_of=as_of, **fields)


def rates_file(*snapshots: Rate) -> RatesFile:
    return RatesFile(schema="symgliph.eceb/pair-rates-v0.1", synthetic=True, label="test rates", rates=snapshots)


def chosen(rates: RatesFile | None, usage_given: Usage | None = None) -> CreditEstimate:
    """The estimate of a completed gpt-5-codex/standard attempt started on STARTED, with the rate ``rates`` gives."""
    found, ambiguous = select_rate(rates, "gpt-5-codex", "standard", STARTED)
    return estimate(
        usage() if usage_given is None else usage_given,
        completed=True,
        rate=found,
        model="gpt-5-codex",
        speed_tier="standard",
        started_on=STARTED,
        ambiguous=ambiguous,
    )


def assert_unavailable(result: CreditEstimate, cause: Unavailable, *words: str) -> None:
    assert (result.credits, result.rate, result.unavailable) == (None, None, cause)
    assert result.credits != "0"
    assert result.reason is not None and all(word in result.reason for word in words), result.reason
    assert result.label == NOT_BILLING


def test_an_incomplete_turn_is_unavailable_even_with_its_counters() -> None:
    assert_unavailable(run(usage(), completed=False), Unavailable.INCOMPLETE_TURN, "did not complete")


def test_a_completed_turn_without_counters_is_unavailable() -> None:
    assert_unavailable(run(None), Unavailable.MISSING_COUNTERS, "no usage counters")


def test_two_snapshots_applying_on_the_same_day_are_ambiguous() -> None:
    rates = rates_file(rate("r-b", "2026-11-20"), rate("r-a", "2026-11-20"), rate("r-old", "2026-10-01"))
    found, ambiguous = select_rate(rates, "gpt-5-codex", "standard", STARTED)
    assert found is None and ambiguous is not None
    assert "r-a, r-b" in ambiguous and "2026-11-20" in ambiguous
    result = chosen(rates)
    assert_unavailable(result, Unavailable.AMBIGUOUS_RATE)
    assert result.reason == ambiguous


def test_no_frozen_rate_is_unavailable() -> None:
    assert select_rate(None, "gpt-5-codex", "standard", STARTED) == (None, None)
    assert_unavailable(chosen(None), Unavailable.NO_RATE)
    assert_unavailable(run(usage(), rate=None), Unavailable.NO_RATE)


def test_a_rate_for_another_model_is_unavailable() -> None:
    assert_unavailable(
        chosen(rates_file(rate("r-mini", model="gpt-5-mini"))),
        Unavailable.INCOMPATIBLE_MODEL,
        "r-mini",
        "gpt-5-mini",
        "gpt-5-codex",
    )


def test_a_rate_for_another_speed_tier_is_unavailable() -> None:
    assert_unavailable(
        chosen(rates_file(rate("r-flex", speed_tier="flex"))), Unavailable.INCOMPATIBLE_SPEED_TIER, "r-flex", "flex"
    )


def test_a_rate_in_another_unit_is_kept_and_never_applies() -> None:
    document = {
        "schema": "symgliph.eceb/pair-rates-v0.1",
        "synthetic": True,
        "label": "test rates",
        "rates": [msgspec.to_builtins(rate("r-usd", unit="usd_per_million_tokens"))],
    }
    rates = msgspec.json.decode(msgspec.json.encode(document), type=RatesFile)
    assert rates.rates[0].unit == "usd_per_million_tokens"
    assert_unavailable(chosen(rates), Unavailable.INCOMPATIBLE_UNIT, "r-usd", "usd_per_million_tokens", UNIT)


def test_a_rate_dated_after_the_attempt_started_is_unavailable() -> None:
    assert_unavailable(
        chosen(rates_file(rate("r-next", "2026-12-02"))), Unavailable.FUTURE_RATE, "r-next", "2026-12-02", STARTED
    )


@pytest.mark.parametrize(
    "counters",
    [
        (2**63, 0, 10, 0),
        (2**63, 2**63, 10, 0),
        (MAX, 2**63, 10, 0),
        (10, 0, 2**63, 0),
        (10, 0, MAX, 2**63),
    ],
    ids=["input", "input-and-cached", "cached", "output", "reasoning"],
)
def test_a_counter_at_exactly_2_to_the_63_overflows(counters: tuple[int, int, int, int]) -> None:
    assert_unavailable(run(usage(*counters)), Unavailable.OVERFLOW, str(MAX))


def test_counters_at_2_to_the_63_minus_1_are_estimated_exactly() -> None:
    result = run(usage(MAX, MAX - 1, MAX, MAX))
    # (1 * 1.25 + (MAX - 1) * 0.125 + MAX * 10) / 1e6, in integers of 1/1000 credit per million
    expected = Fraction(1 * 1250 + (MAX - 1) * 125 + MAX * 10_000, 1000 * 1_000_000)
    assert result.credits is not None and Fraction(result.credits) == expected and result.rate == "r1"


def test_cached_input_over_input_is_a_subset_violation() -> None:
    assert_unavailable(run(usage(10, 11, 5, 0)), Unavailable.SUBSET_VIOLATION, "cached input 11", "input 10")
    assert run(usage(10, 10, 5, 0)).credits == exact_decimal(Fraction(10 * 125 + 5 * 10_000, 10**9))


def test_reasoning_output_over_output_is_a_subset_violation() -> None:
    assert_unavailable(run(usage(10, 0, 5, 6)), Unavailable.SUBSET_VIOLATION, "reasoning output 6", "output 5")
    assert run(usage(10, 0, 5, 5)).credits == exact_decimal(Fraction(10 * 1250 + 5 * 10_000, 10**9))


def test_a_missing_reasoning_count_alone_keeps_the_exact_estimate() -> None:
    result = run(usage(reasoning=None))
    assert (result.credits, result.rate, result.unavailable, result.reason) == ("0.0049375", "r1", None, None)


def test_the_latest_applicable_snapshot_not_after_the_start_is_selected() -> None:
    snapshots = (
        rate("r-old", "2026-10-01", input="1"),
        rate("r-future", "2026-12-02", input="3"),
        rate("r-new", "2026-11-15", input="2"),
        rate("r-usd", "2026-11-20", unit="usd_per_million_tokens"),
        rate("r-flex", "2026-11-25", speed_tier="flex"),
        rate("r-mini", "2026-11-30", model="gpt-5-mini"),
    )
    rates = rates_file(*snapshots)
    picked = {day: select_rate(rates, "gpt-5-codex", "standard", day) for day in ("2026-11-14", STARTED, "2026-12-02")}
    assert {day: (found.id if found else None, why) for day, (found, why) in picked.items()} == {
        "2026-11-14": ("r-old", None),
        STARTED: ("r-new", None),
        "2026-12-02": ("r-future", None),
    }
    result = chosen(rates)
    assert (result.rate, result.credits) == (
        "r-new",
        exact_decimal(Fraction(1500 * 2000 + 500 * 125 + 300 * 10_000, 1000 * 10**6)),
    )


@pytest.mark.parametrize(
    ("kept", "nearest", "cause"),
    [
        (4, "r-future", Unavailable.FUTURE_RATE),
        (3, "r-usd", Unavailable.INCOMPATIBLE_UNIT),
        (2, "r-flex", Unavailable.INCOMPATIBLE_SPEED_TIER),
        (1, "r-mini", Unavailable.INCOMPATIBLE_MODEL),
    ],
    ids=["future-rate", "another-unit", "another-speed-tier", "another-model"],
)
def test_without_an_applicable_snapshot_the_nearest_names_the_cause(
    kept: int, nearest: str, cause: Unavailable
) -> None:
    # the file lists the farthest first, so that file order alone would name the wrong cause
    snapshots = (
        rate("r-mini", "2026-10-01", model="gpt-5-mini"),
        rate("r-flex", "2026-10-01", speed_tier="flex"),
        rate("r-usd", "2026-10-01", unit="usd_per_million_tokens"),
        rate("r-future", "2026-12-05"),
    )
    rates = rates_file(*snapshots[:kept])
    found, ambiguous = select_rate(rates, "gpt-5-codex", "standard", STARTED)
    assert (found.id if found else None, ambiguous) == (nearest, None)
    assert_unavailable(chosen(rates), cause, nearest)


def test_same_day_snapshots_are_ambiguous_only_when_both_apply_and_are_the_latest() -> None:
    superseded = rates_file(rate("r-a", "2026-11-01"), rate("r-b", "2026-11-01"), rate("r-c", "2026-11-02"))
    assert select_rate(superseded, "gpt-5-codex", "standard", STARTED) == (superseded.rates[2], None)
    other_unit = rates_file(rate("r-a", "2026-11-01"), rate("r-b", "2026-11-01", unit="usd_per_million_tokens"))
    assert select_rate(other_unit, "gpt-5-codex", "standard", STARTED) == (other_unit.rates[0], None)
    other_tier = rates_file(rate("r-a", "2026-11-01"), rate("r-b", "2026-11-01", speed_tier="flex"))
    assert select_rate(other_tier, "gpt-5-codex", "standard", STARTED) == (other_tier.rates[0], None)


def decimal_of(scaled: int, digits: int) -> str:
    """``scaled / 10**digits`` written out with integer arithmetic only."""
    whole, fraction = divmod(scaled, 10**digits)
    text = f"{whole}.{fraction:0{digits}d}".rstrip("0").rstrip(".")
    return text or "0"


@given(
    st.integers(0, MAX),
    st.integers(0, MAX),
    st.integers(0, MAX),
    st.integers(0, MAX),
    st.integers(0, 10**12),
    st.integers(0, 10**12),
    st.integers(0, 10**12),
)
def test_the_estimate_is_the_formula_in_integers_with_distinct_rates(
    input_tokens: int, cached: int, output: int, reasoning: int, input_rate: int, cached_rate: int, output_rate: int
) -> None:
    # rates in millionths of a credit per million tokens
    cached, reasoning = min(cached, input_tokens), min(reasoning, output)
    given_rate = msgspec.structs.replace(
        RATE,
        input=f"{input_rate // 10**6}.{input_rate % 10**6:06d}",
        cached_input=f"{cached_rate // 10**6}.{cached_rate % 10**6:06d}",
        output=f"{output_rate // 10**6}.{output_rate % 10**6:06d}",
    )
    result = run(usage(input_tokens, cached, output, reasoning), rate=given_rate)
    scaled = (input_tokens - cached) * input_rate + cached * cached_rate + output * output_rate
    assert result.credits is not None and result.unavailable is None
    assert Fraction(result.credits) == Fraction(scaled, 10**6 * 10**6)
    assert result.credits == decimal_of(scaled, 12)


def test_of_future_snapshots_the_earliest_is_named() -> None:
    rates = rates_file(rate("r-late", "2027-06-01"), rate("r-soon", "2026-12-05"))
    found, ambiguous = select_rate(rates, "gpt-5-codex", "standard", "2026-12-01")
    assert ambiguous is None and found is not None and found.id == "r-soon"
    assert_unavailable(chosen(rates), Unavailable.FUTURE_RATE, "r-soon", "2026-12-05")
