"""The pool replayed from the chain, by a verifier: integers (base units) only, never a float.

Feed a ``MarketReplay`` every sealed transaction of blocks 0, 1, 2... in block order
(``transaction``) and each block once its transactions are in (``end_block``); it raises a
``MarketMismatchError`` at the first record or block the pool's rules cannot have produced:

- Reserves start empty. Confirmed mints and transfers to ``@pool`` add to the reserve of their token;
  confirmed transfers and burns from ``@pool`` take from it (below zero is a mismatch).
- A confirmed swap must have been possible (both reserves non-empty), must state ``token_out`` = the
  other token and ``amount_out`` = floor(reserve_out * amount_in * (10000 - fee_bps) / (reserve_in *
  10000 + amount_in * (10000 - fee_bps))), positive and at least its ``min_receive``; it moves both
  reserves.
- A failed swap moves nothing and must have a plausible reason, in the sealer's order: ``pool_empty``
  only when a reserve is empty; ``amount_out_zero`` only when the formula gives 0;
  ``slippage_exceeded`` only when it gives less than ``min_receive``. ``insufficient_funds`` and
  ``balance_overflow`` depend on balances the pool replay does not keep: they are only checked to come
  from a non-empty pool (``balance_overflow`` also from a swap that passed the amount checks).
- After a block that carries a ``native_price``, it must be floor(usdg_units * 10^14 / native_units) in
  12-decimal units. While a reserve is empty the block carries the configured NATIVE_PRICE_USD, which
  is configuration, not chain: such blocks are skipped.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from .amounts import NATIVE_DECIMALS, USDG_DECIMALS, USDG_SYMBOL, amount_units, token_decimals
from .errors import MarketMismatchError

POOL_ACCOUNT = "@pool"
PRICE_DECIMALS = 12
_FEE_DENOMINATOR = 10_000
_PRICE_SCALE = 10 ** (PRICE_DECIMALS + NATIVE_DECIMALS - USDG_DECIMALS)
_DECIMAL = re.compile(r"^([0-9]+)(?:\.([0-9]+))?$")


def pool_amount_out(reserve_in: int, reserve_out: int, amount_in: int, fee_bps: int) -> int:
    """The constant-product formula in base units; ValueError on an empty reserve or a non-positive amount."""
    if reserve_in <= 0 or reserve_out <= 0:
        raise ValueError("a swap needs two non-empty reserves")
    if amount_in <= 0:
        raise ValueError("a swap pays in a positive amount")
    kept = amount_in * (_FEE_DENOMINATOR - fee_bps)
    return reserve_out * kept // (reserve_in * _FEE_DENOMINATOR + kept)


def pool_price_units(native_units: int, usdg_units: int) -> Optional[int]:
    """USD per native token in 12-decimal units, rounded down; None while a reserve is empty."""
    if native_units <= 0 or usdg_units <= 0:
        return None
    return usdg_units * _PRICE_SCALE // native_units


def decimal_units(text: str, decimals: int) -> int:
    """A non-negative plain decimal's text with at most ``decimals`` decimals -> base units; ValueError otherwise."""
    match = _DECIMAL.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not a plain non-negative decimal")
    fraction = (match.group(2) or "").rstrip("0")
    if len(fraction) > decimals:
        raise ValueError(f"{text} has more than {decimals} decimals")
    return int(match.group(1) + fraction.ljust(decimals, "0"))


def format_units(units: int, decimals: int) -> str:
    """Base units -> the shortest exact decimal text (``1960650336633``, 12 -> ``1.960650336633``)."""
    sign = "-" if units < 0 else ""
    digits = str(abs(units)).rjust(decimals + 1, "0")
    whole, fraction = digits[: len(digits) - decimals], digits[len(digits) - decimals:].rstrip("0")
    return f"{sign}{whole}.{fraction}" if fraction else f"{sign}{whole}"


def _is_usdg(token: Any) -> bool:
    return isinstance(token, str) and token.upper() == USDG_SYMBOL


