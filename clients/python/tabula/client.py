"""``TabulaClient``: a method per endpoint, safe retries, exact amounts, and verification of what
the service returns. The same surface as the TypeScript SDK (packages/client), in snake_case.
"""

from __future__ import annotations

import re
import time
import urllib.parse
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from decimal import Decimal
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, cast

from . import exact_json
from .amounts import amount_argument, amount_units, exact_amount, token_decimals
from .errors import MarketMismatchError, ResponseFormatError, VerificationError, WaitTimeoutError, problem_from
from .hashing import is_hash
from .market_replay import PRICE_DECIMALS, MarketReplay, format_units
from .transport import ATTEMPTS_MAX, Answer, RetryPolicy, Transport
from .types import (
    AccountTransactionsPage, Balance, BatchItemResult, BatchReceipt, Block, BlockHeader, BlockPage, ChainVerification,
    Candle, HealthStatus, InclusionProof, Jwt, MarketInfo, MarketVerification, PriceHistory, Quote, Stats, SubmitReceipt, SwapReceipt, Transaction,
)
from .verification import header_of, verify_block, verify_chain_link, verify_inclusion_against, verify_transaction

#: The most transactions ``submit_batch`` sends in one request (the service's limit).
BATCH_TRANSACTIONS_MAX = 1000
#: The service's largest page (``limit``) of blocks and of an account's history.
PAGE_LIMIT_MAX = 100

_TIMEOUT_S_DEFAULT = 10.0
_WAIT_TIMEOUT_S_DEFAULT = 60.0
_WAIT_INTERVAL_S_DEFAULT = 0.5
_WAIT_INTERVAL_S_MIN = 0.02
#: Pages in a row that ``iter_blocks`` may find wholly newer than the block it wants before it gives up.
_OVERTAKEN_MAX = 10
#: Blocks ``verify_chain`` fetches ahead while it verifies one.
_CONCURRENCY_MAX = 16
_TRANSACTION_AMOUNTS = ("amount",)
_BALANCE_AMOUNTS = ("native", "usdg", "total_usd")
_STATS_AMOUNTS = ("native_price", "trading_volume_24h")
#: A swap record's amounts that are null on other types (and absent from older servers).
_TRANSACTION_OPTIONAL_AMOUNTS = ("min_receive", "amount_out")
_QUOTE_AMOUNTS = ("amount_out", "price", "price_after", "fee")
_CANDLE_AMOUNTS = ("open", "high", "low", "close", "volume_usd")
_CANDLE_INTERVALS = ("1m", "1h", "1d")
#: The most candles ``price_history`` asks for in one request (the service's limit).
CANDLE_LIMIT_MAX = 1000
#: Fractional digits a slippage tolerance may have, as a fraction.
_SLIPPAGE_DIGITS_MAX = 18


