"""The audit rules of the chain (src/domain/shared/chain-verification.ts), raising ``VerificationError``.

Nothing is taken on trust: a root is recomputed from the transaction list, a hash from the header
fields, an inclusion proof's root from the leaf and its path, and all of them are compared with the
values the hashed header commits to, never with a root or size the server states on the side.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .amounts import amount_units
from .errors import VerificationError
from .hashing import ZERO_HASH, block_hash, hash_bytes, hash_hex, is_hash, transaction_hash, transactions_root
from .merkle import root_from_inclusion_proof

_COUNT_MAX = 2**53 - 1
_HEADER_FIELDS = ("number", "hash", "parent_hash", "timestamp", "transactions_count", "transactions_root", "native_price")


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _COUNT_MAX


def _number_of(record: Mapping[str, Any]) -> Optional[int]:
    number = record.get("number")
    return number if _is_count(number) else None


def header_of(block: Mapping[str, Any]) -> dict[str, Any]:
    """The header fields of a block record (without its transaction list)."""
    return {field: block.get(field) for field in _HEADER_FIELDS}


def _check_header_shape(header: Mapping[str, Any]) -> None:
    hashes_ok = all(is_hash(header.get(field)) for field in ("hash", "parent_hash", "transactions_root"))
    numbers_ok = all(_is_count(header.get(field)) for field in ("number", "timestamp", "transactions_count"))
    if not (hashes_ok and numbers_ok):
        raise VerificationError("malformed_record", "a header field is missing or not of its documented form", block_number=_number_of(header))


def _check_root(block: Mapping[str, Any]) -> None:
    """Shape, list, count and the root recomputed from the list."""
    _check_header_shape(block)
    number = block["number"]
    listed = block.get("transactions")
    if not isinstance(listed, list) or not all(is_hash(item) for item in listed):
        raise VerificationError("malformed_record", "transactions is not a list of 0x + 64 lowercase hex hashes", block_number=number)
    if len(listed) != block["transactions_count"]:
        raise VerificationError("transactions_count_mismatch", "transactions_count does not match the list", block_number=number)
    if transactions_root(listed) != block["transactions_root"]:
        raise VerificationError("transactions_root_mismatch", "transactions_root does not match the transactions", block_number=number)


def _check_header_hash(header: Mapping[str, Any]) -> None:
    if block_hash(header) != header["hash"]:
        raise VerificationError("block_hash_mismatch", "hash does not match the header", block_number=header["number"])


def _check_link(block: Mapping[str, Any], parent: Optional[Mapping[str, Any]]) -> None:
    """parent_hash, a consecutive number and a timestamp that does not go backwards (``parent`` None: genesis)."""
    number = block["number"]
    expected_parent = ZERO_HASH if parent is None else parent.get("hash")
    if block["parent_hash"] != expected_parent:
        raise VerificationError("parent_hash_mismatch", "parent_hash does not link to the previous block", block_number=number)
    expected_number = 0 if parent is None else parent.get("number", -2) + 1
    if number != expected_number:
        raise VerificationError("block_number_mismatch", "block numbers are not consecutive", block_number=number)
    if parent is not None and block["timestamp"] < parent.get("timestamp", 0):
        raise VerificationError("timestamp_backwards", "timestamp goes backwards", block_number=number)


def verify_block(block: Mapping[str, Any], parent: Optional[Mapping[str, Any]] = None) -> None:
    """The block by itself: its list matches ``transactions_count``, its root the list, its hash the
    header; and the link to ``parent`` when given (genesis links to nothing)."""
    _check_root(block)
    _check_header_hash(block)
    if parent is not None:
        _check_link(block, parent)
    elif block["number"] == 0:
        _check_link(block, None)


def verify_chain_link(block: Mapping[str, Any], parent: Optional[Mapping[str, Any]]) -> None:
    """One block of a chain: everything ``verify_block`` checks, plus the link to ``parent`` (None: genesis)."""
    _check_root(block)
    _check_link(block, parent)
    _check_header_hash(block)


def _check_proof_shape(proof: Mapping[str, Any], header: Mapping[str, Any]) -> None:
    hashes_ok = all(is_hash(proof.get(field)) for field in ("tx_hash", "block_hash", "transactions_root"))
    counts_ok = all(_is_count(proof.get(field)) for field in ("block_number", "leaf_index", "tree_size"))
    path = proof.get("audit_path")
    if not (hashes_ok and counts_ok and isinstance(path, list) and all(is_hash(item) for item in path)):
        raise VerificationError("malformed_record", "a proof field is missing or not of its documented form",
                                block_number=header["number"], tx_hash=proof.get("tx_hash") if is_hash(proof.get("tx_hash")) else None)


def verify_inclusion_against(proof: Mapping[str, Any], header: Mapping[str, Any]) -> None:
    """An RFC 6962 inclusion proof against a block header, whose hash is recomputed too: the root
    recomputed from ``tx_hash`` and ``audit_path`` must equal the header's ``transactions_root``."""
    _check_header_shape(header)
    _check_proof_shape(proof, header)
    number, tx_hash = header["number"], proof["tx_hash"]
    if block_hash(header) != header["hash"]:
        raise VerificationError("block_hash_mismatch", "hash does not match the header", block_number=number, tx_hash=tx_hash)
    if proof["block_number"] != number or proof["block_hash"] != header["hash"]:
        raise VerificationError("block_hash_mismatch", "the proof names another block than the header", block_number=number, tx_hash=tx_hash)
    if proof["transactions_root"] != header["transactions_root"]:
        raise VerificationError("transactions_root_mismatch", "the proof's transactions_root is not the header's", block_number=number, tx_hash=tx_hash)
    if proof["tree_size"] != header["transactions_count"]:
        raise VerificationError("transactions_count_mismatch", "the proof's tree_size is not the header's transactions_count", block_number=number, tx_hash=tx_hash)
    root = root_from_inclusion_proof(hash_bytes(tx_hash), proof["leaf_index"], proof["tree_size"], [hash_bytes(item) for item in proof["audit_path"]])
    if root is None:
        raise VerificationError("inclusion_proof_invalid", "the audit path does not fit leaf_index and tree_size", block_number=number, tx_hash=tx_hash)
    if hash_hex(root) != header["transactions_root"]:
        raise VerificationError("inclusion_proof_invalid", "the audit path does not lead to the transactions_root of the block", block_number=number, tx_hash=tx_hash)


