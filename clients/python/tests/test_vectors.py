"""The Python implementation against the shared hashing vectors (test/vectors/hashing-vectors.json),
which the TypeScript tests check against the TypeScript implementation: one file, both clients."""

from __future__ import annotations

import copy
import json
import unittest
from pathlib import Path

from tabula import VerificationError, block_hash, canonical_json, transaction_canonical_text, transactions_root
from tabula import amount_units, verify_block, verify_chain_link, verify_inclusion_against, verify_transaction
from tabula.exact_json import loads
from tabula.hashing import block_canonical_text, hash_bytes, hash_hex
from tabula.merkle import inclusion_proof, root_from_inclusion_proof
from tabula.client import _transaction

VECTORS_PATH = Path(__file__).resolve().parents[3] / "test" / "vectors" / "hashing-vectors.json"


def load_vectors() -> dict:
    with VECTORS_PATH.open(encoding="utf-8") as file:
        return json.load(file)


class SharedVectorsTest(unittest.TestCase):
    vectors: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.vectors = load_vectors()

    def test_canonical_json(self) -> None:
        for item in self.vectors["canonical_json"]:
            with self.subTest(json=item["json"]):
                self.assertEqual(canonical_json(loads(item["json"])), item["canonical"])

    def test_transactions_recompute_from_the_served_record(self) -> None:
        for item in self.vectors["transactions"]:
            with self.subTest(item["name"]):
                record = _transaction(loads(item["record_json"]))
                units = amount_units(record["amount"], record["token"])
                self.assertEqual(str(units), item["amount_units"])
                preimage = {**record, "amount_units": units}
                self.assertEqual(transaction_canonical_text(preimage), item["canonical"])
                verify_transaction(record)

    def test_a_changed_record_does_not_verify(self) -> None:
        for item in self.vectors["transactions"]:
            with self.subTest(item["name"]):
                record = _transaction(loads(item["record_json"]))
                for field, value in (("to", record["to"] + "x"), ("nonce", "0" * 32), ("timestamp", record["timestamp"] + 1),
                                     ("metadata", {**record["metadata"], "extra": 1})):
                    with self.assertRaises(VerificationError) as raised:
                        verify_transaction({**record, field: value})
                    self.assertEqual(raised.exception.code, "transaction_hash_mismatch")

    def test_merkle_roots_and_audit_paths(self) -> None:
        for item in self.vectors["merkle"]:
            leaves = [hash_bytes(leaf) for leaf in item["leaves"]]
            with self.subTest(size=item["size"]):
                self.assertEqual(transactions_root(item["leaves"]), item["root"])
                for index, expected in enumerate(item["audit_paths"]):
                    self.assertEqual([hash_hex(node) for node in inclusion_proof(leaves, index)], expected)
                    root = root_from_inclusion_proof(leaves[index], index, item["size"], [hash_bytes(node) for node in expected])
                    self.assertEqual(hash_hex(root) if root is not None else None, item["root"])
                    if expected:
                        self.assertIsNone(root_from_inclusion_proof(leaves[index], index, item["size"], [hash_bytes(node) for node in expected[:-1]]))

    def test_chain_blocks_and_links(self) -> None:
        parent = None
        for item in self.vectors["chain"]:
            block = item["block"]
            with self.subTest(block=block["number"]):
                self.assertEqual(block_canonical_text(block), item["canonical"])
                self.assertEqual(block_hash(block), block["hash"])
                verify_block(block, parent)
                verify_chain_link(block, parent)
            parent = block

    def test_inclusion_proofs_against_chain_headers(self) -> None:
        block = self.vectors["chain"][-1]["block"]
        leaves = [hash_bytes(tx) for tx in block["transactions"]]
        for index, tx_hash in enumerate(block["transactions"]):
            proof = {"tx_hash": tx_hash, "block_number": block["number"], "block_hash": block["hash"], "transactions_root": block["transactions_root"],
                     "leaf_index": index, "tree_size": block["transactions_count"], "audit_path": [hash_hex(node) for node in inclusion_proof(leaves, index)]}
            verify_inclusion_against(proof, block)
            tampered = copy.deepcopy(proof)
            tampered["audit_path"][0] = "0x" + "1" * 64
            with self.assertRaises(VerificationError) as raised:
                verify_inclusion_against(tampered, block)
            self.assertEqual(raised.exception.code, "inclusion_proof_invalid")

    def test_tampered_blocks_name_the_failed_check(self) -> None:
        chain = [item["block"] for item in self.vectors["chain"]]
        cases = [
            ("block_hash_mismatch", lambda block: {**block, "hash": "0x" + "2" * 64}),
            ("transactions_root_mismatch", lambda block: {**block, "transactions": list(reversed(block["transactions"]))}),
            ("transactions_count_mismatch", lambda block: {**block, "transactions": block["transactions"][:-1]}),
            ("malformed_record", lambda block: {**block, "number": str(block["number"])}),
        ]
        for code, change in cases:
            with self.subTest(code):
                with self.assertRaises(VerificationError) as raised:
                    verify_chain_link(change(chain[3]), chain[2])
                self.assertEqual(raised.exception.code, code)
        with self.assertRaises(VerificationError) as raised:
            verify_chain_link(chain[3], chain[1])
        self.assertEqual(raised.exception.code, "parent_hash_mismatch")


if __name__ == "__main__":
    unittest.main()