class TabulaClient:
    """A client of one Tabula service.

    ``base_url`` is where the service is (``https://ledger.example.com``, without ``/api``). ``jwt``
    is the bearer token or a function returning one (called before each request, and again once
    after a 401); ``api_key`` is sent as ``X-API-Key``. ``timeout_s`` applies to each attempt;
    ``retries`` is how many times a request is retried after a network error, a timeout, a 429 or a
    5xx (0..9), waiting ``Retry-After`` when the service sends one (at most ``retry_max_delay_s``),
    else an exponential backoff from ``retry_base_delay_s``.
    """

    def __init__(self, base_url: str, *, jwt: Optional[Jwt] = None, api_key: Optional[str] = None,
                 timeout_s: float = _TIMEOUT_S_DEFAULT, retries: int = 3, retry_base_delay_s: float = 0.2,
                 retry_max_delay_s: float = 10.0) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if jwt is not None and not isinstance(jwt, str) and not callable(jwt):
            raise TypeError("jwt must be a str or a function returning one")
        if type(retries) is not int or not 0 <= retries < ATTEMPTS_MAX:
            raise ValueError(f"retries must be an integer from 0 to {ATTEMPTS_MAX - 1}")
        policy = RetryPolicy(attempts=retries + 1, base_delay_s=_positive(retry_base_delay_s, "retry_base_delay_s"),
                             max_delay_s=_positive(retry_max_delay_s, "retry_max_delay_s"))
        self._transport = Transport(base_url=base_url.rstrip("/"), api_key=api_key, jwt=jwt,
                                    timeout_s=_positive(timeout_s, "timeout_s"), retry=policy)

    # --- health -------------------------------------------------------------------------------

    def health(self) -> HealthStatus:
        """``GET /healthz``: the process is up. No token needed."""
        return cast(HealthStatus, _object(self._get("/healthz", auth=False)))

    def ready(self) -> HealthStatus:
        """``GET /readyz``: the store answers (a 503 ``not_ready`` raises ``ServiceUnavailableError``). No token needed."""
        return cast(HealthStatus, _object(self._get("/readyz", auth=False)))

    # --- writes -------------------------------------------------------------------------------

    def submit_transaction(self, request: Mapping[str, Any], *, idempotency_key: Optional[str] = None) -> SubmitReceipt:
        """``POST /api/transactions/submit``: ``{from, to, amount, token, type, metadata?}``.

        ``amount`` is a Decimal, an int or a decimal string (a float raises TypeError) and is sent as
        its exact decimal text. Sends an ``Idempotency-Key`` (a random UUID unless given) and retries
        network errors, timeouts, 429 and 5xx with the same key, so a retry never creates a second
        transaction: the service answers it with the first receipt (``replayed`` True).
        """
        body = _submission(request, "request")
        key = idempotency_key if idempotency_key is not None else _random_key()
        answer = self._transport.send("POST", "/api/transactions/submit", body=body, headers={"Idempotency-Key": key})
        receipt = _object(answer)
        if not is_hash(receipt.get("tx_hash")) or type(receipt.get("timestamp")) is not int:
            raise ResponseFormatError(f"the service answered {answer.status} with a body that is not a receipt")
        return {"tx_hash": receipt["tx_hash"], "status": "pending", "timestamp": receipt["timestamp"],
                "replayed": answer.headers.get("idempotent-replayed") == "true", "idempotency_key": key}

    def submit_batch(self, transactions: Sequence[Mapping[str, Any]]) -> BatchReceipt:
        """``POST /api/transactions/batch``: 1 to 1000 submissions in one request and one durable commit.

        Each item is answered on its own and in order (``results[i]`` is for ``transactions[i]``) and
        sent with an ``idempotency_key`` (a random UUID unless it has one); the batch is retried like
        ``submit_transaction``, so a retry never stores an item twice. A refused item is a result
        carrying its problem (``error``), not an exception; only a refusal of the whole batch raises.
        """
        if not 1 <= len(transactions) <= BATCH_TRANSACTIONS_MAX:
            raise ValueError(f"a batch holds 1 to {BATCH_TRANSACTIONS_MAX} transactions, got {len(transactions)}: split it")
        items = []
        for index, transaction in enumerate(transactions):
            item = _submission(transaction, f"transactions[{index}]")
            item["idempotency_key"] = transaction.get("idempotency_key") or _random_key()
            items.append(item)
        answer = self._transport.send("POST", "/api/transactions/batch", body={"transactions": items})
        return _batch_receipt(_object(answer), [item["idempotency_key"] for item in items])

    # --- reads --------------------------------------------------------------------------------

    def get_transaction(self, tx_hash: str) -> Transaction:
        """``GET /api/transactions/{hash}``: the record, with its exact ``Decimal`` amount."""
        wanted = _checked_hash(tx_hash)
        record = _transaction(_object(self._get(f"/api/transactions/{wanted}")))
        if record.get("tx_hash") != wanted:
            raise VerificationError("record_mismatch", f"asked for transaction {wanted}, got {record.get('tx_hash')}", tx_hash=wanted)
        return record

    def get_proof(self, tx_hash: str) -> InclusionProof:
        """``GET /api/transactions/{hash}/proof``; ``NotFoundError`` (``transaction_not_sealed``) while pending."""
        wanted = _checked_hash(tx_hash)
        proof = _object(self._get(f"/api/transactions/{wanted}/proof"))
        if proof.get("tx_hash") != wanted:
            raise VerificationError("record_mismatch", f"asked for the proof of {wanted}, got one for {proof.get('tx_hash')}", tx_hash=wanted)
        return cast(InclusionProof, proof)

    def get_balance(self, user_id: str) -> Balance:
        """``GET /api/balance/{user_id}``: confirmed balances as ``Decimal``; an unknown user has zeros."""
        return cast(Balance, _with_amounts(_object(self._get(f"/api/balance/{_segment(user_id)}")), _BALANCE_AMOUNTS))

    def get_stats(self) -> Stats:
        """``GET /api/stats``."""
        return cast(Stats, _with_amounts(_object(self._get("/api/stats")), _STATS_AMOUNTS))

    def list_account_transactions(self, user_id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> AccountTransactionsPage:
        """``GET /api/accounts/{user_id}/transactions``: one page, newest first (pending ones included).

        Pass the page's ``next_cursor`` as ``cursor`` for the next, older page; it is None on the last
        one. Raises ``VerificationError`` (``record_mismatch``) if the page is another account's.
        """
        query = _query(limit=limit, cursor=cursor)
        body = _object(self._get(f"/api/accounts/{_segment(user_id)}/transactions{query}"))
        listed, next_cursor = body.get("transactions"), body.get("next_cursor")
        if not isinstance(listed, list) or not (next_cursor is None or isinstance(next_cursor, str)):
            raise ResponseFormatError("the answer is not a page of transactions")
        if body.get("user_id") != user_id:
            raise VerificationError("record_mismatch", f"asked for the transactions of {user_id}, got those of {body.get('user_id')}")
        transactions = [_transaction(item) for item in listed]
        for transaction in transactions:
            if user_id not in (transaction.get("from"), transaction.get("to")):
                raise VerificationError("record_mismatch", f"asked for the transactions of {user_id}, got one from "
                                        f"{transaction.get('from')} to {transaction.get('to')}", tx_hash=transaction.get("tx_hash"))
        return {"user_id": user_id, "transactions": transactions, "next_cursor": next_cursor}

    def iter_account_transactions(self, user_id: str, *, limit: int = PAGE_LIMIT_MAX) -> Iterator[Transaction]:
        """Every transaction of the account, newest first, page after page (``limit`` per request).

        A page is fetched only when the loop has used the one before, so ``break`` stops fetching.
        """
        cursor: Optional[str] = None
        while True:
            page = self.list_account_transactions(user_id, limit=limit, cursor=cursor)
            yield from page["transactions"]
            if page["next_cursor"] is None:
                return
            if page["next_cursor"] == cursor:
                raise ResponseFormatError(f"the history of {user_id} does not move on from cursor {cursor}")
            cursor = page["next_cursor"]

    def list_blocks(self, *, limit: Optional[int] = None, offset: Optional[int] = None) -> BlockPage:
        """``GET /api/blocks``: headers, newest first; offset *k* starts at block ``latest - k``."""
        return cast(BlockPage, _object(self._get(f"/api/blocks{_query(limit=limit, offset=offset)}")))

    def iter_blocks(self, *, limit: int = PAGE_LIMIT_MAX) -> Iterator[BlockHeader]:
        """Every block header from the newest (when the iteration starts) down to genesis, each once.

        Blocks sealed meanwhile shift the offsets; each page is re-anchored on the next block number
        wanted (offset = total - 1 - number), so none is skipped or repeated. ``limit`` headers per request.
        """
        expected: Optional[int] = None  # the number of the next header to yield; None: the newest
        offset = 0
        overtaken = 0
        while True:
            page = self.list_blocks(limit=limit, offset=offset)
            headers, total = page.get("blocks"), page.get("total")
            if not isinstance(headers, list) or type(total) is not int:
                raise ResponseFormatError("the answer is not a page of blocks")
            numbers = [header.get("number") if isinstance(header, Mapping) else None for header in headers]
            if not all(type(number) is int for number in numbers):
                raise ResponseFormatError("a block header has no number")
            fresh = [header for header in headers if expected is None or header["number"] <= expected]
            if not fresh:
                overtaken += 1  # more blocks were sealed than a page holds since the last page: re-anchor
                if not headers or overtaken > _OVERTAKEN_MAX or expected is None:
                    raise ResponseFormatError(f"the blocks list has nothing at offset {offset} (expected block {expected})")
                offset = total - 1 - expected
                continue
            for header in fresh:
                if expected is not None and header["number"] != expected:
                    raise ResponseFormatError(f"the blocks list skips from block {expected} to {header['number']}")
                yield header
                expected = header["number"] - 1
                if expected < 0:
                    return
            assert expected is not None
            offset = total - 1 - expected
            overtaken = 0

    def get_block(self, number: int) -> Block:
        """``GET /api/blocks/{number}``: the header and the block's transaction hashes in order."""
        if type(number) is not int or number < 0:
            raise ValueError(f"block number must be a non-negative integer, got {number!r}")
        block = _object(self._get(f"/api/blocks/{number}"))
        if block.get("number") != number:
            raise VerificationError("record_mismatch", f"asked for block {number}, got block {block.get('number')}", block_number=number)
        return cast(Block, block)

    # --- market -------------------------------------------------------------------------------

    def get_market(self) -> MarketInfo:
        """``GET /api/market``: the pool's account, fee, reserves and price as of the newest sealed block (numbers as Decimal)."""
        answer = self._get("/api/market")
        market = _with_amounts(_object(answer), ("native_price",))
        reserves = market.get("reserves")
        if type(market.get("fee_bps")) is not int or type(market.get("block_number")) is not int or not isinstance(reserves, dict):
            raise ResponseFormatError(f"the service answered {answer.status} with a body that is not the market")
        _with_amounts(reserves, ("native", "usdg"))
        return cast(MarketInfo, market)

    def verify_market(self, to_block: Optional[int] = None, *, concurrency: int = 4) -> MarketVerification:
        """Replays the pool from the chain: blocks 0..``to_block`` (default: the newest, as ``GET /api/market``
        names it), each block and its transactions fetched (``concurrency`` blocks ahead), every swap's
        outcome checked against the constant-product formula with the fee ``GET /api/market`` states,
        every failed swap's reason where the pool decides it, and every block's ``native_price`` against
        the replayed reserves (rules: ``tabula.market_replay``). A failure for ``insufficient_funds`` or
        ``balance_overflow`` depends on balances, which the replay does not keep: not checked. Up to the
        newest block, the reserves ``GET /api/market`` states must be the replayed ones. Raises a
        ``MarketMismatchError`` naming the block and transaction. Hashes and links are
        ``verify_chain``'s job: run both.
        """
        market = self.get_market()
        last = market["block_number"] if to_block is None else to_block
        if type(last) is not int or last < 0:
            raise ValueError(f"to_block must be a non-negative integer, got {last!r}")
        replay = MarketReplay(market["fee_bps"])

        def fetch(number: int) -> tuple[Block, list[Transaction]]:
            block = self.get_block(number)
            return block, [self.get_transaction(tx_hash) for tx_hash in block.get("transactions", [])]

        workers = min(_CONCURRENCY_MAX, max(1, concurrency))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tabula-verify-market")
        try:
            ahead: deque[Future[tuple[Block, list[Transaction]]]] = deque()
            next_fetch = 0
            for number in range(0, last + 1):
                while len(ahead) < workers and next_fetch <= last:
                    ahead.append(pool.submit(fetch, next_fetch))
                    next_fetch += 1
                block, transactions = ahead.popleft().result()
                for position, tx in enumerate(transactions):
                    if tx.get("block_number") != number or tx.get("position") != position:
                        raise VerificationError("record_mismatch", f"the block lists transaction {tx.get('tx_hash')} at position {position}, its record says "
                                                                   f"block {tx.get('block_number')} position {tx.get('position')}", block_number=number, tx_hash=tx.get("tx_hash"))
                    replay.transaction(tx, number)
                replay.end_block(block)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        native = Decimal(format_units(replay.native_units, 8))
        usdg = Decimal(format_units(replay.usdg_units, 6))
        if last == market["block_number"] and (market["reserves"]["native"] != native or market["reserves"]["usdg"] != usdg):
            raise MarketMismatchError("reserves_mismatch", f"GET /api/market states reserves {market['reserves']['native']} native, {market['reserves']['usdg']} USDG, "
                                                           f"but the replayed pool holds {native} native, {usdg} USDG", block_number=last)
        price = replay.last_price_units
        return {
            "to_block": last, "fee_bps": market["fee_bps"], "blocks_checked": replay.blocks_checked, "swaps_checked": replay.swaps_checked,
            "prices_checked": replay.prices_checked, "price_units": price, "price": None if price is None else Decimal(format_units(price, PRICE_DECIMALS)),
            "native_units": replay.native_units, "usdg_units": replay.usdg_units, "reserves": {"native": native, "usdg": usdg},
        }

    def quote(self, token: str, amount: Any) -> Quote:
        """``GET /api/price/quote``: what swapping ``amount`` of ``token`` would receive now (not binding).

        ``{amount_out, token_out, price, price_after, fee}``, every number a ``Decimal``. A
        ``ConflictError`` (409 ``market_unavailable``) while a reserve of the pool is empty.
        """
        if not isinstance(token, str) or token == "":
            raise ValueError(f"token must be a symbol such as TAB or USDG, got {token!r}")
        query = urllib.parse.urlencode({"token": token, "amount": amount_argument(amount)})
        answer = self._get(f"/api/price/quote?{query}")
        quote = _object(answer)
        if not isinstance(quote.get("token_out"), str):
            raise ResponseFormatError(f"the service answered {answer.status} with a body that is not a quote")
        return cast(Quote, _with_amounts(quote, _QUOTE_AMOUNTS))

    def price_history(self, interval: str = "1h", limit: Optional[int] = None) -> PriceHistory:
        """``GET /api/price/history``: the newest ``limit`` (1..1000, default 100) candles of ``interval``
        (``1m``, ``1h`` or ``1d``), oldest first, prices and volumes as ``Decimal``."""
        if interval not in _CANDLE_INTERVALS:
            raise ValueError(f"interval must be one of {', '.join(_CANDLE_INTERVALS)}, got {interval!r}")
        if limit is not None and (type(limit) is not int or not 1 <= limit <= CANDLE_LIMIT_MAX):
            raise ValueError(f"limit must be an integer from 1 to {CANDLE_LIMIT_MAX}, got {limit!r}")
        body = _object(self._get(f"/api/price/history{_query(interval=interval, limit=limit)}"))
        candles = body.get("candles")
        if body.get("interval") != interval or not isinstance(candles, list):
            raise ResponseFormatError(f"asked for {interval} candles, got an answer that is not them")
        typed = []
        for candle in candles:
            if not isinstance(candle, dict) or type(candle.get("start")) is not int:
                raise ResponseFormatError("a candle of the price history has no start")
            typed.append(cast(Candle, _with_amounts(candle, _CANDLE_AMOUNTS)))
        return {"interval": cast(Any, interval), "candles": typed}

    def swap(self, from_: str, to: Optional[str], amount: Any, token: str, slippage: Any = None, min_receive: Any = None, *,
             metadata: Optional[Mapping[str, Any]] = None, idempotency_key: Optional[str] = None) -> SwapReceipt:
        """Submits a swap: ``from_`` pays ``amount`` of ``token``, ``to`` (None: ``from_``) receives the other token.

        With ``slippage`` (a ``Decimal``/``str`` fraction such as ``Decimal("0.005")``, or a percentage
        string ``"0.5%"``; from 0 to below 100 %) it first takes a ``quote`` and sends
        ``min_receive = floor(amount_out * (1 - slippage))``, computed in integer base units of the
        token received; or pass ``min_receive`` yourself (not both). If the price moves further before
        the swap is sealed, it fails with ``slippage_exceeded``. Retried like ``submit_transaction``.
        Returns the receipt with the ``quote`` taken (or None) and the ``min_receive`` sent (or None).
        """
        if slippage is not None and min_receive is not None:
            raise ValueError("pass slippage or min_receive, not both")
        quote: Optional[Quote] = None
        bound: Optional[Decimal] = None if min_receive is None else Decimal(amount_argument(min_receive, "min_receive"))
        if slippage is not None:
            fraction = slippage_fraction(slippage)
            quote = self.quote(token, amount)
            bound = min_receive_for(quote["amount_out"], quote["token_out"], fraction)
        request: dict[str, Any] = {"from": from_, "to": from_ if to is None else to, "amount": amount, "token": token, "type": "swap"}
        if bound is not None:
            request["min_receive"] = amount_argument(bound, "min_receive")
        if metadata is not None:
            request["metadata"] = dict(metadata)
        receipt = self.submit_transaction(request, idempotency_key=idempotency_key)
        return {**receipt, "quote": quote, "min_receive": bound}

    def wait_for_transaction(self, tx_hash: str, *, timeout_s: float = _WAIT_TIMEOUT_S_DEFAULT,
                             interval_s: float = _WAIT_INTERVAL_S_DEFAULT) -> Transaction:
        """Polls until the transaction is ``confirmed`` or ``failed`` and returns it; ``WaitTimeoutError`` after ``timeout_s``."""
        deadline = time.monotonic() + _positive(timeout_s, "timeout_s")
        interval = max(_WAIT_INTERVAL_S_MIN, _positive(interval_s, "interval_s"))
        while True:
            transaction = self.get_transaction(tx_hash)
            if transaction["status"] != "pending":
                return transaction
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeoutError(transaction["tx_hash"], timeout_s)
            time.sleep(min(interval, left))

    # --- verification -------------------------------------------------------------------------

    def verify_transaction(self, transaction: Mapping[str, Any]) -> None:
        """Recomputes a transaction's hash from its record (exact amount, metadata, nonce, timestamp)."""
        verify_transaction(transaction)

    def verify_inclusion(self, proof: Mapping[str, Any], *, header: Optional[Mapping[str, Any]] = None) -> BlockHeader:
        """Verifies an inclusion proof: the root recomputed from ``tx_hash`` and ``audit_path`` must
        equal the ``transactions_root`` inside a block header whose recomputed hash is ``block_hash``.

        The header is fetched unless given; pass one from ``verify_chain`` to anchor the proof to a
        chain you verified (a server that forges a whole block can only be caught against such an anchor).
        Returns the header the proof was checked against.
        """
        if header is None:
            number = proof.get("block_number")
            if type(number) is not int or number < 0:
                raise VerificationError("malformed_record", "the proof has no block number", tx_hash=proof.get("tx_hash"))
            header = header_of(self.get_block(number))
        verify_inclusion_against(proof, header)
        return cast(BlockHeader, dict(header))

    def verify_block(self, block: Mapping[str, Any], *, parent: Optional[Mapping[str, Any]] = None) -> None:
        """Verifies one block by itself: the root from its transaction list, the hash from its header,
        and (given ``parent``, or for genesis) the link. Nothing the server states is taken as is."""
        verify_block(block, parent)

    def verify_chain(self, from_block: int = 0, to_block: Optional[int] = None, *,
                     on_block: Optional[Callable[[BlockHeader], None]] = None, concurrency: int = 4) -> ChainVerification:
        """Walks blocks ``from_block``..``to_block`` (default: 0 to the newest), recomputing every root
        and hash and checking every link; from genesis when ``from_block`` is 0, else from block
        ``from_block - 1``, whose own content is verified and whose hash anchors the walk. Raises a
        ``VerificationError`` naming the first bad block; ``on_block`` is called with each verified
        header, in order. ``concurrency`` (1..16) blocks are fetched ahead while one is verified.
        """
        last = to_block if to_block is not None else self._latest_block_number()
        if type(from_block) is not int or type(last) is not int or not 0 <= from_block <= last:
            raise ValueError(f"verify_chain needs 0 <= from_block <= to_block (got {from_block}..{last})")
        parent: Optional[dict[str, Any]] = None
        if from_block > 0:
            anchor = self.get_block(from_block - 1)
            verify_block(anchor)
            parent = header_of(anchor)
        workers = min(_CONCURRENCY_MAX, max(1, concurrency))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tabula-verify-chain")
        try:
            ahead: deque[Future[Block]] = deque()
            next_fetch = from_block
            for _ in range(from_block, last + 1):
                while len(ahead) < workers and next_fetch <= last:
                    ahead.append(pool.submit(self.get_block, next_fetch))
                    next_fetch += 1
                block = ahead.popleft().result()
                verify_chain_link(block, parent)
                parent = header_of(block)
                if on_block is not None:
                    on_block(cast(BlockHeader, parent))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return {"from_block": from_block, "to_block": last, "blocks_verified": last - from_block + 1, "head": cast(BlockHeader, parent)}

    # --- internals ----------------------------------------------------------------------------

    def _latest_block_number(self) -> int:
        blocks = self.list_blocks(limit=1).get("blocks")
        if not isinstance(blocks, list) or not blocks or not isinstance(blocks[0], Mapping):
            raise ResponseFormatError("the service lists no blocks (not even genesis)")
        number = blocks[0].get("number")
        if type(number) is not int:
            raise ResponseFormatError("the newest block has no number")
        return number

    def _get(self, path: str, *, auth: bool = True) -> Answer:
        return self._transport.send("GET", path, auth=auth)


def _submission(request: Any, name: str) -> dict[str, Any]:
    if not isinstance(request, Mapping):
        raise TypeError(f"{name} must be a mapping of from, to, amount, token, type and metadata")
    if "amount" not in request:
        raise ValueError(f"{name} has no amount")
    body = {key: value for key, value in request.items() if key != "idempotency_key"}
    body["amount"] = amount_argument(request["amount"], f"{name}.amount")
    return body


def _batch_receipt(body: Mapping[str, Any], keys: Sequence[str]) -> BatchReceipt:
    """Checks that the service answered every item, in order, and counts the results itself."""
    results = body.get("results")
    if not isinstance(results, list) or len(results) != len(keys):
        count = len(results) if isinstance(results, list) else "no"
        raise ResponseFormatError(f"the batch answer has {count} results for {len(keys)} transactions")
    typed = [_batch_item(result, index, keys[index]) for index, result in enumerate(results)]
    accepted = sum(1 for result in typed if "error" not in result)
    return {"accepted": accepted, "rejected": len(typed) - accepted, "results": typed}


def _batch_item(result: Any, index: int, key: str) -> BatchItemResult:
    if not isinstance(result, Mapping) or result.get("index") != index:
        raise ResponseFormatError(f"the batch answer's result {index} is not the one for transaction {index}")
    status = result.get("status")
    if status == 202 and is_hash(result.get("tx_hash")) and type(result.get("timestamp")) is int:
        return {"index": index, "status": 202, "tx_hash": result["tx_hash"], "timestamp": result["timestamp"],
                "replayed": result.get("replayed") is True, "idempotency_key": key}
    problem = problem_from(result.get("error"), status) if type(status) is int and 400 <= status < 500 else None
    if problem is None:
        raise ResponseFormatError(f"the batch answer's result {index} is neither a receipt nor a 4xx problem")
    return {"index": index, "status": problem["status"], "error": problem, "idempotency_key": key}


def _object(answer: Answer) -> dict[str, Any]:
    try:
        value = exact_json.loads(answer.text)
    except ValueError as error:
        raise ResponseFormatError(f"the service answered {answer.status} with a body that is not JSON") from error
    if not isinstance(value, dict):
        raise ResponseFormatError(f"the service answered {answer.status} with a body that is not a JSON object")
    return value


def _with_amounts(record: Any, fields: Sequence[str]) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise ResponseFormatError("a record is not a JSON object")
    for field in fields:
        try:
            record[field] = exact_amount(record.get(field))
        except ValueError as error:
            raise ResponseFormatError(f"{field} is not an exact number: {record.get(field)!r}") from error
    return record


def _transaction(record: Any) -> Transaction:
    transaction = _with_amounts(record, _TRANSACTION_AMOUNTS)
    for field in _TRANSACTION_OPTIONAL_AMOUNTS:
        if transaction.get(field) is not None:
            _with_amounts(transaction, (field,))
    return cast(Transaction, transaction)


def slippage_fraction(slippage: Any) -> tuple[int, int]:
    """A slippage tolerance as the exact fraction ``(numerator, denominator)``, 0 <= it < 1.

    A ``Decimal``, an ``int`` or a string is a fraction (``Decimal("0.005")``, ``"0.005"``); a string
    ending in ``%`` is a percentage (``"0.5%"``); a float is read from its shortest text
    (``0.005`` is exactly 5/1000). ValueError for anything outside [0, 100 %) or not a decimal.
    """
    percent = False
    if isinstance(slippage, bool):
        raise TypeError("slippage must be a Decimal, a str ('0.5%' or '0.005'), an int or a float, not a bool")
    if isinstance(slippage, str):
        text = slippage.strip()
        if text.endswith("%"):
            percent, text = True, text[:-1].strip()
        try:
            value = Decimal(text) if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?|-[0-9.]+", text) else None
        except ArithmeticError:
            value = None
    elif isinstance(slippage, (Decimal, int)):
        value = Decimal(slippage)
    elif isinstance(slippage, float):
        value = Decimal(repr(slippage)) if slippage == slippage and abs(slippage) != float("inf") else None
    else:
        raise TypeError(f"slippage must be a Decimal, a str ('0.5%' or '0.005'), an int or a float, got {type(slippage).__name__}")
    if value is None or not value.is_finite():
        raise ValueError(f"slippage must be a decimal fraction (0.005) or a percentage ('0.5%'), got {slippage!r}")
    if value < 0:
        raise ValueError(f"slippage must not be negative, got {slippage!r}")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent) + (2 if percent else 0)
    if scale > _SLIPPAGE_DIGITS_MAX:
        raise ValueError(f"slippage has more than {_SLIPPAGE_DIGITS_MAX} decimal places as a fraction: {slippage!r}")
    coefficient = int("".join(str(digit) for digit in digits) or "0") * 10 ** max(0, exponent)
    numerator, denominator = coefficient, 10**scale
    if numerator >= denominator:
        raise ValueError(f"slippage must be below 100 %, got {slippage!r}")
    return numerator, denominator


