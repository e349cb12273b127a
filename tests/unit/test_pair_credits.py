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
    Rate,
    RatesFile,
    Unavailable,
    estimate,
    exact_decimal,
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


def run(given_usage: Usage | None, *, completed: bool = True, rate: Rate | None = RATE, **settings: str) -> object:
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
