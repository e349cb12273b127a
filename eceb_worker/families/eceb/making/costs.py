"""Costs of paid calls by the pricing snapshot (ECEB-0.1 §8), in micro-USD.

A recorded cost is the exact cost rounded down: the rule ``eceb evaluate``
checks (:func:`~eceb_worker.core.arithmetic.observation_cost_bounds`) allows
either rounding, and rounding down never claims spend that was not made.
The spending stop uses an upper bound instead (:func:`upper_bound`): the
estimated prompt tokens and the whole output allowance, rounded up.
"""

from __future__ import annotations

from eceb_worker.core.arithmetic import observation_cost_bounds
from eceb_worker.families.eceb.making.exchange import Usage
from eceb_worker.families.eceb.run import PricingSnapshot

__all__ = ["call_cost", "upper_bound"]


def call_cost(usage: Usage, pricing: PricingSnapshot) -> tuple[int, int]:
    """``(input, output)`` micro-USD of a call with ``usage`` (cached input
    at the cached rate; a provider reporting no cached tokens: none)."""
    cached = min(usage.cached_input_tokens or 0, usage.input_tokens)
    (input_low, _), (output_low, _) = observation_cost_bounds(
        usage.input_tokens,
        cached,
        usage.output_tokens,
        pricing.input_micro_usd_per_mtok,
        pricing.cached_input_micro_usd_per_mtok,
        pricing.output_micro_usd_per_mtok,
    )
    return input_low, output_low


def upper_bound(input_tokens: int, max_output_tokens: int, pricing: PricingSnapshot) -> int:
    """The most a call of about ``input_tokens`` prompt tokens and at most
    ``max_output_tokens`` output may cost, micro-USD, rounded up: every
    input token at the higher of the input and cached-input rates."""
    (_, input_high), (_, output_high) = observation_cost_bounds(
        input_tokens,
        0,
        max_output_tokens,
        max(pricing.input_micro_usd_per_mtok, pricing.cached_input_micro_usd_per_mtok),
        pricing.cached_input_micro_usd_per_mtok,
        pricing.output_micro_usd_per_mtok,
    )
    return input_high + output_high
