"""The client against a lying server: a loopback proxy (support.LyingProxy) in front of the real
service that alters its answers. Every alteration is caught with a VerificationError, including a
forged block that is consistent by itself, which only the chain's links catch; through the same
proxy untouched, everything verifies. And the transport's promises: retries on a dropped
connection, 429 and 503 honour Retry-After, are bounded, and reuse the submission's Idempotency-Key,
so a retried submission is stored once."""

from __future__ import annotations

import time
import unittest
import uuid
from decimal import Decimal
from typing import Any, Optional

from tabula import (
    BadRequestError, RateLimitedError, RequestTimeoutError, ServiceUnavailableError, TabulaClient, VerificationError, WaitTimeoutError,
    block_hash, transactions_root,
)

from .support import LyingProxy, Reply, Seen, Service, problem, service, stall

WAIT_S = 30.0


def flip(hash_hex: str) -> str:
    """The same hash with its first hex digit changed."""
    return "0x" + ("1" if hash_hex[2] == "0" else "0") + hash_hex[3:]


class LyingServerTest(unittest.TestCase):
    service: Service
    proxy: LyingProxy
    honest: TabulaClient
    lying: TabulaClient
    #: A block with several transactions (a batch), and a block sealed after it.
    big: dict[str, Any]
    tx_hashes: list[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.service = service()
        cls.honest = cls.service.client(admin=True)
        run_id = uuid.uuid4().hex[:10]
        receipt = cls.honest.submit_batch([
            {"from": "py-treasury", "to": f"py-{run_id}-liar-{index}", "amount": Decimal("1.25"), "token": "TAB", "type": "mint",
             "metadata": {"n": index, "memo": "für den Test"}}
            for index in range(5)
        ])
        cls.tx_hashes = [result["tx_hash"] for result in receipt["results"]]
        sealed = [cls.honest.wait_for_transaction(tx_hash, timeout_s=WAIT_S, interval_s=0.05) for tx_hash in cls.tx_hashes]
        block_number = sealed[0]["block_number"]
        assert block_number is not None
        cls.big = dict(cls.honest.get_block(block_number))
        later = cls.honest.submit_transaction({"from": "py-treasury", "to": f"py-{run_id}-after", "amount": 1, "token": "TAB", "type": "mint"})
        cls.honest.wait_for_transaction(later["tx_hash"], timeout_s=WAIT_S, interval_s=0.05)
        cls.proxy = LyingProxy(cls.service.url)
        cls.lying = cls.service.client(admin=True, url=cls.proxy.url, retry_base_delay_s=0.01)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.proxy.close()

    def setUp(self) -> None:
        self.proxy.reset()

    def on(self, path: str, change: Any) -> None:
        """Alters the JSON answer of ``path`` only."""
        self.proxy.tamper = lambda seen, body: change(body) if seen == path else body

    def assert_caught(self, code: str, action: Any) -> VerificationError:
        with self.assertRaises(VerificationError) as raised:
            action()
        self.assertEqual(raised.exception.code, code, str(raised.exception))
        return raised.exception

    # --- verification -------------------------------------------------------------------------

    def test_control_through_the_proxy_untouched_everything_verifies(self) -> None:
        chain = self.lying.verify_chain()
        self.assertEqual(chain["blocks_verified"], chain["to_block"] + 1)
        self.assertGreater(chain["to_block"], self.big["number"])
        for tx_hash in self.tx_hashes:
            self.lying.verify_transaction(self.lying.get_transaction(tx_hash))
            self.lying.verify_inclusion(self.lying.get_proof(tx_hash))
        self.lying.verify_block(self.lying.get_block(self.big["number"]))
        start = self.big["transactions"].index(self.tx_hashes[0])
        self.assertEqual(self.big["transactions"][start:start + len(self.tx_hashes)], self.tx_hashes)  # one commit, in order

    def test_a_changed_amount_in_a_transaction_is_caught(self) -> None:
        target = self.tx_hashes[1]
        self.on(f"/api/transactions/{target}", lambda record: {**record, "amount": record["amount"] + Decimal("0.00000001")})
        transaction = self.lying.get_transaction(target)
        self.assertEqual(transaction["amount"], Decimal("1.25000001"))
        error = self.assert_caught("transaction_hash_mismatch", lambda: self.lying.verify_transaction(transaction))
        self.assertEqual(error.tx_hash, target)

    def test_a_changed_amount_in_an_account_history_is_caught(self) -> None:
        account = self.honest.get_transaction(self.tx_hashes[2])["to"]

        def inflate(page: dict[str, Any]) -> dict[str, Any]:
            return {**page, "transactions": [{**tx, "amount": Decimal(1000)} for tx in page["transactions"]]}

        self.on(f"/api/accounts/{account}/transactions", inflate)
        (transaction,) = list(self.lying.iter_account_transactions(account))
        self.assert_caught("transaction_hash_mismatch", lambda: self.lying.verify_transaction(transaction))

    def test_changed_metadata_is_caught(self) -> None:
        target = self.tx_hashes[0]
        self.on(f"/api/transactions/{target}", lambda record: {**record, "metadata": {**record["metadata"], "memo": "fur den Test"}})
        transaction = self.lying.get_transaction(target)
        self.assert_caught("transaction_hash_mismatch", lambda: self.lying.verify_transaction(transaction))

    def test_a_changed_audit_path_is_caught(self) -> None:
        target = self.tx_hashes[2]
        self.on(f"/api/transactions/{target}/proof", lambda proof: {**proof, "audit_path": [flip(proof["audit_path"][0]), *proof["audit_path"][1:]]})
        proof = self.lying.get_proof(target)
        self.assert_caught("inclusion_proof_invalid", lambda: self.lying.verify_inclusion(proof))
        honest_proof = self.honest.get_proof(target)
        shortened = {**honest_proof, "audit_path": honest_proof["audit_path"][:-1]}
        self.assert_caught("inclusion_proof_invalid", lambda: self.honest.verify_inclusion(shortened))

    def test_a_proof_of_another_position_is_caught(self) -> None:
        target = self.tx_hashes[3]
        self.on(f"/api/transactions/{target}/proof", lambda proof: {**proof, "leaf_index": (proof["leaf_index"] + 1) % proof["tree_size"]})
        proof = self.lying.get_proof(target)
        self.assert_caught("inclusion_proof_invalid", lambda: self.lying.verify_inclusion(proof))

    def test_a_changed_block_hash_is_caught(self) -> None:
        number = self.big["number"]
        self.on(f"/api/blocks/{number}", lambda block: {**block, "hash": flip(block["hash"])})
        block = self.lying.get_block(number)
        self.assert_caught("block_hash_mismatch", lambda: self.lying.verify_block(block))
        error = self.assert_caught("block_hash_mismatch", lambda: self.lying.verify_chain())
        self.assertEqual(error.block_number, number)
        proof = self.lying.get_proof(self.tx_hashes[0])
        self.assert_caught("block_hash_mismatch", lambda: self.lying.verify_inclusion(proof))

    def test_a_changed_transaction_list_is_caught(self) -> None:
        number = self.big["number"]
        self.on(f"/api/blocks/{number}", lambda block: {**block, "transactions": list(reversed(block["transactions"]))})
        self.assert_caught("transactions_root_mismatch", lambda: self.lying.verify_block(self.lying.get_block(number)))

    def test_a_forged_block_consistent_by_itself_is_caught_by_the_chain(self) -> None:
        number = self.big["number"]

        def forge(block: dict[str, Any]) -> dict[str, Any]:
            listed = block["transactions"][:-1]
            forged = {**block, "transactions": listed, "transactions_count": len(listed), "transactions_root": transactions_root(listed)}
            return {**forged, "hash": block_hash(forged)}

        self.on(f"/api/blocks/{number}", forge)
        self.lying.verify_block(self.lying.get_block(number))  # by itself it adds up
        error = self.assert_caught("parent_hash_mismatch", lambda: self.lying.verify_chain())
        self.assertEqual(error.block_number, number + 1)
        anchored = self.honest.verify_chain(number, number)["head"]
        proof = self.lying.get_proof(self.tx_hashes[0])
        self.honest.verify_inclusion(proof, header=anchored)

    def test_another_record_than_the_one_asked_for_is_caught(self) -> None:
        wanted, other = self.tx_hashes[0], self.honest.get_transaction(self.tx_hashes[1])
        self.on(f"/api/transactions/{wanted}", lambda record: other)
        self.assert_caught("record_mismatch", lambda: self.lying.get_transaction(wanted))

    def test_a_transaction_that_never_seals_runs_out_the_wait(self) -> None:
        target = self.tx_hashes[4]
        self.on(f"/api/transactions/{target}", lambda record: {**record, "status": "pending", "block_number": None, "block_hash": None, "position": None})
        with self.assertRaises(WaitTimeoutError) as raised:
            self.lying.wait_for_transaction(target, timeout_s=0.3, interval_s=0.05)
        self.assertEqual(raised.exception.tx_hash, target)

    # --- retries ------------------------------------------------------------------------------

    def submission(self, name: str) -> dict[str, Any]:
        return {"from": "py-treasury", "to": f"py-{uuid.uuid4().hex[:10]}-{name}", "amount": Decimal("0.5"), "token": "TAB", "type": "mint"}

    def first_only(self, reply: Reply, method: str = "POST") -> Any:
        state: dict[str, bool] = {"done": False}

        def intercept(seen: Seen) -> Optional[Reply]:
            if seen.method == method and not state["done"]:
                state["done"] = True
                return reply
            return None

        return intercept

    def test_a_lost_answer_is_retried_with_the_same_key_and_stored_once(self) -> None:
        self.proxy.intercept = self.first_only(Reply(503, problem(503, "service_overloaded"), {"retry-after": "1"}, after_forwarding=True))
        started = time.monotonic()
        receipt = self.lying.submit_transaction(self.submission("lost"))
        self.assertGreaterEqual(time.monotonic() - started, 1.0)  # waited for Retry-After
        submits = self.proxy.requests("POST", "/api/transactions/submit")
        self.assertEqual(len(submits), 2)
        self.assertEqual(submits[0].headers["idempotency-key"], submits[1].headers["idempotency-key"])
        self.assertEqual(submits[0].headers["idempotency-key"], receipt["idempotency_key"])
        self.assertTrue(receipt["replayed"])  # the service had stored the first attempt
        uuid.UUID(receipt["idempotency_key"])
        self.assertEqual(self.honest.get_transaction(receipt["tx_hash"])["amount"], Decimal("0.5"))

    def test_a_dropped_connection_is_retried(self) -> None:
        self.proxy.intercept = self.first_only(Reply(None))
        receipt = self.lying.submit_transaction(self.submission("dropped"))
        self.assertFalse(receipt["replayed"])
        self.assertEqual(len(self.proxy.requests("POST", "/api/transactions/submit")), 2)

    def test_a_batch_is_retried_with_the_same_item_keys(self) -> None:
        self.proxy.intercept = self.first_only(Reply(503, problem(503, "storage_unavailable"), {"retry-after": "0"}, after_forwarding=True))
        receipt = self.lying.submit_batch([self.submission("batch-a"), self.submission("batch-b")])
        self.assertEqual(receipt["accepted"], 2)
        self.assertTrue(all(result["replayed"] for result in receipt["results"]))
        bodies = [seen.body for seen in self.proxy.requests("POST", "/api/transactions/batch")]
        self.assertEqual(len(bodies), 2)
        self.assertEqual(bodies[0], bodies[1])

    def test_429_is_retried_after_retry_after(self) -> None:
        self.proxy.intercept = self.first_only(Reply(429, problem(429, "rate_limited"), {"retry-after": "1"}), method="GET")
        started = time.monotonic()
        self.assertIn("latest_block_number", self.lying.get_stats())
        self.assertGreaterEqual(time.monotonic() - started, 1.0)
        self.assertEqual(len(self.proxy.requests("GET", "/api/stats")), 2)

    def test_a_retry_after_beyond_the_longest_wait_is_raised_at_once(self) -> None:
        self.proxy.intercept = lambda seen: Reply(429, problem(429, "rate_limited"), {"retry-after": "3600"})
        started = time.monotonic()
        with self.assertRaises(RateLimitedError) as raised:
            self.lying.get_stats()
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual((raised.exception.status, raised.exception.code, raised.exception.retry_after_s), (429, "rate_limited", 3600.0))

    def test_retries_are_bounded(self) -> None:
        self.proxy.intercept = lambda seen: Reply(503, problem(503, "service_overloaded"), {"retry-after": "0"})
        client = self.service.client(admin=True, url=self.proxy.url, retries=2)
        with self.assertRaises(ServiceUnavailableError) as raised:
            client.submit_transaction(self.submission("bounded"))
        self.assertEqual((raised.exception.status, raised.exception.code), (503, "service_overloaded"))
        submits = self.proxy.requests("POST", "/api/transactions/submit")
        self.assertEqual(len(submits), 3)
        self.assertEqual(len({seen.headers["idempotency-key"] for seen in submits}), 1)

    def test_a_slow_answer_times_out(self) -> None:
        self.proxy.intercept = stall(1.5)
        client = self.service.client(admin=True, url=self.proxy.url, timeout_s=0.3, retries=0)
        with self.assertRaises(RequestTimeoutError):
            client.get_stats()

    def test_errors_that_a_retry_cannot_mend_are_not_retried(self) -> None:
        self.proxy.intercept = lambda seen: Reply(400, problem(400, "validation_failed"))
        with self.assertRaises(BadRequestError):
            self.lying.submit_transaction(self.submission("bad"))
        self.assertEqual(len(self.proxy.requests("POST", "/api/transactions/submit")), 1)


if __name__ == "__main__":
    unittest.main()
