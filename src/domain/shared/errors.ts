/**
 * Typed domain errors. The domain and service layers throw these; only the HTTP edge turns them into
 * status codes and problem+json bodies (see src/http/error-catalogue.ts). Each carries a stable
 * snake_case `code` that is part of the public API.
 */
import type { ErrorCode } from './error-codes.js';

export type FieldError = { field: string; message: string };

export class LedgerError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** The request is malformed or breaks a rule of the contract (HTTP 400). */
export class InvalidRequestError extends LedgerError {
  readonly field: string | undefined;
  constructor(code: ErrorCode, message: string, field?: string) {
    super(code, message);
    this.field = field;
  }
}

/** The caller is authenticated but may not do this (HTTP 403). */
export class ForbiddenError extends LedgerError {}

/** The named thing does not exist (HTTP 404). */
export class NotFoundError extends LedgerError {}

/** What the request asks for existed but is kept no longer, e.g. an event cursor past the retention (HTTP 410). */
export class GoneError extends LedgerError {}

/** The request conflicts with what was stored before (HTTP 422). */
export class ConflictError extends LedgerError {}

/** The service cannot take more work right now; the caller should retry later (HTTP 503). */
export class OverloadedError extends LedgerError {
  readonly retry_after_s: number;
  constructor(code: ErrorCode, message: string, retry_after_s: number) {
    super(code, message);
    this.retry_after_s = retry_after_s;
  }
}

/**
 * The caller's subject has spent its failure budget for this hour (src/failure-budget): an uncovered
 * debit is refused, nothing stored, until the next hour (HTTP 429 with Retry-After).
 */
export class BudgetExceededError extends LedgerError {
  readonly retry_after_s: number;
  constructor(retry_after_s: number) {
    super('failure_budget_exceeded', `this debit is not covered by the sender's sealed balance less its pending debits, and the caller has spent its failure budget for this hour; fund the account or retry after ${retry_after_s} s`);
    this.retry_after_s = retry_after_s;
  }
}

/**
 * The store cannot write now (disk full, read-only, connection lost): nothing was written, or — when
 * the connection broke during the commit — the caller cannot know; a retry with the same
 * Idempotency-Key settles it either way (HTTP 503).
 */
export class StorageUnavailableError extends OverloadedError {
  constructor(message: string, options: { cause: unknown; retry_after_s?: number }) {
    super('storage_unavailable', message, options.retry_after_s ?? 5);
    this.cause = options.cause;
  }
}

/**
 * A broken invariant: a bug, never bad input. It stops the block producer rather than being turned
 * into a client error (TigerBeetle style).
 */
export class InvariantViolation extends Error {
  constructor(message: string) {
    super(`invariant violated: ${message}`);
    this.name = 'InvariantViolation';
  }
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new InvariantViolation(message);
}
