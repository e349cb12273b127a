"""Integer money, means and ratios: the arithmetic of every reported figure
(ECEB-0.1 §10, §12; the task-context reference's credit formula).

Units: tokens, micro-USD, thousandths ("milli"), basis points ("bps",
10,000 = 100 %). No floats anywhere: every division floors explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["BPS", "SAFE_INTEGER_MAX", "floor_mean", "observation_cost_bounds", "ratio_bps", "savings_bps"]

BPS: Final = 10_000
"""Basis points in a whole (100 %)."""

SAFE_INTEGER_MAX: Final = 2**53 - 1
"""Largest integer any input or report field may hold: RFC 8785 (I-JSON)
numbers are exact only up to 2^53 - 1."""


def floor_mean(values: Sequence[int]) -> int:
    """⌊Σ values / n⌋. Raises ValueError for an empty sequence."""
    if not values:
        raise ValueError("mean of no values")
    return sum(values) // len(values)


def savings_bps(full: int, compiled: int) -> int:
    """``floor(10,000 × (full − compiled) / full)``, saturated at 0 (ECEB-0.1 §12).

    ``full`` must be positive (a zero baseline is a task failure, decided by
    the caller). Returns basis points in ``0..10,000``.
    """
    if full <= 0:
        raise ValueError(f"savings need a positive baseline, got {full}")
    return max(0, (BPS * (full - compiled)) // full)


def ratio_bps(part: int, whole: int) -> int:
    """``floor(10,000 × part / whole)``; 10,000 when ``whole`` is 0 (nothing required)."""
    return BPS if whole == 0 else (BPS * part) // whole


def observation_cost_bounds(
    input_tokens: int,
    cached_input_tokens: int,
    output_tokens: int,
    input_rate: int,
    cached_input_rate: int,
    output_rate: int,
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The recorded input and output costs a pricing snapshot allows.

    Rates are micro-USD per million tokens. The exact costs are
    ``((input − cached) × input_rate + cached × cached_rate) / 10^6`` and
    ``output × output_rate / 10^6`` micro-USD; a recorded cost may round them
    either way. Returns ``((input_low, input_high), (output_low, output_high))``.
    """
    exact_input = (input_tokens - cached_input_tokens) * input_rate + cached_input_tokens * cached_input_rate
    exact_output = output_tokens * output_rate
    return (_bounds(exact_input), _bounds(exact_output))


def _bounds(exact_times_million: int) -> tuple[int, int]:
    low = exact_times_million // 1_000_000
    high = -((-exact_times_million) // 1_000_000)
    return low, high
