"""Paired differences (A − B): exact medians and ranges, counts by sign and
known/unknown coverage for each metric, whatever the order of the pairs."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.families.paired.differences import Difference, difference, summarize

pytestmark = pytest.mark.unit


def test_an_even_count_has_the_exact_midpoint_as_its_median() -> None:
    pairs = [difference(1, 100, 90), difference(2, 80, 85), difference(3, 70, 70), difference(4, 10, 3)]
    summary = summarize("input_tokens", pairs)
    assert (summary.median, summary.minimum, summary.maximum) == ("3.5", "-5", "10")  # -5, 0, 7, 10
    assert (summary.positive, summary.negative, summary.zero, summary.known, summary.unknown) == (2, 1, 1, 4, 0)


def test_credits_stay_exact_decimals_and_an_odd_count_has_its_middle_value() -> None:
    pairs = [difference(1, Fraction("0.0049375"), Fraction("0.004")), difference(2, Fraction("0.1"), Fraction("0.3"))]
    pairs.append(difference(3, Fraction("0.01"), Fraction("0.01")))
    summary = summarize("credits", pairs)
    assert (summary.median, summary.minimum, summary.maximum) == ("0", "-0.2", "0.0009375")


def test_unknown_differences_are_counted_with_their_reason_never_as_zero() -> None:
    pairs = [difference(2, 10, None), difference(1, 5, 3), difference(3, None, None, "the turn did not complete")]
    summary = summarize("output_tokens", pairs)
    assert (summary.known, summary.unknown, summary.zero, summary.median) == (1, 2, 0, "2")
    assert summary.unknown_reasons == ("pair 2: arm B has no value", "pair 3: the turn did not complete")
    empty = summarize("output_tokens", [difference(1, None, 4)])
    assert (empty.median, empty.minimum, empty.maximum, empty.known) == (None, None, None, 0)


@given(st.lists(st.tuples(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12)), max_size=9), st.randoms())
def test_the_summary_does_not_depend_on_the_order_of_the_pairs(values: list[tuple[int, int]], rng: object) -> None:
    pairs = [difference(n, a, b) for n, (a, b) in enumerate(values, 1)]
    shuffled: list[Difference] = list(pairs)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert summarize("m", shuffled) == summarize("m", pairs)
    if values:
        diffs = sorted(a - b for a, b in values)
        assert Fraction(summarize("m", pairs).minimum or "0") == diffs[0]
