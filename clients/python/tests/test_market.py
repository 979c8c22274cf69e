"""The market: a slippage tolerance turned into an exact ``min_receive`` (no float, no service), and
against the real service (TABULA_URL, see support.py) ``quote``, ``swap`` confirmed within its
tolerance, failing with ``slippage_exceeded`` once the price moved between quote and sealing, and
``price_history``. The pool may hold what earlier runs left: expectations are computed from its
reserves with the documented formula, in integer base units."""

from __future__ import annotations

import unittest
from decimal import Decimal
from typing import Any

from tabula import ConflictError, TabulaClient, amount_units, min_receive_for, slippage_fraction

from .support import Service, service

WAIT_S = 30.0
FEE_BPS = 30


class SlippageTest(unittest.TestCase):
    def test_fractions_and_percentages_are_read_exactly(self) -> None:
        for value in ("0.5%", Decimal("0.005"), "0.005", 0.005, " 0.5 % "):
            self.assertEqual(slippage_fraction(value), (5, 1000), value)
        self.assertEqual(slippage_fraction(0), (0, 1))
        self.assertEqual(slippage_fraction("99.99%"), (9999, 10000))
        self.assertEqual(slippage_fraction(1e-7), (1, 10_000_000))

    def test_a_tolerance_outside_0_to_100_percent_or_not_a_decimal_is_refused(self) -> None:
        for bad in (1, "100%", "1", -0.01, "-1%", "abc", "0.5%%", "1e-3", float("nan"), float("inf"), "", "%", Decimal("1E+1")):
            with self.assertRaises(ValueError, msg=repr(bad)):
                slippage_fraction(bad)
        with self.assertRaises(ValueError):
            slippage_fraction("0.0000000000000000001")
        with self.assertRaises(TypeError):
            slippage_fraction(True)

    def test_min_receive_is_floored_in_base_units(self) -> None:
        self.assertEqual(min_receive_for(Decimal("9.87158"), "USDG", "0.5%"), Decimal("9.822222"))  # 9822222.1 units
        self.assertEqual(min_receive_for(Decimal("92233720368.54775807"), "TAB", Decimal("0.01")), Decimal("91311383164.86228048"))
        self.assertEqual(min_receive_for(Decimal("100"), "TAB", "50%"), Decimal(50))
        with self.assertRaises(ValueError):
            min_receive_for(Decimal("0.000001"), "USDG", "50%")


def expected_out(amount_in: int, reserve_in: int, reserve_out: int) -> int:
    """docs/api.md, Market: the pool's formula in base units."""
    kept = amount_in * (10000 - FEE_BPS)
    return reserve_out * kept // (reserve_in * 10000 + kept)


