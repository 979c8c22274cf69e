"""The canonical encodings behind ``tx_hash``, block ``hash`` and ``transactions_root``
(docs/api.md, "Hashes"; src/domain/shared/encoding.ts and chain-hashes.ts)::

    tx_hash           = SHA-256(UTF-8(JCS({amount: "<base units>", from, metadata, nonce, timestamp, to, token, type, version: 1})))
    block hash        = SHA-256(UTF-8(JCS({number, parent_hash, timestamp, transactions_root, version: 1})))
                        (since the market, blocks with a ``native_price``: JCS({native_price, ..., version: 2}))
    a swap's tx_hash adds ``min_receive`` (base units as a string, or null) to its preimage
    transactions_root = RFC 6962 Merkle root over the 32-byte transaction hashes, in block order
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from .amounts import amount_units
from .canonical_json import canonical_json
from .merkle import merkle_root, sha256

ENCODING_VERSION = 1
PRICED_BLOCK_VERSION = 2
ZERO_HASH = "0x" + "0" * 64
_HASH_PATTERN = re.compile(r"0x[0-9a-f]{64}")


def is_hash(value: Any) -> bool:
    """``0x`` + 64 lowercase hex digits: the form of every hash in the API."""
    return isinstance(value, str) and _HASH_PATTERN.fullmatch(value) is not None


def hash_bytes(hash_hex: str) -> bytes:
    return bytes.fromhex(hash_hex[2:] if hash_hex.startswith("0x") else hash_hex)


def hash_hex(digest: bytes) -> str:
    return "0x" + digest.hex()


def _min_receive_text(preimage: Mapping[str, Any]) -> Any:
    """A swap's ``min_receive`` in base units of the token received: ``min_receive_units``, or the record's exact ``min_receive``."""
    if "min_receive_units" in preimage:
        units = preimage["min_receive_units"]
    elif preimage.get("min_receive") is not None:
        units = amount_units(preimage["min_receive"], preimage["token_out"])
    else:
        units = None
    return None if units is None else str(int(units))


def transaction_canonical_text(preimage: Mapping[str, Any]) -> str:
    """The JCS preimage of a transaction hash; ``preimage['amount_units']`` is an int of base units."""
    members: dict[str, Any] = {
        "amount": str(int(preimage["amount_units"])),
        "from": preimage["from"],
        "metadata": preimage["metadata"],
        "nonce": preimage["nonce"],
        "timestamp": preimage["timestamp"],
        "to": preimage["to"],
        "token": preimage["token"],
        "type": preimage["type"],
        "version": ENCODING_VERSION,
    }
    if preimage["type"] == "swap":
        members["min_receive"] = _min_receive_text(preimage)
    return canonical_json(members)


def block_canonical_text(header: Mapping[str, Any]) -> str:
    """The JCS preimage of a block hash: version 2 when the block carries a ``native_price``."""
    if header.get("native_price") is not None:
        return canonical_json({
            "native_price": header["native_price"],
            "number": header["number"],
            "parent_hash": header["parent_hash"],
            "timestamp": header["timestamp"],
            "transactions_root": header["transactions_root"],
            "version": PRICED_BLOCK_VERSION,
        })
    return canonical_json({
        "number": header["number"],
        "parent_hash": header["parent_hash"],
        "timestamp": header["timestamp"],
        "transactions_root": header["transactions_root"],
        "version": ENCODING_VERSION,
    })


def transaction_hash(preimage: Mapping[str, Any]) -> str:
    return hash_hex(sha256(transaction_canonical_text(preimage).encode("utf-8")))


def block_hash(header: Mapping[str, Any]) -> str:
    return hash_hex(sha256(block_canonical_text(header).encode("utf-8")))


def transactions_root(tx_hashes: Sequence[str]) -> str:
    """RFC 6962 root over a block's transaction hashes (32-byte leaves, block order)."""
    return hash_hex(merkle_root([hash_bytes(tx_hash) for tx_hash in tx_hashes]))
