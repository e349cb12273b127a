"""Credit estimates of an attempt from a dated rate snapshot
(task-context-benchmark-reference.md, "Credit and quality calculation").

A :class:`RatesFile` (``rates.json``, ``schema``: :data:`RATES_SCHEMA`)
holds rate snapshots (:class:`Rate`): an id, the date they hold from
(``as_of``), the model and speed tier they apply to, the unit
``credits_per_million_tokens`` and the input, cached-input and output rates
as exact decimal strings.

:func:`estimate` computes::

    ((input - cached) * input_rate + cached * cached_rate + output * output_rate) / 1,000,000

exactly: rates are finite decimals and token counts integers, so the
estimate is a finite decimal, kept as an exact decimal string (no float,
no rounding; what is printed is that string). Input includes the context;
cached input and reasoning output are subsets of input and output. A
missing reasoning count alone keeps the estimate (one reported as no count
is missing). Missing counters (absent or not a count: the reason names
each), a turn
that did not complete, rates for another model, speed tier or unit, rates
dated after the attempt started, a subset violation and a counter past
2^63 - 1 make it unavailable, with its reason: never zero. Every figure is
a credit estimate, not account billing (:data:`NOT_BILLING`). Pure.
"""

from __future__ import annotations

import enum
from decimal import Decimal
from fractions import Fraction
from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.families.paired.transport import COUNTERS, OVERFLOW, Usage

__all__ = [
    "NOT_BILLING",
    "RATES_SCHEMA",
    "CreditEstimate",
    "Rate",
    "RatesFile",
    "Unavailable",
    "UNIT",
    "estimate",
    "exact_decimal",
    "select_rate",
]

RATES_SCHEMA: Final = "symgliph.eceb/pair-rates-v0.1"
NOT_BILLING: Final = "credit estimate from a rate snapshot, not account billing"
MILLION: Final = 1_000_000
UNIT: Final = "credits_per_million_tokens"
"""The one unit an estimate computes with."""

DecimalRate = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^(0|[1-9][0-9]{0,17})(\.[0-9]{1,18})?\Z",
        description="Credits per million tokens, an exact non-negative decimal such as '1.25'.",
    ),
]
Day = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z", description="A date, YYYY-MM-DD (UTC).")]


class Rate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One rate snapshot: ``id``, ``as_of`` (the day it holds from),
    ``model``, ``speed_tier``, ``unit`` (an estimate needs
    :data:`UNIT`, ``credits_per_million_tokens``; a snapshot in another unit
    is kept and never applies), and the ``input``, ``cached_input``
    and ``output`` rates (exact decimal strings, credits per million tokens)."""

    id: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    as_of: Day
    model: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    speed_tier: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    unit: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    input: DecimalRate
    cached_input: DecimalRate
    output: DecimalRate


class RatesFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rates.json`` (``schema``: :data:`RATES_SCHEMA`): ``synthetic`` (the
    rates verify software handling only), ``label`` and the snapshots."""

    schema: Literal["symgliph.eceb/pair-rates-v0.1"]
    synthetic: bool
    label: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    rates: Annotated[tuple[Rate, ...], msgspec.Meta(min_length=1)]


class Unavailable(enum.Enum):
    """Why an estimate is unavailable (never zero)."""

    INCOMPLETE_TURN = "incomplete_turn"
    MISSING_COUNTERS = "missing_counters"
    AMBIGUOUS_RATE = "ambiguous_rate"
    NO_RATE = "no_rate"
    INCOMPATIBLE_MODEL = "incompatible_model"
    INCOMPATIBLE_SPEED_TIER = "incompatible_speed_tier"
    INCOMPATIBLE_UNIT = "incompatible_unit"
    FUTURE_RATE = "future_rate"
    OVERFLOW = "overflow"
    SUBSET_VIOLATION = "subset_violation"


class CreditEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """An attempt's credit estimate: ``credits`` (an exact decimal string)
    and ``rate`` (the snapshot's id) when available; otherwise ``None`` and
    ``unavailable`` with ``reason`` in words. ``label``: :data:`NOT_BILLING`."""

    credits: str | None
    rate: str | None
    unavailable: Unavailable | None
    reason: str | None
    label: str = NOT_BILLING


