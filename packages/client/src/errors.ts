/**
 * Every error the SDK throws is a `TabulaError`. Branch on the class (`instanceof NotFoundError`) or
 * on `code`: for API errors it is the stable snake_case code of the problem+json body (the table in
 * docs/api.md); for verification errors it names the check that failed.
 */
import type { CheckCode } from '../../../src/domain/shared/chain-verification.js';
import type { SignedCheckpoint } from '../../../src/domain/shared/checkpoint.js';

/** RFC 9457 problem details, as every Tabula error response carries them. */
export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: { field: string; message: string }[];
};

export class TabulaError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The API answered with an error status. */
export class ApiError extends TabulaError {
  readonly status: number;
  readonly code: string;
  readonly problem: Problem;
  /** From `Retry-After`, when the answer carried one. */
  readonly retry_after_ms: number | null;

  constructor(problem: Problem, retry_after_ms: number | null = null) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`);
    this.status = problem.status;
    this.code = problem.code;
    this.problem = problem;
    this.retry_after_ms = retry_after_ms;
  }
}

/** 400: invalid parameters or body (`validation_failed`, `invalid_amount`, `amount_too_precise`, …). */
export class BadRequestError extends ApiError {}
/** 401: missing or invalid token (`missing_token`, `invalid_token`) or API key (`invalid_api_key`). */
export class UnauthorizedError extends ApiError {}
/** 403: authenticated but not allowed (`admin_required`, `not_account_owner`). */
export class ForbiddenError extends ApiError {}
/** 404: no such transaction or block (`transaction_not_found`, `transaction_not_sealed`, `block_not_found`). */
export class NotFoundError extends ApiError {}
/** 409: the state forbids it now (`market_unavailable`: a pool reserve is empty; `too_many_webhooks`). */
export class ConflictError extends ApiError {}
/** 410: the event cursor is older than the log's retention (`cursor_expired`); replay from the blocks API. */
export class CursorExpiredError extends ApiError {}
/** 413: the body is over 64 KiB (`payload_too_large`). */
export class PayloadTooLargeError extends ApiError {}
/** 415: a body without `Content-Type: application/json` (`unsupported_media_type`). */
export class UnsupportedMediaTypeError extends ApiError {}
/** 422: the `Idempotency-Key` was used before with another request (`idempotency_key_reused`). */
export class IdempotencyConflictError extends ApiError {}
/** 429: over the rate limit (`rate_limited`); `retry_after_ms` says when to come back. */
export class RateLimitedError extends ApiError {}
/** 5xx: the service failed (`internal_error`) or is unavailable (503 `service_overloaded`, …). */
export class ServerError extends ApiError {}

/** The request never got an answer: connection refused or reset, DNS, TLS… */
export class NetworkError extends TabulaError {}

/** No answer within the per-request timeout (after the allowed retries). */
export class RequestTimeoutError extends TabulaError {
  readonly timeout_ms: number;
  constructor(timeout_ms: number, options?: { cause?: unknown }) {
    super(`no answer within ${timeout_ms} ms`, options);
    this.timeout_ms = timeout_ms;
  }
}

/** `waitForTransaction` ran out of time while the transaction was still pending. */
export class WaitTimeoutError extends TabulaError {
  readonly tx_hash: string;
  constructor(tx_hash: string, timeout_ms: number) {
    super(`transaction ${tx_hash} is still pending after ${timeout_ms} ms`);
    this.tx_hash = tx_hash;
  }
}

/** A 2xx answer that is not the JSON the API documents. */
export class ResponseFormatError extends TabulaError {}

/** `event_sequence_gap`: the event stream skipped, repeated or reordered a sequence. */
/**
 * `balance_proof_invalid`: a balance proof is malformed or its path does not lead to its root;
 * `balance_mismatch`: the stated balance is not the proven one; `balance_root_mismatch`: the proof's
 * root is not the one trusted for its block.
 */
export type VerificationCode =
  | CheckCode | 'record_mismatch' | 'event_sequence_gap'
  | 'checkpoint_signature_invalid' | 'checkpoint_stale' | 'history_proof_invalid'
  | 'balance_proof_invalid' | 'balance_mismatch' | 'balance_root_mismatch';

/** Where in the chain a verifier found a problem, when known. */
type ChainPlace = { block_number?: number | null; tx_hash?: string | null };

/** "block N: reason (transaction H)", each part only when known. */
function placedMessage(reason: string, where: ChainPlace): string {
  const place = where.block_number == null ? '' : `block ${where.block_number}: `;
  const tx = where.tx_hash == null ? '' : ` (transaction ${where.tx_hash})`;
  return `${place}${reason}${tx}`;
}

/**
 * What the server sent does not verify: a recomputed hash, root or link differs from what it claims.
 * `block_number` and `tx_hash` say where, when known.
 */
export class VerificationError extends TabulaError {
  readonly code: VerificationCode;
  readonly block_number: number | null;
  readonly tx_hash: string | null;

  constructor(code: VerificationCode, reason: string, where: ChainPlace = {}) {
    super(placedMessage(reason, where));
    this.code = code;
    this.block_number = where.block_number ?? null;
    this.tx_hash = where.tx_hash ?? null;
  }
}

/**
 * What the pool replay (`verifyMarket`, `MarketReplay`) found the chain's market records cannot be:
 * `amount_out_mismatch` (a swap's outcome is not the formula's), `failure_implausible` (a swap failed
 * for a reason the replayed pool rules out), `price_mismatch` (a block's native_price is not the
 * replayed pool's), `reserves_mismatch` (the reserves the service states are not the replayed ones),
 * `reserve_negative` (more taken from @pool than it holds), `malformed_record` (a record the replay
 * cannot read). `block_number` and `tx_hash` say where; `expected` / `actual` what differed, when it
 * is one value.
 */
export type MarketMismatchCode = 'amount_out_mismatch' | 'failure_implausible' | 'price_mismatch' | 'reserves_mismatch' | 'reserve_negative' | 'malformed_record';

export class MarketMismatchError extends TabulaError {
  readonly code: MarketMismatchCode;
  readonly block_number: number | null;
  readonly tx_hash: string | null;
  readonly expected: string | null;
  readonly actual: string | null;

  constructor(code: MarketMismatchCode, reason: string, where: ChainPlace & { expected?: string; actual?: string } = {}) {
    super(placedMessage(reason, where));
    this.code = code;
    this.block_number = where.block_number ?? null;
    this.tx_hash = where.tx_hash ?? null;
    this.expected = where.expected ?? null;
    this.actual = where.actual ?? null;
  }
}

/** A signed checkpoint as the service serves it (`GET /api/checkpoint`): the service's own type. */
export type { SignedCheckpoint };

/**
 * The service showed a history that does not extend the one this client trusted (it rewrote or
 * forked it). Both checkpoints carry valid signatures by the service's key: publish them as evidence.
 */
export class ForkDetectedError extends TabulaError {
  readonly trusted: SignedCheckpoint;
  readonly presented: SignedCheckpoint;
  constructor(trusted: SignedCheckpoint, presented: SignedCheckpoint, reason: string) {
    super(`fork detected: ${reason} (trusted checkpoint of size ${trusted.size}, presented checkpoint of size ${presented.size})`);
    this.trusted = trusted;
    this.presented = presented;
  }
}

export type WebhookFailure = 'missing_header' | 'malformed_header' | 'timestamp_too_old' | 'timestamp_in_future' | 'invalid_secret' | 'no_matching_signature' | 'malformed_body';

/** A webhook delivery that must not be trusted: `reason` says why (`verifyWebhook`). */
export class WebhookVerificationError extends TabulaError {
  readonly reason: WebhookFailure;
  constructor(reason: WebhookFailure, message: string) {
    super(`${reason}: ${message}`);
    this.reason = reason;
  }
}

const ERRORS_BY_STATUS: Record<number, new (problem: Problem, retry_after_ms: number | null) => ApiError> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  410: CursorExpiredError,
  413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError,
  422: IdempotencyConflictError,
  429: RateLimitedError,
};

export function apiErrorFor(problem: Problem, retry_after_ms: number | null): ApiError {
  const ErrorClass = ERRORS_BY_STATUS[problem.status] ?? (problem.status >= 500 ? ServerError : ApiError);
  return new ErrorClass(problem, retry_after_ms);
}