def min_receive_for(amount_out: Decimal, token_out: str, slippage: Any) -> Decimal:
    """``floor(amount_out * (1 - slippage))`` in base units of ``token_out``, as an exact ``Decimal``.

    ``slippage`` is anything ``slippage_fraction`` reads, or its ``(numerator, denominator)``. ValueError
    when the minimum rounds to nothing (a swap needs a positive ``min_receive``, or none).
    """
    numerator, denominator = slippage if isinstance(slippage, tuple) else slippage_fraction(slippage)
    decimals = token_decimals(token_out)
    units = amount_units(amount_out, token_out) * (denominator - numerator) // denominator
    if units <= 0:
        raise ValueError(f"a slippage of {slippage!r} on {amount_out} {token_out} leaves no minimum to receive: lower it or swap more")
    return Decimal(units).scaleb(-decimals).normalize() if units % 10**decimals else Decimal(units // 10**decimals)


def _checked_hash(tx_hash: str) -> str:
    lower = tx_hash.lower() if isinstance(tx_hash, str) else ""
    if not is_hash(lower):
        raise ValueError(f"not a hash (0x + 64 hex digits): {tx_hash!r}")
    return lower


def _segment(user_id: str) -> str:
    if not isinstance(user_id, str) or user_id == "":
        raise ValueError(f"user_id must be a non-empty string, got {user_id!r}")
    return urllib.parse.quote(user_id, safe="")


def _query(**parameters: Any) -> str:
    present = {name: str(value) for name, value in parameters.items() if value is not None}
    return "?" + urllib.parse.urlencode(present) if present else ""


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)) or not 0 < float(value) < float("inf"):
        raise ValueError(f"{name} must be a positive number of seconds")
    return float(value)


def _random_key() -> str:
    return str(uuid.uuid4())
