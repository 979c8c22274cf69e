/** @tabula/client: the TypeScript SDK of the Tabula ledger. */
export { BATCH_TRANSACTIONS_MAX, TabulaClient, randomKey, type ChainOptions, type TabulaClientOptions, type WaitOptions } from './client.js';
export {
  ApiError, BadRequestError, ForbiddenError, IdempotencyConflictError, NetworkError, NotFoundError, PayloadTooLargeError,
  RateLimitedError, RequestTimeoutError, ResponseFormatError, ServerError, TabulaError, UnauthorizedError,
  UnsupportedMediaTypeError, VerificationError, WaitTimeoutError, type Problem, type VerificationCode,
} from './errors.js';
export { parseWithExactNumbers, plainDecimal, topLevelArrayItemTexts, topLevelNumberTexts } from './exact-json.js';
export type { RetryOptions, TokenProvider } from './transport.js';
export type * from './types.js';
export { amountUnits, sha256, tokenDecimals, verifyBlock, verifyChainLink, verifyInclusionAgainst, verifyTransaction } from './verification.js';
export { canonicalJson } from '../../../src/domain/canonical-json.js';
export { blockCanonicalText, transactionCanonicalText } from '../../../src/domain/encoding.js';