def verify_transaction(transaction: Mapping[str, Any]) -> None:
    """Recomputes ``tx_hash`` from the record's fields (the exact ``Decimal`` amount, metadata, nonce, timestamp)."""
    tx_hash = transaction.get("tx_hash")
    named_hash = tx_hash if isinstance(tx_hash, str) else None
    block_number = transaction.get("block_number")
    named_block = block_number if _is_count(block_number) else None
    try:
        token = transaction["token"]
        preimage = {
            "from": transaction["from"], "to": transaction["to"], "amount_units": amount_units(transaction["amount"], token),
            "token": token, "type": transaction["type"], "metadata": transaction["metadata"], "nonce": transaction["nonce"],
            "timestamp": transaction["timestamp"],
        }
        if transaction["type"] == "swap":
            min_receive = transaction.get("min_receive")
            token_out = transaction.get("token_out")
            preimage["min_receive_units"] = None if min_receive is None else amount_units(min_receive, token_out)
        if not all(isinstance(preimage[field], str) for field in ("from", "to", "token", "type", "nonce")) or not isinstance(preimage["metadata"], Mapping):
            raise ValueError("a field is not of its documented type")
        recomputed = transaction_hash(preimage)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise VerificationError("malformed_record", f"the record cannot be hashed: {error}", block_number=named_block, tx_hash=named_hash) from error
    if recomputed != tx_hash:
        raise VerificationError("transaction_hash_mismatch", f"the record hashes to {recomputed}", block_number=named_block, tx_hash=named_hash)