class MarketLiveTest(unittest.TestCase):
    service: Service
    admin: TabulaClient
    user: TabulaClient

    @classmethod
    def setUpClass(cls) -> None:
        cls.service = service()
        cls.admin = cls.service.client(admin=True)
        cls.user = cls.service.client()
        mints = [("@pool", "TAB", "1000"), ("@pool", "USDG", "1000"), (cls.service.user, "TAB", "100"), ("py-treasury", "TAB", "1000")]
        for to, token, amount in mints:
            receipt = cls.admin.submit_transaction({"from": "py-treasury", "to": to, "amount": amount, "token": token, "type": "mint"})
            assert cls.admin.wait_for_transaction(receipt["tx_hash"], timeout_s=WAIT_S, interval_s=0.05)["status"] == "confirmed"

    def reserves(self) -> tuple[int, int]:
        pool = self.admin.get_balance("@pool")
        return amount_units(pool["native"], "TAB"), amount_units(pool["usdg"], "USDG")

    def wait(self, tx_hash: str) -> Any:
        return self.user.wait_for_transaction(tx_hash, timeout_s=WAIT_S, interval_s=0.05)

    def test_a_quote_is_the_formula_on_the_current_reserves_with_exact_decimals(self) -> None:
        native, usdg = self.reserves()
        quote = self.user.quote("tab", Decimal("10"))
        self.assertEqual(quote["token_out"], "USDG")
        self.assertEqual(amount_units(quote["amount_out"], "USDG"), expected_out(10 * 10**8, native, usdg))
        self.assertEqual(quote["fee"], Decimal("0.03"))
        for field in ("amount_out", "price", "price_after", "fee"):
            self.assertIsInstance(quote[field], Decimal, field)
        self.assertLess(quote["price_after"], quote["price"])
        self.assertEqual(self.user.quote("USDG", "1")["token_out"], "TAB")
        with self.assertRaises(TypeError):
            self.user.quote("TAB", 10.0)

    def test_a_swap_with_slippage_sends_the_floored_minimum_and_is_confirmed(self) -> None:
        receipt = self.user.swap(self.service.user, None, "10", "TAB", slippage="0.5%")
        quote = receipt["quote"]
        assert quote is not None
        quoted_units = amount_units(quote["amount_out"], "USDG")
        self.assertEqual(receipt["min_receive"], Decimal(quoted_units * 995 // 1000).scaleb(-6))
        swap = self.wait(receipt["tx_hash"])
        self.assertEqual((swap["type"], swap["status"], swap["error"], swap["to"]), ("swap", "confirmed", None, self.service.user))
        self.assertEqual(swap["min_receive"], receipt["min_receive"])
        self.assertIsInstance(swap["amount_out"], Decimal)
        self.assertGreaterEqual(swap["amount_out"], swap["min_receive"])
        self.assertEqual(swap["token_out"], "USDG")
        self.user.verify_transaction(swap)

    def test_a_swap_fails_with_slippage_exceeded_when_the_price_moved_past_the_tolerance(self) -> None:
        trader = self.service.client()
        quote_now = trader.quote

        def quote_then_move(token: str, amount: Any) -> Any:
            quote = quote_now(token, amount)  # taken on the reserves as they are, then another swap moves them
            moved = self.admin.swap("py-treasury", None, "200", "TAB")
            assert self.admin.wait_for_transaction(moved["tx_hash"], timeout_s=WAIT_S, interval_s=0.05)["status"] == "confirmed"
            return quote

        trader.quote = quote_then_move  # type: ignore[method-assign]
        receipt = trader.swap(self.service.user, "py-market-carol", Decimal("5"), "TAB", slippage=Decimal("0.0001"))
        failed = self.wait(receipt["tx_hash"])
        self.assertEqual((failed["status"], failed["error"], failed["amount_out"]), ("failed", "slippage_exceeded", None))
        self.assertEqual(failed["min_receive"], receipt["min_receive"])
        self.user.verify_transaction(failed)
        # an explicit minimum far above any quote fails the same way; none at all is accepted
        bounded = self.user.swap(self.service.user, None, "1", "TAB", min_receive="1000")
        self.assertEqual((bounded["quote"], bounded["min_receive"]), (None, Decimal(1000)))
        self.assertEqual(self.wait(bounded["tx_hash"])["error"], "slippage_exceeded")
        with self.assertRaises(ValueError):
            self.user.swap(self.service.user, None, "1", "TAB", slippage="1%", min_receive="1")
        with self.assertRaises(ValueError):
            self.user.swap(self.service.user, None, "1", "TAB", slippage="100%")

    def test_price_history_is_candles_oldest_first_closing_at_the_current_price(self) -> None:
        history = self.user.price_history("1m", limit=10)
        self.assertEqual(history["interval"], "1m")
        self.assertTrue(history["candles"])
        starts = [candle["start"] for candle in history["candles"]]
        self.assertEqual(starts, sorted(starts))
        last = history["candles"][-1]
        for field in ("open", "high", "low", "close", "volume_usd"):
            self.assertIsInstance(last[field], Decimal, field)  # type: ignore[literal-required]
        self.assertEqual(last["close"], self.user.get_stats()["native_price"])
        self.assertEqual(self.user.price_history()["interval"], "1h")
        for interval, limit in (("5m", None), ("1h", 0), ("1h", 1001)):
            with self.assertRaises(ValueError):
                self.user.price_history(interval, limit=limit)


class EmptyMarketTest(unittest.TestCase):
    def test_a_quote_on_an_empty_pool_is_a_conflict(self) -> None:
        # With an empty pool any quote is refused; with liquidity (earlier tests or runs), one base unit
        # of TAB still is: it would receive nothing.
        with self.assertRaises(ConflictError) as raised:
            service().client().quote("TAB", "0.00000001")
        self.assertEqual((raised.exception.status, raised.exception.code), (409, "market_unavailable"))
