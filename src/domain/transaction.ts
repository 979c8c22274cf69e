/** Transactions: their types, statuses and failure codes, and a submitted body parsed and checked into a request. */
import { NUMBER_SIGNIFICANT_DIGITS_MAX, parseAmount, significantDigits } from './shared/amount.js';
import type { JsonValue } from './shared/canonical-json.js';
import { canonicalJson, isWellFormed } from './shared/canonical-json.js';
import { InvalidRequestError } from './shared/errors.js';
import type { Token, TokenRegistry } from './shared/tokens.js';
import { isSystemAccount } from './system-accounts.js';
import { parseUserId } from './user-id.js';

export const TRANSACTION_TYPES = ['transfer', 'mint', 'burn', 'swap'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
export type TransactionStatus = 'pending' | 'confirmed' | 'failed';
/** Why a sealed transaction failed; part of the public API. */
export type FailureCode =
  | 'insufficient_funds'
  | 'balance_overflow'
  /** A swap would have given less than its `min_receive`. */
  | 'slippage_exceeded'
  /** A swap found one of the pool's reserves empty. */
  | 'pool_empty'
  /** A swap's amount_out rounded down to 0 base units. */
  | 'amount_out_zero';

export const METADATA_BYTES_MAX = 4096;
/** Objects and arrays may nest this deep inside `metadata`; deeper input is refused before any recursion. */
export const METADATA_DEPTH_MAX = 32;

export type Metadata = { [key: string]: JsonValue };

/** A validated submission, amounts in base units. */
export type TransactionRequest = {
  from: string;
  to: string;
  amount_units: bigint;
  token: Token;
  type: TransactionType;
  metadata: Metadata;
  /** Swaps only: the least amount of the other token the swap accepts (null or absent: any). */
  min_receive_units?: bigint | null;
};

/** A transaction as stored: everything needed to recompute its hash, plus its outcome. */
export type Transaction = {
  tx_hash: string;
  from: string;
  to: string;
  amount_units: bigint;
  token: string;
  type: TransactionType;
  metadata: Metadata;
  nonce: string;
  timestamp: number;
  status: TransactionStatus;
  block_number: number | null;
  block_hash: string | null;
  position: number | null;
  error: FailureCode | null;
  /** Swaps only (part of the hash): the least amount of `token_out` accepted. */
  min_receive_units: bigint | null;
  /** Confirmed swaps only: what `to` received, in `token_out` (null for every other type and outcome). */
  amount_out_units: bigint | null;
  /** Swaps only: the token received (null for every other type). */
  token_out: string | null;
};

export type TransactionBody = {
  from: string;
  to: string;
  amount: number | string;
  token: string;
  type: string;
  metadata?: Metadata | undefined;
  /** Swaps only: the least amount of the other token to accept, as exact as `amount`. */
  min_receive?: number | string | undefined;
};

export function parseTransactionRequest(body: TransactionBody, tokens: TokenRegistry): TransactionRequest {
  const from = parseUserId(body.from, 'from');
  const to = parseUserId(body.to, 'to');
  const type = parseTransactionType(body.type);
  const token = tokens.resolve(body.token);
  const amount_units = parseAmount(body.amount, token.decimals);
  if (type === 'transfer' && from === to) {
    throw new InvalidRequestError('same_account', 'a transfer needs different from and to accounts', 'to');
  }
  const metadata = parseMetadata(body.metadata);
  const min_receive_units = parseMinReceive(body.min_receive, type, tokens.other(token));
  if (type === 'swap' && (isSystemAccount(from) || isSystemAccount(to))) {
    throw new InvalidRequestError('invalid_swap_account', 'a swap is made between accounts, never with a system account (an id beginning with @)', isSystemAccount(from) ? 'from' : 'to');
  }
  return { from, to, amount_units, token, type, metadata, ...(type === 'swap' ? { min_receive_units } : {}) };
}

/** `min_receive`: swaps only, in the token received, exact to that token's decimals. */
function parseMinReceive(value: unknown, type: TransactionType, token_out: Token): bigint | null {
  if (value === undefined || value === null) return null;
  if (type !== 'swap') throw new InvalidRequestError('validation_failed', 'min_receive applies only to swaps', 'min_receive');
  return parseAmount(value, token_out.decimals, 'min_receive');
}

function parseTransactionType(value: string): TransactionType {
  const type = TRANSACTION_TYPES.find((candidate) => candidate === value);
  if (type === undefined) {
    throw new InvalidRequestError('unsupported_transaction_type', `type must be one of ${TRANSACTION_TYPES.join(', ')}`, 'type');
  }
  return type;
}

function parseMetadata(value: Metadata | undefined): Metadata {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidRequestError('invalid_metadata', 'metadata must be a JSON object', 'metadata');
  }
  checkMetadataShape(value);
  const bytes = Buffer.byteLength(canonicalJson(value), 'utf8');
  if (bytes > METADATA_BYTES_MAX) {
    throw new InvalidRequestError('metadata_too_large', `metadata must serialize to at most ${METADATA_BYTES_MAX} bytes (got ${bytes})`, 'metadata');
  }
  return value;
}

/**
 * Walks `metadata` without recursion, refusing nesting deeper than METADATA_DEPTH_MAX and values
 * that cannot be hashed canonically (lone surrogates in strings or keys; numbers beyond a double,
 * such as 1e400, which JSON parsing turns into Infinity), before anything recursive touches it.
 */
function checkMetadataShape(metadata: Metadata): void {
  const stack: Array<{ value: unknown; depth: number }> = [{ value: metadata, depth: 1 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number };
    if (typeof value === 'string' && !isWellFormed(value)) throw invalidMetadata('metadata holds a lone UTF-16 surrogate, which has no canonical encoding');
    if (typeof value === 'number' && !Number.isFinite(value)) throw invalidMetadata('metadata holds a number beyond the range of a double, which has no canonical encoding');
    if (typeof value === 'number' && mayHaveBeenRounded(value)) {
      throw invalidMetadata('metadata holds an integer beyond ±(2^53 − 1) with more than 15 significant digits, which a JSON number cannot carry exactly; send it as a string');
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > METADATA_DEPTH_MAX) throw invalidMetadata(`metadata nests deeper than ${METADATA_DEPTH_MAX} levels`);
    const entries: unknown[] = Array.isArray(value) ? value : Object.keys(value);
    if (!Array.isArray(value)) {
      for (const key of entries as string[]) {
        if (!isWellFormed(key)) throw invalidMetadata('metadata holds a lone UTF-16 surrogate, which has no canonical encoding');
        stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1 });
      }
    } else {
      for (const item of entries) stack.push({ value: item, depth: depth + 1 });
    }
  }
}

/**
 * An integer beyond ±(2^53 − 1) written with more digits than a double holds may have been rounded by
 * JSON.parse (9007199254740993 arrives as …992, an id sent as a number changed silently; I-JSON,
 * RFC 7493, warns of exactly this). A short one such as 1e21 is carried exactly and is kept.
 */
function mayHaveBeenRounded(value: number): boolean {
  return Number.isInteger(value) && !Number.isSafeInteger(value) && significantDigits(String(value)) > NUMBER_SIGNIFICANT_DIGITS_MAX;
}

function invalidMetadata(message: string): InvalidRequestError {
  return new InvalidRequestError('invalid_metadata', message, 'metadata');
}
