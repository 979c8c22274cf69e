"""``verify_market``: the pool replayed from the chain. Against the real service (TABULA_URL, see
support.py) an honest chain verifies, and through a lying proxy (support.LyingProxy) the replay itself
catches a swap record whose ``amount_out`` was rewritten (outcomes are not hashed) and a block whose
``native_price`` was changed with its hash recomputed (so the block verifies by itself). Then the pure
replay's rules, without a service. The pool may hold what earlier runs left: only the replay decides."""

from __future__ import annotations

import unittest
from decimal import Decimal
from typing import Any

from tabula import MarketMismatchError, MarketReplay, TabulaClient, block_hash, pool_amount_out
from tabula.market_replay import decimal_units, format_units

from .support import LyingProxy, Service, service

WAIT_S = 30.0


class VerifyMarketLiveTest(unittest.TestCase):
    service: Service
    admin: TabulaClient
    swap: Any
    proxy: LyingProxy

    @classmethod
    def setUpClass(cls) -> None:
        cls.service = service()
        cls.admin = cls.service.client(admin=True)
        user = cls.service.client()
        for to, token, amount in [("@pool", "TAB", "1000"), ("@pool", "USDG", "1000"), (cls.service.user, "TAB", "10")]:
            receipt = cls.admin.submit_transaction({"from": "py-treasury", "to": to, "amount": amount, "token": token, "type": "mint"})
            assert cls.admin.wait_for_transaction(receipt["tx_hash"], timeout_s=WAIT_S, interval_s=0.05)["status"] == "confirmed"
        receipt = user.swap(cls.service.user, None, Decimal("2"), "TAB")
        cls.swap = cls.admin.wait_for_transaction(receipt["tx_hash"], timeout_s=WAIT_S, interval_s=0.05)
        assert cls.swap["status"] == "confirmed", cls.swap
        cls.proxy = LyingProxy(cls.service.url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.proxy.close()

    def lying(self, path: str, change: Any) -> TabulaClient:
        self.proxy.reset()
        self.proxy.tamper = lambda seen, body: change(body) if seen == path else body
        return self.service.client(admin=True, url=self.proxy.url, retry_base_delay_s=0.01)

    def test_an_honest_chain_verifies_and_ends_where_the_market_says(self) -> None:
        market = self.admin.get_market()
        self.assertEqual(market["pool"], "@pool")
        self.assertIsInstance(market["native_price"], Decimal)
        verified = self.admin.verify_market()
        self.assertEqual(verified["fee_bps"], market["fee_bps"])
        self.assertEqual(verified["to_block"], market["block_number"])
        self.assertEqual(verified["blocks_checked"], market["block_number"] + 1)
        self.assertGreaterEqual(verified["swaps_checked"], 1)
        self.assertGreaterEqual(verified["prices_checked"], 1)
        self.assertEqual(verified["reserves"], market["reserves"])
        self.assertEqual(verified["price"], market["native_price"])
        earlier = self.admin.verify_market(self.swap["block_number"], concurrency=1)
        self.assertEqual(earlier["to_block"], self.swap["block_number"])

    def test_a_rewritten_amount_out_is_caught(self) -> None:
        def change(body: Any) -> Any:
            body["amount_out"] = body["amount_out"] + Decimal("0.000001")
            return body
        liar = self.lying(f"/api/transactions/{self.swap['tx_hash']}", change)
        with self.assertRaises(MarketMismatchError) as raised:
            liar.verify_market()
        self.assertEqual(raised.exception.code, "amount_out_mismatch", str(raised.exception))
        self.assertEqual(raised.exception.tx_hash, self.swap["tx_hash"])
        self.assertEqual(raised.exception.block_number, self.swap["block_number"])
        self.assertEqual(raised.exception.expected, str(self.swap["amount_out"]))

    def test_a_block_price_changed_with_its_hash_recomputed_is_caught_by_the_replay_only(self) -> None:
        number = self.swap["block_number"]

        def change(body: Any) -> Any:
            body["native_price"] = format_units(decimal_units(body["native_price"], 12) + 1, 12)
            body["hash"] = block_hash(body)
            return body
        liar = self.lying(f"/api/blocks/{number}", change)
        forged = liar.get_block(number)
        liar.verify_block(forged)  # consistent by itself
        with self.assertRaises(MarketMismatchError) as raised:
            liar.verify_market()
        self.assertEqual(raised.exception.code, "price_mismatch", str(raised.exception))
        self.assertEqual(raised.exception.block_number, number)
        self.assertEqual(raised.exception.actual, forged["native_price"])


class MarketReplayTest(unittest.TestCase):
    count = 0

    def tx(self, **fields: Any) -> dict[str, Any]:
        MarketReplayTest.count += 1
        record = {"tx_hash": f"0x{self.count}", "from": "alice", "to": "alice", "type": "mint", "token": "TAB", "amount": Decimal(1),
                  "status": "confirmed", "error": None, "min_receive": None, "amount_out": None, "token_out": None}
        record.update(fields)
        return record

    def funded(self) -> MarketReplay:
        replay = MarketReplay(30)
        replay.transaction(self.tx(to="@pool", amount=Decimal(1000)), 1)
        replay.transaction(self.tx(to="@pool", token="USDG", amount=Decimal(2000)), 1)
        replay.end_block({"number": 1, "native_price": "2"})
        return replay

    def test_the_formula_and_the_price_in_base_units(self) -> None:
        self.assertEqual(pool_amount_out(1000 * 10**8, 2000 * 10**6, 10 * 10**8, 30), 19_743_160)
        replay = self.funded()
        replay.transaction(self.tx(type="swap", amount=Decimal(10), token_out="USDG", amount_out=Decimal("19.74316")), 2)
        replay.end_block({"number": 2, "native_price": "1.960650336633"})
        self.assertEqual((replay.native_units, replay.usdg_units), (1010 * 10**8, 1980_256_840))
        self.assertEqual((replay.swaps_checked, replay.prices_checked, replay.last_price_units), (1, 2, 1_960_650_336_633))
        with self.assertRaises(MarketMismatchError) as raised:
            replay.end_block({"number": 3, "native_price": "1.960650336632"})
        self.assertEqual(raised.exception.code, "price_mismatch")

    def test_a_failure_is_accepted_only_for_a_reason_the_pool_allows(self) -> None:
        empty = MarketReplay(30)
        empty.transaction(self.tx(type="swap", status="failed", error="pool_empty", token_out="USDG"), 1)
        empty.end_block({"number": 1, "native_price": "2.5"})  # the configured fallback: not checked
        replay = self.funded()
        replay.transaction(self.tx(type="swap", status="failed", error="amount_out_zero", amount=Decimal("0.00000001"), token_out="USDG"), 2)
        replay.transaction(self.tx(type="swap", status="failed", error="slippage_exceeded", amount=Decimal(10), token_out="USDG",
                                   min_receive=Decimal("19.74317")), 2)
        replay.transaction(self.tx(type="swap", status="failed", error="insufficient_funds", amount=Decimal(10), token_out="USDG"), 2)
        for bad in (
            self.tx(type="swap", status="failed", error="pool_empty", token_out="USDG"),
            self.tx(type="swap", status="failed", error="amount_out_zero", amount=Decimal(1), token_out="USDG"),
            self.tx(type="swap", status="failed", error="slippage_exceeded", amount=Decimal(10), token_out="USDG", min_receive=Decimal("19.74316")),
        ):
            with self.assertRaises(MarketMismatchError) as raised:
                replay.transaction(bad, 2)
            self.assertEqual(raised.exception.code, "failure_implausible")
        with self.assertRaises(MarketMismatchError) as raised:
            replay.transaction(self.tx(type="burn", **{"from": "@pool"}, token="USDG", amount=Decimal("2000.000001")), 2)
        self.assertEqual(raised.exception.code, "reserve_negative")
        self.assertEqual((replay.native_units, replay.usdg_units), (1000 * 10**8, 2000 * 10**6))


if __name__ == "__main__":
    unittest.main()
