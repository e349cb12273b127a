"""Invoice rounding for the billing service (synthetic example)."""

from decimal import ROUND_HALF_EVEN, Decimal

CURRENCY_EXPONENT = {"USD": 2, "EUR": 2, "JPY": 0}


def round_amount(amount: Decimal, currency: str) -> Decimal:
    """Round with banker's rounding to the currency's minor unit."""
    exponent = CURRENCY_EXPONENT[currency]
    return amount.quantize(Decimal(1).scaleb(-exponent), rounding=ROUND_HALF_EVEN)
