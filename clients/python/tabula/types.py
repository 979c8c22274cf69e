"""The records of the Tabula API (docs/api.md) as this client returns them: plain dicts, typed.

Amounts are ``Decimal`` (exact), timestamps integer Unix seconds, hashes ``0x`` + 64 lowercase hex.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable, Literal, Optional, TypedDict, Union

TransactionType = Literal["transfer", "mint", "burn", "swap"]
TransactionStatus = Literal["pending", "confirmed", "failed"]

#: A JSON value as this client reads it (numbers with a fraction or exponent are ``Decimal``).
JsonValue = Any

#: The bearer token, or a function returning it. A function is called before every request, and
#: again once after a 401; if it takes a ``refresh`` keyword it is told which (``refresh=True``).
TokenProvider = Callable[..., str]
Jwt = Union[str, TokenProvider]

_SubmitTransactionRequired = TypedDict("_SubmitTransactionRequired", {
    "from": str,
    "to": str,
    #: A Decimal, an int or a decimal string; never a float.
    "amount": Union[Decimal, int, str],
    #: ``TAB`` (the native symbol) or ``USDG``, any case.
    "token": str,
    "type": TransactionType,
})


class SubmitTransactionRequest(_SubmitTransactionRequired, total=False):
    metadata: dict[str, JsonValue]
    #: Swaps only: the least amount of the token received to accept (Decimal, int or decimal string).
    min_receive: Union[Decimal, int, str]


class BatchTransactionRequest(SubmitTransactionRequest, total=False):
    #: Like ``Idempotency-Key`` of a single submission; a random UUID unless given.
    idempotency_key: str


class SubmitReceipt(TypedDict):
    tx_hash: str
    status: Literal["pending"]
    timestamp: int
    #: True when the service answered a retry with the first submission's receipt (``Idempotent-Replayed``).
    replayed: bool
    #: The ``Idempotency-Key`` the submission was sent with.
    idempotency_key: str


class BatchItemResult(TypedDict, total=False):
    """One item of ``submit_batch``: status 202 with ``tx_hash``/``timestamp``/``replayed``, or a 4xx with ``error``."""

    index: int
    status: int
    tx_hash: str
    timestamp: int
    replayed: bool
    #: The problem+json body of a refused item, with its stable ``code``.
    error: dict[str, Any]
    idempotency_key: str


class BatchReceipt(TypedDict):
    accepted: int
    rejected: int
    results: list[BatchItemResult]


_TransactionRequired = TypedDict("_TransactionRequired", {
    "tx_hash": str,
    "from": str,
    "to": str,
    "amount": Decimal,
    "token": str,
    "type": TransactionType,
    "metadata": dict[str, JsonValue],
    "status": TransactionStatus,
    "timestamp": int,
    "block_number": Optional[int],
    "block_hash": Optional[str],
    "position": Optional[int],
    #: Why a failed transaction failed: ``insufficient_funds``, ``balance_overflow``, ``slippage_exceeded``, ``pool_empty``, ``amount_out_zero``.
    "error": Optional[str],
    "nonce": str,
})


class Transaction(_TransactionRequired, total=False):
    """A record; the market's fields are absent from older servers."""

    #: Swaps: the least amount of ``token_out`` accepted (None: any, and for other types).
    min_receive: Optional[Decimal]
    #: Confirmed swaps: what ``to`` received, in ``token_out``; None otherwise.
    amount_out: Optional[Decimal]
    #: Swaps: the token received; None for other types.
    token_out: Optional[str]


class AccountTransactionsPage(TypedDict):
    user_id: str
    #: Newest first; pending ones included.
    transactions: list[Transaction]
    #: Pass it as ``cursor`` for the next (older) page; None on the last page.
    next_cursor: Optional[str]


class InclusionProof(TypedDict):
    tx_hash: str
    block_number: int
    block_hash: str
    transactions_root: str
    leaf_index: int
    tree_size: int
    audit_path: list[str]


class Balance(TypedDict):
    user_id: str
    native: Decimal
    usdg: Decimal
    total_usd: Decimal


class BlockHeader(TypedDict):
    number: int
    hash: str
    parent_hash: str
    timestamp: int
    transactions_count: int
    transactions_root: str


class Block(BlockHeader):
    transactions: list[str]


class BlockPage(TypedDict):
    blocks: list[BlockHeader]
    total: int
    limit: int
    offset: int


class Stats(TypedDict):
    total_transactions: int
    total_users: int
    native_price: Decimal
    trading_volume_24h: Decimal
    active_users_24h: int
    latest_block_number: int


class Quote(TypedDict):
    """``GET /api/price/quote``: what a swap would receive now (not binding), every number exact."""

    amount_out: Decimal
    token_out: str
    #: USD per native token now, and after this swap alone.
    price: Decimal
    price_after: Decimal
    #: The part of the amount paid in that the pool keeps, in the token paid in.
    fee: Decimal


class Candle(TypedDict):
    """A price candle: USD per native token over the bucket starting at ``start`` (Unix seconds)."""

    start: int
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    #: USD value of the swaps sealed in the bucket (their USDG side).
    volume_usd: Decimal


class PriceHistory(TypedDict):
    interval: Literal["1m", "1h", "1d"]
    #: Oldest first; buckets without a sealed block are absent.
    candles: list[Candle]


class SwapReceipt(SubmitReceipt):
    """What ``swap`` returns: the receipt, the quote taken for ``slippage`` (None without), and the ``min_receive`` sent (None: none)."""

    quote: Optional[Quote]
    min_receive: Optional[Decimal]


class HealthStatus(TypedDict):
    status: str


class ChainVerification(TypedDict):
    """What ``verify_chain`` checked; ``head`` is a trust anchor for later proofs."""

    from_block: int
    to_block: int
    blocks_verified: int
    head: BlockHeader


class MarketReserves(TypedDict):
    native: Decimal
    usdg: Decimal


class MarketInfo(TypedDict):
    """``GET /api/market``: the pool as of the newest sealed block, every number exact."""

    pool: str
    #: The pool's fee in basis points of the amount paid in, fixed when the ledger was created.
    fee_bps: int
    #: The price after ``block_number`` (NATIVE_PRICE_USD while a reserve is empty).
    native_price: Decimal
    reserves: MarketReserves
    block_number: int


class MarketVerification(TypedDict):
    """What ``verify_market`` replayed: blocks 0..``to_block`` and the pool and price it ended with."""

    to_block: int
    fee_bps: int
    blocks_checked: int
    swaps_checked: int
    #: Blocks whose native_price was compared with the replayed pool's (not those while a reserve was empty).
    prices_checked: int
    #: The price block ``to_block`` carries, in 12-decimal units and as a Decimal (None: blocks from before the market).
    price_units: Optional[int]
    price: Optional[Decimal]
    #: The replayed reserves after ``to_block``, in base units and as Decimal.
    native_units: int
    usdg_units: int
    reserves: MarketReserves
