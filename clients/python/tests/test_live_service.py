"""Every endpoint against the real service (TABULA_URL, see support.py): exact amounts in and out,
typed errors with the problem's code, idempotent submissions, batches, cursor iteration over an
account's history and over blocks, token functions and API keys, and the honest chain verifying."""

from __future__ import annotations

import unittest
import uuid
from decimal import Decimal
from typing import Any

from tabula import (
    BadRequestError, ConflictError, ForbiddenError, NotFoundError, TabulaClient, TabulaError, UnauthorizedError,
    WaitTimeoutError,
)

from .support import Service, service

WAIT_S = 30.0


class LiveServiceTest(unittest.TestCase):
    service: Service
    admin: TabulaClient
    user: TabulaClient
    run_id: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.service = service()
        cls.admin = cls.service.client(admin=True)
        cls.user = cls.service.client()
        cls.run_id = uuid.uuid4().hex[:10]

    def account(self, name: str) -> str:
        """A fresh account of this run, so runs against one service do not meet."""
        return f"py-{self.run_id}-{name}"

    def mint(self, to: str, amount: object, token: str = "TAB", **extra: object) -> str:
        receipt = self.admin.submit_transaction({"from": "py-treasury", "to": to, "amount": amount, "token": token, "type": "mint", **extra})
        return receipt["tx_hash"]

    def test_health_and_readiness_need_no_token(self) -> None:
        anonymous = TabulaClient(self.service.url)
        self.assertEqual(anonymous.health()["status"], "ok")
        self.assertEqual(anonymous.ready()["status"], "ready")

    def test_submit_wait_verify_and_prove_the_largest_amount(self) -> None:
        whale = self.account("whale")
        tx_hash = self.mint(whale, Decimal("92233720368.54775807"))
        transaction = self.admin.wait_for_transaction(tx_hash, timeout_s=WAIT_S, interval_s=0.05)
        self.assertEqual(transaction["status"], "confirmed")
        self.assertEqual(transaction["amount"], Decimal("92233720368.54775807"))
        self.assertIsInstance(transaction["amount"], Decimal)
        self.admin.verify_transaction(transaction)
        header = self.admin.verify_inclusion(self.admin.get_proof(tx_hash))
        self.assertEqual(header["number"], transaction["block_number"])
        self.assertEqual(header["hash"], transaction["block_hash"])
        balance = self.admin.get_balance(whale)
        self.assertEqual((balance["native"], balance["usdg"]), (Decimal("92233720368.54775807"), Decimal(0)))
        self.assertIsInstance(balance["total_usd"], Decimal)

    def test_amounts_as_decimal_int_and_string_metadata_with_unicode_nested_and_large_exact_numbers(self) -> None:
        carol = self.account("carol-ü")
        metadata = {"note": "Grüße 日本語 😀", "😀": ["nested", {"deep": {"deeper": [None, True]}}], "\ue000": "private use",
                    "big_exact": Decimal("1E+21"), "safe_max": 9007199254740991, "fraction": Decimal("0.1"), "tiny": Decimal("1.5e-7")}
        hashes = [self.mint(carol, Decimal("0.000001"), "USDG", metadata=metadata), self.mint(carol, 3, "usdg"), self.mint(carol, "0.00000001")]
        records = [self.admin.wait_for_transaction(tx_hash, timeout_s=WAIT_S, interval_s=0.05) for tx_hash in hashes]
        for record in records:
            self.admin.verify_transaction(record)
        self.assertEqual([record["amount"] for record in records], [Decimal("0.000001"), Decimal(3), Decimal("0.00000001")])
        self.assertEqual([record["token"] for record in records], ["USDG", "USDG", "TAB"])
        self.assertEqual(records[0]["metadata"]["note"], "Grüße 日本語 😀")
        self.assertEqual(records[0]["metadata"]["big_exact"], Decimal("1e21"))
        self.assertEqual(records[0]["metadata"]["safe_max"], 9007199254740991)
        balance = self.admin.get_balance(carol)
        self.assertEqual((balance["native"], balance["usdg"]), (Decimal("0.00000001"), Decimal("3.000001")))

    def test_a_float_amount_is_refused_before_anything_is_sent(self) -> None:
        with self.assertRaises(TypeError):
            self.admin.submit_transaction({"from": "py-treasury", "to": self.account("x"), "amount": 0.1, "token": "TAB", "type": "mint"})
        with self.assertRaises(TypeError):
            self.admin.submit_batch([{"from": "py-treasury", "to": self.account("x"), "amount": 1.0, "token": "TAB", "type": "mint"}])

    def test_an_ordinary_user_transfers_from_its_own_account(self) -> None:
        me, friend = self.service.user, self.account("friend")
        self.admin.wait_for_transaction(self.mint(me, "10"), timeout_s=WAIT_S, interval_s=0.05)
        receipt = self.user.submit_transaction({"from": me, "to": friend, "amount": Decimal("2.5"), "token": "TAB", "type": "transfer", "metadata": {"memo": "rent"}})
        transaction = self.user.wait_for_transaction(receipt["tx_hash"], timeout_s=WAIT_S, interval_s=0.05)
        self.assertEqual((transaction["status"], transaction["error"]), ("confirmed", None))
        self.assertEqual(self.user.get_balance(friend)["native"], Decimal("2.5"))
        with self.assertRaises(ForbiddenError) as raised:
            self.user.submit_transaction({"from": friend, "to": me, "amount": 1, "token": "TAB", "type": "transfer"})
        self.assertEqual((raised.exception.status, raised.exception.code), (403, "not_account_owner"))

    def test_errors_carry_status_code_detail_and_field_errors(self) -> None:
        with self.assertRaises(BadRequestError) as raised:
            self.admin.submit_transaction({"from": "py-treasury", "to": self.account("y"), "amount": Decimal("0.000000001"), "token": "TAB", "type": "mint"})
        error = raised.exception
        self.assertEqual((error.status, error.code), (400, "amount_too_precise"))
        self.assertIn("decimals", error.detail)
        self.assertEqual(error.errors[0]["field"], "amount")
        with self.assertRaises(ForbiddenError) as forbidden:
            self.user.submit_transaction({"from": "py-treasury", "to": self.service.user, "amount": 1, "token": "TAB", "type": "mint"})
        self.assertEqual(forbidden.exception.code, "admin_required")
        with self.assertRaises(NotFoundError) as missing:
            self.user.get_transaction("0x" + "ab" * 32)
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "transaction_not_found"))
        with self.assertRaises(NotFoundError) as no_block:
            self.user.get_block(10**12)
        self.assertEqual(no_block.exception.code, "block_not_found")
        with self.assertRaises(UnauthorizedError) as unauthorized:
            TabulaClient(self.service.url, jwt="not.a.token", api_key=self.service.api_key, retries=0).get_stats()
        self.assertEqual((unauthorized.exception.status, unauthorized.exception.code), (401, "invalid_token"))
        self.assertIsInstance(unauthorized.exception, TabulaError)

    def test_an_idempotency_key_replays_the_first_receipt_and_refuses_another_body(self) -> None:
        to, key = self.account("idem"), f"py-{self.run_id}-rent"
        request = {"from": "py-treasury", "to": to, "amount": "12.5", "token": "TAB", "type": "mint"}
        first = self.admin.submit_transaction(request, idempotency_key=key)
        again = self.admin.submit_transaction({**request, "amount": Decimal("12.50")}, idempotency_key=key)
        self.assertEqual((first["replayed"], again["replayed"]), (False, True))
        self.assertEqual((again["tx_hash"], again["idempotency_key"]), (first["tx_hash"], key))
        with self.assertRaises(ConflictError) as raised:
            self.admin.submit_transaction({**request, "amount": "13"}, idempotency_key=key)
        self.assertEqual((raised.exception.status, raised.exception.code), (422, "idempotency_key_reused"))
        self.assertNotEqual(self.admin.submit_transaction(request)["tx_hash"], first["tx_hash"])  # a fresh key each call

    def test_a_batch_answers_each_item_in_order(self) -> None:
        dave = self.account("dave")
        items: list[dict[str, Any]] = [
            {"from": "py-treasury", "to": dave, "amount": Decimal("1.5"), "token": "TAB", "type": "mint", "idempotency_key": f"py-{self.run_id}-b0"},
            {"from": "py-treasury", "to": dave, "amount": "0.000000001", "token": "TAB", "type": "mint"},
            {"from": "py-treasury", "to": dave, "amount": 2, "token": "USDG", "type": "mint"},
        ]
        receipt = self.admin.submit_batch(items)
        self.assertEqual((receipt["accepted"], receipt["rejected"]), (2, 1))
        results = receipt["results"]
        self.assertEqual([result["index"] for result in results], [0, 1, 2])
        self.assertEqual([result["status"] for result in results], [202, 400, 202])
        self.assertEqual(results[0]["idempotency_key"], f"py-{self.run_id}-b0")
        self.assertEqual(results[1]["error"]["code"], "amount_too_precise")
        sealed = [self.admin.wait_for_transaction(results[index]["tx_hash"], timeout_s=WAIT_S, interval_s=0.05) for index in (0, 2)]
        self.assertEqual(sealed[0]["block_number"], sealed[1]["block_number"])  # one commit, one block
        self.assertEqual(self.admin.submit_batch(items[:1])["results"][0]["replayed"], True)
        with self.assertRaises(ValueError):
            self.admin.submit_batch([])

    def test_account_history_pages_and_iterates_newest_first_each_once(self) -> None:
        erin = self.account("erin")
        receipt = self.admin.submit_batch([{"from": "py-treasury", "to": erin, "amount": index + 1, "token": "TAB", "type": "mint"} for index in range(5)])
        hashes = [result["tx_hash"] for result in receipt["results"]]
        first = self.user.list_account_transactions(erin, limit=2)
        self.assertEqual(first["user_id"], erin)
        self.assertEqual([tx["tx_hash"] for tx in first["transactions"]], hashes[::-1][:2])
        self.assertIsInstance(first["next_cursor"], str)
        second = self.user.list_account_transactions(erin, limit=2, cursor=first["next_cursor"])
        self.assertEqual([tx["tx_hash"] for tx in second["transactions"]], hashes[::-1][2:4])
        everything = list(self.user.iter_account_transactions(erin, limit=2))
        self.assertEqual([tx["tx_hash"] for tx in everything], hashes[::-1])
        self.assertEqual([tx["amount"] for tx in everything], [Decimal(5), Decimal(4), Decimal(3), Decimal(2), Decimal(1)])
        self.assertEqual(self.user.list_account_transactions(self.account("nobody")), {"user_id": self.account("nobody"), "transactions": [], "next_cursor": None})

    def test_blocks_list_iterate_from_the_head_to_genesis_and_the_chain_verifies(self) -> None:
        self.admin.wait_for_transaction(self.mint(self.account("blocks"), 1), timeout_s=WAIT_S, interval_s=0.05)
        stats = self.user.get_stats()
        self.assertIsInstance(stats["native_price"], Decimal)
        self.assertIsInstance(stats["trading_volume_24h"], Decimal)
        page = self.user.list_blocks(limit=3)
        self.assertLessEqual(len(page["blocks"]), 3)
        self.assertGreaterEqual(page["blocks"][0]["number"], stats["latest_block_number"])
        numbers = [header["number"] for header in self.user.iter_blocks(limit=7)]
        self.assertEqual(numbers, list(range(numbers[0], -1, -1)))
        self.assertGreaterEqual(numbers[0], stats["latest_block_number"])
        verified: list[int] = []
        chain = self.user.verify_chain(on_block=lambda header: verified.append(header["number"]))
        self.assertEqual(chain["from_block"], 0)
        self.assertEqual(chain["blocks_verified"], chain["to_block"] + 1)
        self.assertEqual(verified, list(range(0, chain["to_block"] + 1)))
        tail = self.user.verify_chain(max(1, chain["to_block"] - 2), chain["to_block"])
        self.assertEqual(tail["head"], chain["head"])
        block = self.user.get_block(chain["to_block"])
        self.user.verify_block(block, parent=self.user.get_block(chain["to_block"] - 1) if chain["to_block"] > 0 else None)

    def test_iterating_blocks_is_not_thrown_by_blocks_sealed_meanwhile(self) -> None:
        def seal_one() -> None:
            self.admin.wait_for_transaction(self.mint(self.account("meanwhile"), 1), timeout_s=WAIT_S, interval_s=0.05)

        seal_one()
        for limit, sealed_after in ((1, 2), (3, 1)):  # a whole page overtaken; a page that repeats headers already seen
            with self.subTest(limit=limit):
                numbers: list[int] = []
                for header in self.user.iter_blocks(limit=limit):
                    numbers.append(header["number"])
                    if len(numbers) == 1:
                        for _ in range(sealed_after):
                            seal_one()
                    if len(numbers) == 6:
                        break
                self.assertEqual(numbers, list(range(numbers[0], numbers[0] - 6, -1)))

    def test_a_token_function_is_asked_again_once_after_a_401(self) -> None:
        calls: list[bool] = []

        def token(refresh: bool = False) -> str:
            calls.append(refresh)
            return self.service.token if refresh else "expired.token.value"

        client = TabulaClient(self.service.url, jwt=token, api_key=self.service.api_key)
        self.assertGreaterEqual(client.get_stats()["latest_block_number"], 0)
        self.assertEqual(calls, [False, True])
        plain = TabulaClient(self.service.url, jwt=lambda: self.service.token, api_key=self.service.api_key)
        self.assertIn("latest_block_number", plain.get_stats())

    def test_the_api_key_is_sent_when_given(self) -> None:
        if self.service.api_key is None:
            self.skipTest("TABULA_API_KEY is not set (the service was started without API_KEYS)")
        without = TabulaClient(self.service.url, jwt=self.service.token, retries=0)
        with self.assertRaises(UnauthorizedError) as raised:
            without.get_stats()
        self.assertEqual(raised.exception.code, "invalid_api_key")
        self.assertIn("latest_block_number", self.user.get_stats())

    def test_waiting_has_a_deadline(self) -> None:
        receipt = self.admin.submit_transaction({"from": "py-treasury", "to": self.account("slow"), "amount": 1, "token": "TAB", "type": "mint"})
        try:
            transaction = self.admin.wait_for_transaction(receipt["tx_hash"], timeout_s=0.001)
        except WaitTimeoutError as error:
            self.assertEqual(error.tx_hash, receipt["tx_hash"])
        else:
            self.assertNotEqual(transaction["status"], "pending")  # sealed within a millisecond: nothing to wait for


if __name__ == "__main__":
    unittest.main()
