/** Path and query parameters: parsed here so that a bad one gets its own 400 code. */
import { isHash } from '../domain/shared/hex.js';
import { BLOCK_PAGE_LIMIT_MAX, HISTORY_PAGE_LIMIT_MAX } from '../service/ledger-service.js';
import { HttpProblem } from './problem.js';

const PAGE_LIMIT_DEFAULT = 20;
/** A history cursor: the decimal arrival position of the last transaction of a page (positions start at 1). */
const CURSOR_PATTERN = /^[1-9][0-9]{0,15}$/;

export function parseHashParameter(text: string): string {
  const hash = text.toLowerCase();
  if (!isHash(hash)) throw new HttpProblem('invalid_transaction_hash', 'hash must be 0x followed by 64 hex digits');
  return hash;
}

export function parseBlockNumber(text: string): number {
  if (!/^[0-9]{1,15}$/.test(text)) throw new HttpProblem('invalid_block_number', 'block number must be a non-negative integer');
  return Number(text);
}

export function parsePagination(query: { limit?: string | undefined; offset?: string | undefined }): { limit: number; offset: number } {
  const limit = parseLimit(query.limit, BLOCK_PAGE_LIMIT_MAX);
  const offset_ok = query.offset === undefined || /^[0-9]{1,15}$/.test(query.offset);
  if (!offset_ok) {
    throw new HttpProblem('invalid_pagination', 'offset must be a non-negative integer', {}, [{ field: 'offset', message: 'must be a non-negative integer' }]);
  }
  return { limit, offset: query.offset === undefined ? 0 : Number(query.offset) };
}

/** `limit` and `cursor` of an account's history: the page size, and the position to read older transactions from. */
export function parseHistoryPage(query: { limit?: string | undefined; cursor?: string | undefined }): { limit: number; before_seq: number | null } {
  const limit = parseLimit(query.limit, HISTORY_PAGE_LIMIT_MAX);
  if (query.cursor === undefined) return { limit, before_seq: null };
  const before_seq = CURSOR_PATTERN.test(query.cursor) ? Number(query.cursor) : Number.NaN;
  if (!Number.isSafeInteger(before_seq)) {
    throw new HttpProblem('invalid_pagination', 'cursor must be a next_cursor this service returned', {}, [{ field: 'cursor', message: 'is not a cursor of this service' }]);
  }
  return { limit, before_seq };
}

/** The `next_cursor` that continues a history after the transaction at arrival position `seq`. */
export function historyCursor(seq: number): string {
  return String(seq);
}

function parseLimit(text: string | undefined, limit_max: number): number {
  if (text === undefined) return PAGE_LIMIT_DEFAULT;
  const limit = /^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= limit_max)) {
    throw new HttpProblem('invalid_pagination', `limit must be an integer from 1 to ${limit_max}`, {}, [{ field: 'limit', message: `must be an integer from 1 to ${limit_max}` }]);
  }
  return limit;
}

/** `proof` of a balance read: `true` adds the balance proof; absent or `false`, the balances alone. */
export function parseProofFlag(text: string | undefined): boolean {
  if (text === undefined || text === 'false') return false;
  if (text === 'true') return true;
  throw new HttpProblem('invalid_proof_flag', 'proof must be true or false', {}, [{ field: 'proof', message: 'must be true or false' }]);
}
