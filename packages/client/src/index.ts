/** @tabula/client: the TypeScript SDK of the Tabula ledger. */
export { BATCH_TRANSACTIONS_MAX, CANDLE_LIMIT_MAX, TabulaClient, randomKey, type ChainOptions, type MarketOptions, type TabulaClientOptions, type WaitOptions } from './client.js';
export {
  ApiError, BadRequestError, ConflictError, CursorExpiredError, ForbiddenError, IdempotencyConflictError, NetworkError, NotFoundError, PayloadTooLargeError,
  RateLimitedError, RequestTimeoutError, ResponseFormatError, ServerError, TabulaError, UnauthorizedError,
  UnsupportedMediaTypeError, VerificationError, ForkDetectedError, MarketMismatchError, type MarketMismatchCode, type SignedCheckpoint, WaitTimeoutError, WebhookVerificationError, type Problem, type VerificationCode, type WebhookFailure,
} from './errors.js';
export { parseEventText } from './event-stream.js';
export { parseWithExactNumbers, plainDecimal, topLevelArrayItemTexts, topLevelNumberTexts } from './exact-json.js';
export type { RetryOptions, TokenProvider } from './transport.js';
export type * from './types.js';
export {
  MarketReplay, POOL_ACCOUNT, PRICE_DECIMALS, decimalUnits, formatPriceUnits, poolAmountOut, poolPriceUnits, priceUnits, tokenUnits, type PoolReserves, type ReplayBlock, type ReplayTransaction,
} from './market-replay.js';
export { minReceiveFor, minReceiveUnits, parseSlippage, type Slippage, type SlippageFraction } from './slippage.js';
export { amountUnits, sha256, tokenDecimals, verifyBlock, verifyChainLink, verifyInclusionAgainst, verifyTransaction } from './verification.js';
export { noteBalanceRoot, verifyBalanceProof, type BalanceProof, type BalanceProofEntry, type ProvenBalances } from './balance-verification.js';
export { verifyWebhook, type VerifyWebhookOptions, type WebhookHeaders } from './webhook.js';
export { canonicalJson } from '../../../src/domain/shared/canonical-json.js';
export { blockCanonicalText, transactionCanonicalText } from '../../../src/domain/shared/encoding.js';
export { LightClient, type CheckpointStorage, type TrustAnchor, type TrustOptions } from './light-client.js';
export { verifyEd25519, verifyEd25519Fallback } from './signature.js';