class MarketReplay:
    """The pool's reserves (base units) replayed so far; see the module's docstring for the rules."""

    def __init__(self, fee_bps: int) -> None:
        if type(fee_bps) is not int or not 0 <= fee_bps < _FEE_DENOMINATOR:
            raise ValueError(f"fee_bps must be an integer from 0 to 9999, got {fee_bps!r}")
        self.fee_bps = fee_bps
        self.native_units = 0
        self.usdg_units = 0
        self.blocks_checked = 0
        self.swaps_checked = 0
        self.prices_checked = 0
        #: The price the newest block with one carries, in 12-decimal units.
        self.last_price_units: Optional[int] = None
        self._block_number: Optional[int] = None

    def transaction(self, tx: Mapping[str, Any], block_number: int) -> None:
        """Applies the next sealed transaction (a record as the client returns it, amounts as Decimal) of ``block_number``."""
        self._block_number = block_number
        if tx.get("status") not in ("confirmed", "failed"):
            self._fail("malformed_record", f"a transaction of a sealed block is {tx.get('status')}", tx)
        amount = self._units(tx.get("amount"), str(tx.get("token")), "amount", tx)
        if tx.get("type") == "swap":
            self._swap(tx, amount)
            return
        if tx.get("status") != "confirmed":
            return
        token = str(tx.get("token"))
        if tx.get("from") == POOL_ACCOUNT and tx.get("type") in ("burn", "transfer"):
            reserve = self._reserve(token)
            if reserve < amount:
                self._fail("reserve_negative", f"takes {tx.get('amount')} {token} from {POOL_ACCOUNT}, whose reserve is "
                                               f"{format_units(reserve, token_decimals(token))}", tx)
            self._set_reserve(token, reserve - amount)
        if tx.get("to") == POOL_ACCOUNT and tx.get("type") in ("mint", "transfer"):
            self._set_reserve(token, self._reserve(token) + amount)

    def end_block(self, block: Mapping[str, Any]) -> None:
        """Closes a block: checks its ``native_price`` against the replayed pool."""
        self._block_number = block.get("number")
        self.blocks_checked += 1
        stated_text = block.get("native_price")
        if stated_text is None:
            return
        try:
            stated = decimal_units(stated_text, PRICE_DECIMALS)
        except ValueError:
            self._fail("malformed_record", f"native_price {stated_text!r} is not a decimal with at most {PRICE_DECIMALS} decimals", None)
        self.last_price_units = stated
        replayed = pool_price_units(self.native_units, self.usdg_units)
        if replayed is None:
            return  # the configured fallback price: not the chain's to check
        self.prices_checked += 1
        if replayed != stated:
            expected = format_units(replayed, PRICE_DECIMALS)
            self._fail("price_mismatch", f"the block states native_price {stated_text}, but the replayed pool ({self._describe()}) gives {expected}",
                       None, expected=expected, actual=str(stated_text))

    def _swap(self, tx: Mapping[str, Any], amount_in: int) -> None:
        pays_usdg = _is_usdg(tx.get("token"))
        reserve_in, reserve_out = (self.usdg_units, self.native_units) if pays_usdg else (self.native_units, self.usdg_units)
        token_out = tx.get("token_out")
        if not isinstance(token_out, str) or _is_usdg(token_out) == pays_usdg:
            self._fail("malformed_record", f"a swap paying {tx.get('token')} states token_out {token_out}", tx)
        min_receive = None if tx.get("min_receive") is None else self._units(tx.get("min_receive"), token_out, "min_receive", tx)
        stated_out = None if tx.get("amount_out") is None else self._units(tx.get("amount_out"), token_out, "amount_out", tx)
        empty = reserve_in == 0 or reserve_out == 0
        out = None if empty else pool_amount_out(reserve_in, reserve_out, amount_in, self.fee_bps)
        expected = "nothing (a reserve is empty)" if out is None else format_units(out, token_decimals(token_out))
        against = "" if min_receive is None else f" against min_receive {format_units(min_receive, token_decimals(token_out))}"
        self.swaps_checked += 1
        if tx.get("status") == "failed":
            if stated_out is not None:
                self._fail("amount_out_mismatch", f"a failed swap states amount_out {tx.get('amount_out')}", tx)
            reason = tx.get("error")
            plausible = {
                "pool_empty": empty,
                "insufficient_funds": not empty,
                "amount_out_zero": out == 0,
                "slippage_exceeded": out is not None and out > 0 and min_receive is not None and out < min_receive,
                "balance_overflow": out is not None and out > 0 and (min_receive is None or out >= min_receive),
            }.get(str(reason), False)
            if not plausible:
                self._fail("failure_implausible", f"the swap failed with {reason}, but the replayed pool ({self._describe()}) gives amount_out {expected}{against}", tx)
            return
        if out is None:
            self._fail("amount_out_mismatch", "a swap was confirmed while a reserve of the replayed pool is empty", tx)
        assert out is not None
        if out == 0 or (min_receive is not None and out < min_receive):
            self._fail("amount_out_mismatch", f"a swap was confirmed, but the replayed pool gives amount_out {expected}{against}", tx)
        if stated_out != out:
            self._fail("amount_out_mismatch", f"the swap states amount_out {tx.get('amount_out')} {token_out}, but the replayed pool ({self._describe()}) gives {expected}",
                       tx, expected=expected, actual=str(tx.get("amount_out")))
        if pays_usdg:
            self.usdg_units, self.native_units = reserve_in + amount_in, reserve_out - out
        else:
            self.native_units, self.usdg_units = reserve_in + amount_in, reserve_out - out

    def _reserve(self, token: str) -> int:
        return self.usdg_units if _is_usdg(token) else self.native_units

    def _set_reserve(self, token: str, units: int) -> None:
        if _is_usdg(token):
            self.usdg_units = units
        else:
            self.native_units = units

    def _units(self, value: Any, token: str, field: str, tx: Mapping[str, Any]) -> int:
        try:
            units = amount_units(value, token)
        except ValueError as error:
            self._fail("malformed_record", f"{field} {value} is not an exact amount of {token}: {error}", tx)
        if units <= 0:
            self._fail("malformed_record", f"{field} {value} is not positive", tx)
        return units

    def _describe(self) -> str:
        return f"reserves {format_units(self.native_units, NATIVE_DECIMALS)} native, {format_units(self.usdg_units, USDG_DECIMALS)} USDG"

    def _fail(self, code: str, reason: str, tx: Optional[Mapping[str, Any]], *, expected: Optional[str] = None, actual: Optional[str] = None) -> Any:
        raise MarketMismatchError(code, reason, block_number=self._block_number, tx_hash=None if tx is None else tx.get("tx_hash"),
                                  expected=expected, actual=actual)
