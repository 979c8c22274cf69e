"""RFC 6962 (Certificate Transparency) Merkle Tree Hash and inclusion proofs (src/domain/shared/merkle.ts).

Leaf hash = SHA-256(0x00 || leaf), node hash = SHA-256(0x01 || left || right), the tree split at the
largest power of two smaller than its size, and the empty tree hashes to SHA-256 of nothing.
"""

from __future__ import annotations

import hashlib
from typing import Optional, Sequence

_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf_hash(leaf: bytes) -> bytes:
    return sha256(_LEAF_PREFIX + leaf)


def node_hash(left: bytes, right: bytes) -> bytes:
    return sha256(_NODE_PREFIX + left + right)


def _next_level(level: Sequence[bytes]) -> list[bytes]:
    """Pairs left to right; an odd last node is carried up unchanged (which is RFC 6962's split)."""
    paired = [node_hash(level[index], level[index + 1]) for index in range(0, len(level) - 1, 2)]
    if len(level) % 2 == 1:
        paired.append(level[-1])
    return paired


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """Merkle Tree Hash of ``leaves``, bottom-up in O(n) hashes."""
    if not leaves:
        return sha256(b"")
    level = [leaf_hash(leaf) for leaf in leaves]
    while len(level) > 1:
        level = _next_level(level)
    return level[0]


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """RFC 6962 PATH(m, D[n]): the audit path of the leaf at ``index``, nearest sibling first."""
    if not 0 <= index < len(leaves):
        raise IndexError(f"leaf index {index} outside a tree of {len(leaves)}")
    path: list[bytes] = []
    level = [leaf_hash(leaf) for leaf in leaves]
    position = index
    while len(level) > 1:
        sibling = position ^ 1
        if sibling < len(level):
            path.append(level[sibling])
        level = _next_level(level)
        position >>= 1
    return path


def root_from_inclusion_proof(leaf: bytes, index: int, tree_size: int, path: Sequence[bytes]) -> Optional[bytes]:
    """The root recomputed from a leaf and its audit path (RFC 9162 section 2.1.3.2), or None when
    the path's length does not fit the index and tree size."""
    if not 0 <= index < tree_size:
        return None
    fn, sn = index, tree_size - 1
    result = leaf_hash(leaf)
    for sibling in path:
        if sn == 0:
            return None
        if fn % 2 == 1 or fn == sn:
            result = node_hash(sibling, result)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            result = node_hash(result, sibling)
        fn >>= 1
        sn >>= 1
    return result if sn == 0 else None
