"""tabula-client: the Python client of the Tabula ledger (standard library only).

    from decimal import Decimal
    from tabula import TabulaClient

    client = TabulaClient("http://localhost:8080", jwt=token)
    receipt = client.submit_transaction({"from": "alice", "to": "bob", "amount": Decimal("12.5"), "token": "TAB", "type": "transfer"})
    transaction = client.wait_for_transaction(receipt["tx_hash"])
    client.verify_transaction(transaction)
    client.verify_inclusion(client.get_proof(transaction["tx_hash"]))
"""

from .amounts import AmountInput, amount_units, token_decimals
from .canonical_json import canonical_json
from .client import BATCH_TRANSACTIONS_MAX, CANDLE_LIMIT_MAX, PAGE_LIMIT_MAX, TabulaClient, min_receive_for, slippage_fraction
from .errors import (
    ApiError, BadRequestError, ConflictError, ForbiddenError, GoneError, IdempotencyConflictError, NetworkError, NotFoundError,
    PayloadTooLargeError, RateLimitedError, RequestTimeoutError, ResponseFormatError, ServerError, ServiceUnavailableError,
    TabulaError, UnauthorizedError, UnsupportedMediaTypeError, VerificationError, WaitTimeoutError, MarketMismatchError,
)
from .market_replay import POOL_ACCOUNT, MarketReplay, pool_amount_out, pool_price_units
from .hashing import block_canonical_text, block_hash, transaction_canonical_text, transaction_hash, transactions_root
from .types import (
    AccountTransactionsPage, Balance, BatchItemResult, BatchReceipt, BatchTransactionRequest, Block, BlockHeader, BlockPage, Candle,
    ChainVerification, HealthStatus, InclusionProof, MarketInfo, MarketVerification, PriceHistory, Quote, Stats, SubmitReceipt, SubmitTransactionRequest, SwapReceipt,
    Transaction,
)
from .verification import verify_block, verify_chain_link, verify_inclusion_against, verify_transaction

__version__ = "0.1.0"

__all__ = [
    "AccountTransactionsPage", "AmountInput", "ApiError", "BATCH_TRANSACTIONS_MAX", "BadRequestError", "Balance", "BatchItemResult",
    "BatchReceipt", "BatchTransactionRequest", "Block", "BlockHeader", "BlockPage", "CANDLE_LIMIT_MAX", "Candle", "ChainVerification", "ConflictError",
    "ForbiddenError", "GoneError", "HealthStatus", "MarketInfo", "MarketMismatchError", "MarketReplay", "MarketVerification", "POOL_ACCOUNT", "IdempotencyConflictError", "InclusionProof", "NetworkError", "NotFoundError",
    "PAGE_LIMIT_MAX", "PayloadTooLargeError", "PriceHistory", "Quote", "RateLimitedError", "RequestTimeoutError", "ResponseFormatError", "ServerError",
    "ServiceUnavailableError", "Stats", "SubmitReceipt", "SubmitTransactionRequest", "SwapReceipt", "TabulaClient", "TabulaError",
    "Transaction", "UnauthorizedError", "UnsupportedMediaTypeError", "VerificationError", "WaitTimeoutError", "amount_units",
    "block_canonical_text", "block_hash", "canonical_json", "min_receive_for", "pool_amount_out", "pool_price_units", "slippage_fraction", "token_decimals", "transaction_canonical_text", "transaction_hash",
    "transactions_root", "verify_block", "verify_chain_link", "verify_inclusion_against", "verify_transaction",
]
