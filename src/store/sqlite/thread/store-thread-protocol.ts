/**
 * What the event loop and the SQLite store's thread say to each other (threaded-sqlite-store.ts on the
 * loop, store-thread.ts on the thread): calls and their answers, what the thread tells unasked (the
 * storage's health, its log lines, the WAL checkpoints' counts), and errors in a form that crosses the
 * thread boundary with their class intact (a structured clone keeps only an Error's message).
 */
import {
  BudgetExceededError, ConflictError, ForbiddenError, GoneError, InvalidRequestError, InvariantViolation, LedgerError, NotFoundError, OverloadedError,
  StorageUnavailableError,
} from '../../../domain/shared/errors.js';
import type { ErrorCode } from '../../../domain/shared/error-codes.js';
import type { LedgerStore } from '../../../service/ledger-store.js';
import type { WebhookStore } from '../../../webhooks/webhook-store.js';
import { StorageOpenError } from '../../storage-faults.js';
import type { WalCheckpointLimits, WalCheckpointStats } from '../wal-checkpointer.js';

/** What the thread is started with (`workerData`). */
export type StoreThreadData = { path: string; wal_checkpoints: WalCheckpointLimits | null | undefined };

/** The store's methods that the thread answers: every asynchronous one but `close` (which is a message of its own). */
export type StoreMethod = Exclude<{ [M in keyof LedgerStore]: ReturnType<LedgerStore[M]> extends Promise<unknown> ? M : never }[keyof LedgerStore], 'close'>;
export type WebhookMethod = keyof WebhookStore;

export const STORE_METHODS = [
  'appendPending', 'findIdempotency', 'countIdempotencyKeys', 'pruneIdempotency', 'getTransaction', 'accountHistory', 'newestAccountSeq', 'newestSeq',
  'transactionsByHash', 'latestBlock', 'latestBlockNumber', 'pendingTransactions', 'pendingPostings', 'pendingCount', 'pendingCountUpTo', 'balancesOf',
  'knownUsers', 'commitBlock', 'candlesAt', 'candles', 'historyNodes', 'historySize', 'appendHistory', 'balances', 'pricedBalances', 'balanceState',
  'balanceChangesSince', 'balanceRoot', 'claimBalanceRoot', 'getBlock', 'listBlocks', 'blockTransactionHashes', 'statsSnapshot', 'readEvents', 'eventHead',
  'getSetting', 'claimSetting', 'ping',
] as const satisfies readonly StoreMethod[];

export const WEBHOOK_METHODS = [
  'createEndpoint', 'getEndpoint', 'listEndpoints', 'updateEndpoint', 'deleteEndpoint', 'claimDue', 'hasActiveEndpoints', 'updateLeased', 'releaseLease',
  'releaseLeasesOf', 'recordAttempt', 'listAttempts',
] as const satisfies readonly WebhookMethod[];

// Each list names every method of its interface (a method added to one and not here fails to compile).
type Missing<All, Listed> = Exclude<All, Listed>;
const every_store_method: Missing<StoreMethod, (typeof STORE_METHODS)[number]> extends never ? true : never = true;
const every_webhook_method: Missing<WebhookMethod, (typeof WEBHOOK_METHODS)[number]> extends never ? true : never = true;
void every_store_method;
void every_webhook_method;

/** Loop → thread. */
export type StoreThreadRequest =
  | { kind: 'call'; id: number; target: 'store'; method: StoreMethod; args: unknown[] }
  | { kind: 'call'; id: number; target: 'webhooks'; method: WebhookMethod; args: unknown[] }
  | { kind: 'close' };

/** Thread → loop. Every answer carries the store's appended event head, which the loop reads synchronously. */
export type StoreThreadMessage =
  | { kind: 'opened'; wal_checkpoints: WalCheckpointStats | null; appended_head: number }
  | { kind: 'open_failed'; error: EncodedError }
  | { kind: 'answer'; id: number; value: unknown; appended_head: number }
  | { kind: 'failed'; id: number; error: EncodedError; appended_head: number }
  | { kind: 'write_failed'; operation: string; error: EncodedError }
  | { kind: 'writes_recovered' }
  | { kind: 'log'; line: string }
  | { kind: 'wal_checkpoints'; stats: WalCheckpointStats | null }
  | { kind: 'closed' };

