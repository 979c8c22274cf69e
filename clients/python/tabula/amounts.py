"""Amounts: ``Decimal`` in and out, integer base units for hashing, and never a float.

The native token (``TAB`` by default, whatever its symbol) has 8 decimals, ``USDG`` 6 (docs/api.md,
"Amounts"). A request's amount is sent as a decimal string, so no digit is lost on the way.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Union

USDG_SYMBOL = "USDG"
NATIVE_DECIMALS = 8
USDG_DECIMALS = 6
#: Digits of base units beyond which an amount cannot be a stored one (2^63 - 1 has 19): refused before any big power of ten.
_UNITS_DIGITS_MAX = 40

#: What an amount argument may be: a Decimal, an int, or a decimal string such as ``"12.5"``.
AmountInput = Union[Decimal, int, str]


def token_decimals(symbol: str) -> int:
    """Decimals of a token symbol: 6 for USDG, 8 for the native token (whatever its symbol)."""
    return USDG_DECIMALS if symbol.upper() == USDG_SYMBOL else NATIVE_DECIMALS


def amount_argument(value: Any, field: str = "amount") -> str:
    """The wire form of an amount argument: its exact decimal text.

    A float is refused with TypeError (it may already have lost digits); the service decides whether
    the amount is valid (positive, within the token's decimals and the storage range).
    """
    if isinstance(value, bool) or isinstance(value, float):
        raise TypeError(f"{field} must be a Decimal, an int or a decimal string, never a {type(value).__name__}: "
                        f"a float may already have lost digits (write Decimal(\"12.5\") or \"12.5\")")
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{field} must be a finite decimal, got {value}")
        return format(value, "f")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"{field} must be a Decimal, an int or a decimal string, got {type(value).__name__}")


def exact_amount(value: Any) -> Decimal:
    """An amount read from a response (``int`` or ``Decimal``) as a ``Decimal``; anything else raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        raise ValueError(f"not an exact JSON number: {value!r}")
    return Decimal(value)


def amount_units(amount: Decimal | int, token: str) -> int:
    """Exact base units of an amount of ``token``; ValueError unless it is a whole, non-negative number of units."""
    decimal = exact_amount(amount)
    if not decimal.is_finite() or decimal < 0:
        raise ValueError(f"{amount} is not a non-negative finite amount")
    sign, digits, exponent = decimal.as_tuple()
    assert isinstance(exponent, int)
    shift = exponent + token_decimals(token)
    coefficient = int("".join(str(digit) for digit in digits) or "0")
    if shift >= 0:
        if coefficient != 0 and len(digits) + shift > _UNITS_DIGITS_MAX:
            raise ValueError(f"{amount} is beyond any storable amount")
        return coefficient * int(10**shift)
    if -shift > _UNITS_DIGITS_MAX + len(digits):
        raise ValueError(f"{amount} has more fractional digits than {token}'s {token_decimals(token)} decimals")
    scale = int(10 ** (-shift))
    if coefficient % scale != 0:
        raise ValueError(f"{amount} has more fractional digits than {token}'s {token_decimals(token)} decimals")
    return coefficient // scale