def exact_decimal(value: Fraction) -> str:
    """``value`` (a fraction whose denominator has no prime factor but 2
    and 5) as an exact decimal string, without trailing zeros: ``"0.0131"``."""
    denominator = value.denominator
    digits = 0
    while denominator % 10 == 0:
        denominator //= 10
        digits += 1
    while denominator % 2 == 0 or denominator % 5 == 0:
        denominator //= 2 if denominator % 2 == 0 else 5
        digits += 1
    if denominator != 1:
        raise ValueError(f"{value} is no finite decimal")
    scaled = value * 10**digits
    assert scaled.denominator == 1
    text = format(Decimal(scaled.numerator).scaleb(-digits), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _why_unavailable(
    usage: Usage | None,
    completed: bool,
    rate: Rate | None,
    model: str,
    speed_tier: str,
    started_on: str,
    ambiguous: str | None,
) -> tuple[Unavailable, str] | None:
    """The first cause (in the order of :class:`Unavailable`) that makes the estimate unavailable, with its reason."""
    if not completed:
        return Unavailable.INCOMPLETE_TURN, "the turn did not complete: its usage is never a total"
    if usage is None:
        return Unavailable.MISSING_COUNTERS, "the completed turn reported no usage counters"
    if usage.missing:  # a missing reasoning count alone keeps the estimate
        reasons = (why[1] for name in usage.missing if (why := usage.unknown(name)) is not None)
        return Unavailable.MISSING_COUNTERS, "; ".join(reasons)
    if ambiguous is not None:
        return Unavailable.AMBIGUOUS_RATE, ambiguous
    if rate is None:
        return Unavailable.NO_RATE, "no rate snapshot was frozen"
    overflows = [why[1] for name in COUNTERS if (why := usage.unknown(name)) is not None and why[0] == OVERFLOW]
    reasoning = usage.reasoning_output_tokens
    input_tokens, cached, output = (usage.count(name) or 0 for name in COUNTERS[:3])  # none is missing here
    checks = (
        (rate.model != model, Unavailable.INCOMPATIBLE_MODEL, f"the rate {rate.id} is for {rate.model}, not {model}"),
        (
            rate.speed_tier != speed_tier,
            Unavailable.INCOMPATIBLE_SPEED_TIER,
            f"the rate {rate.id} is for the speed tier {rate.speed_tier}, not {speed_tier}",
        ),
        (
            rate.unit != UNIT,
            Unavailable.INCOMPATIBLE_UNIT,
            f"the rate {rate.id} is in {rate.unit}, not {UNIT}",
        ),
        (
            rate.as_of > started_on,
            Unavailable.FUTURE_RATE,
            f"the rate {rate.id} holds from {rate.as_of}, after the attempt started ({started_on})",
        ),
        (
            bool(overflows),
            Unavailable.OVERFLOW,
            "; ".join(overflows),
        ),
        (
            cached > input_tokens,
            Unavailable.SUBSET_VIOLATION,
            f"cached input {cached} exceeds input {input_tokens}",
        ),
        (
            reasoning is not None and reasoning > output,
            Unavailable.SUBSET_VIOLATION,
            f"reasoning output {reasoning} exceeds output {output}",
        ),
    )
    return next(((cause, reason) for failed, cause, reason in checks if failed), None)


def estimate(
    usage: Usage | None,
    *,
    completed: bool,
    rate: Rate | None,
    model: str,
    speed_tier: str,
    started_on: str,
    ambiguous: str | None = None,
) -> CreditEstimate:
    """The credit estimate of one attempt (module).

    ``usage``: the completed turn's usage (``None`` when the stream gave
    none; a counter it lacks is a missing counter); ``completed``: the turn completed; ``rate``: the snapshot that
    applies, or ``None``; ``model``, ``speed_tier``: the attempt's frozen
    settings; ``started_on``: the day the attempt started (``YYYY-MM-DD``,
    UTC); ``ambiguous``: why no single snapshot applies (:func:`select_rate`).
    The causes are checked in the order of :class:`Unavailable`.
    """
    why = _why_unavailable(usage, completed, rate, model, speed_tier, started_on, ambiguous)
    if why is not None:
        return CreditEstimate(credits=None, rate=None, unavailable=why[0], reason=why[1])
    assert usage is not None and rate is not None
    input_tokens, cached, output = (usage.count(name) or 0 for name in COUNTERS[:3])  # none is missing here
    total = (
        (input_tokens - cached) * Fraction(rate.input)
        + cached * Fraction(rate.cached_input)
        + output * Fraction(rate.output)
    ) / MILLION
    return CreditEstimate(credits=exact_decimal(total), rate=rate.id, unavailable=None, reason=None)


def select_rate(
    rates: RatesFile | None, model: str, speed_tier: str, started_on: str
) -> tuple[Rate | None, str | None]:
    """The rate snapshot that applies to an attempt of ``model`` at
    ``speed_tier`` started on ``started_on`` (``YYYY-MM-DD``, UTC), or the
    nearest one that does not (so that :func:`estimate` names why), and
    ``None`` or why no single snapshot applies.

    Applies: the same model, speed tier and :data:`UNIT`, ``as_of`` not
    after ``started_on``; of those, the latest ``as_of``. Two snapshots
    applying with the same ``as_of`` are ambiguous: ``(None, reason)``,
    never a guess. With none applying, the nearest is, in this order: one
    of the model and tier in the unit dated later (a future rate: the earliest), one of
    the model and tier in another unit, one of the model at another tier,
    the first of the file (another model). ``(None, None)`` without rates.
    """
    if rates is None:
        return None, None
    same = [r for r in rates.rates if r.model == model and r.speed_tier == speed_tier]
    applying = [r for r in same if r.unit == UNIT and r.as_of <= started_on]
    if applying:
        latest = max(r.as_of for r in applying)
        chosen = sorted((r for r in applying if r.as_of == latest), key=lambda r: r.id)
        if len(chosen) > 1:
            ids = ", ".join(r.id for r in chosen)
            return None, f"rate snapshots {ids} all apply from {latest}: which one holds is not stated"
        return chosen[0], None
    nearest = (
        sorted((r for r in same if r.unit == UNIT), key=lambda r: (r.as_of, r.id))
        or same
        or [r for r in rates.rates if r.model == model]
        or list(rates.rates)
    )
    return nearest[0], None