type LedgerErrorClass = 'InvalidRequestError' | 'ForbiddenError' | 'NotFoundError' | 'GoneError' | 'ConflictError' | 'OverloadedError' | 'BudgetExceededError';

export type EncodedError =
  | { type: 'invariant'; message: string }
  | { type: 'storage_unavailable'; message: string; retry_after_s: number; cause: EncodedError | null }
  | { type: 'storage_open'; message: string }
  | { type: 'postings_not_held' }
  | { type: 'ledger'; class: LedgerErrorClass; code: ErrorCode; message: string; field: string | undefined; retry_after_s: number | undefined }
  | { type: 'plain'; name: string; message: string; code: string | undefined; stack: string | undefined };

const INVARIANT_PREFIX = 'invariant violated: ';

/**
 * A commit named postings by their answer's number that the thread no longer holds (it keeps the last
 * few): the loop sends the postings themselves instead. Never reaches a caller.
 */
export class PostingsNotHeld extends Error {
  constructor() {
    super("the store's thread no longer holds the postings this commit names");
    this.name = 'PostingsNotHeld';
  }
}

export function encodeError(error: unknown): EncodedError {
  if (error instanceof InvariantViolation) return { type: 'invariant', message: error.message.startsWith(INVARIANT_PREFIX) ? error.message.slice(INVARIANT_PREFIX.length) : error.message };
  if (error instanceof StorageUnavailableError) {
    return { type: 'storage_unavailable', message: error.message, retry_after_s: error.retry_after_s, cause: error.cause === undefined ? null : encodeError(error.cause) };
  }
  if (error instanceof StorageOpenError) return { type: 'storage_open', message: error.message };
  if (error instanceof PostingsNotHeld) return { type: 'postings_not_held' };
  if (error instanceof LedgerError) {
    return {
      type: 'ledger', class: error.name as LedgerErrorClass, code: error.code, message: error.message,
      field: error instanceof InvalidRequestError ? error.field : undefined,
      retry_after_s: error instanceof OverloadedError || error instanceof BudgetExceededError ? error.retry_after_s : undefined,
    };
  }
  const plain = error instanceof Error ? error : new Error(String(error));
  const code = (plain as { code?: unknown }).code;
  return { type: 'plain', name: plain.name, message: plain.message, code: typeof code === 'string' ? code : undefined, stack: plain.stack };
}

export function decodeError(encoded: EncodedError): Error {
  switch (encoded.type) {
    case 'invariant':
      return new InvariantViolation(encoded.message);
    case 'storage_unavailable':
      return new StorageUnavailableError(encoded.message, { cause: encoded.cause === null ? undefined : decodeError(encoded.cause), retry_after_s: encoded.retry_after_s });
    case 'storage_open':
      return new StorageOpenError(encoded.message);
    case 'postings_not_held':
      return new PostingsNotHeld();
    case 'ledger':
      return decodeLedgerError(encoded);
    case 'plain': {
      const error = new Error(encoded.message) as Error & { code?: string };
      error.name = encoded.name;
      if (encoded.code !== undefined) error.code = encoded.code;
      if (encoded.stack !== undefined) error.stack = encoded.stack;
      return error;
    }
  }
}

function decodeLedgerError(encoded: Extract<EncodedError, { type: 'ledger' }>): LedgerError {
  switch (encoded.class) {
    case 'InvalidRequestError': return new InvalidRequestError(encoded.code, encoded.message, encoded.field);
    case 'ForbiddenError': return new ForbiddenError(encoded.code, encoded.message);
    case 'NotFoundError': return new NotFoundError(encoded.code, encoded.message);
    case 'GoneError': return new GoneError(encoded.code, encoded.message);
    case 'ConflictError': return new ConflictError(encoded.code, encoded.message);
    case 'OverloadedError': return new OverloadedError(encoded.code, encoded.message, encoded.retry_after_s ?? 1);
    case 'BudgetExceededError': return new BudgetExceededError(encoded.retry_after_s ?? 1);
  }
}
