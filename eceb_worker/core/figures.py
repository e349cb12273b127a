"""Integer figures as people read them: thousands separators, basis points
as percentages, micro-USD as dollars, signed changes (ECEB-0.1 §12 units).

Every function formats an exact integer; no float is ever made, so the
text of a figure is as exact as the figure.
"""

from __future__ import annotations

from typing import Final

__all__ = ["grouped", "percent", "percent_bps", "signed", "usd"]

MICRO_USD: Final = 1_000_000
"""Micro-USD in a dollar."""


def grouped(value: int) -> str:
    """``value`` with comma thousands separators: ``1234567`` -> ``"1,234,567"``, ``-1250`` -> ``"-1,250"``."""
    return f"{value:,d}"


def signed(value: int) -> str:
    """A change with its sign always shown: ``"+1,250"``, ``"-40"``, ``"0"``."""
    return f"+{value:,d}" if value > 0 else grouped(value)


def percent(bps: int) -> str:
    """Basis points as a percentage with two decimals, exact (10,000 bps =
    100 %): ``6250`` -> ``"62.50 %"``, ``-1`` -> ``"-0.01 %"``."""
    sign = "-" if bps < 0 else ""
    whole, hundredths = divmod(abs(bps), 100)
    return f"{sign}{whole:,d}.{hundredths:02d} %"


def percent_bps(bps: int | None) -> str:
    """A share as a percentage and its basis points: ``6250`` ->
    ``"62.50 % (6,250 bps)"``; ``"n/a"`` for ``None`` (unknown)."""
    return "n/a" if bps is None else f"{percent(bps)} ({grouped(bps)} bps)"


def usd(micro_usd: int) -> str:
    """Micro-USD as dollars with six decimals, exact: ``1234`` -> ``"$0.001234"``, ``-5`` -> ``"-$0.000005"``."""
    sign = "-" if micro_usd < 0 else ""
    dollars, micro = divmod(abs(micro_usd), MICRO_USD)
    return f"{sign}${dollars:,d}.{micro:06d}"
