/** Path and query parameters: parsed here so that a bad one gets its own 400 code. */
import { isHash } from '../domain/hex.js';
import { BLOCK_PAGE_LIMIT_MAX } from '../service/ledger-service.js';
import { HttpProblem } from './problem.js';

const BLOCK_PAGE_LIMIT_DEFAULT = 20;

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
  const limit = query.limit === undefined ? BLOCK_PAGE_LIMIT_DEFAULT : Number(query.limit);
  const offset = query.offset === undefined ? 0 : Number(query.offset);
  const limit_ok = query.limit === undefined || /^[0-9]{1,3}$/.test(query.limit);
  const offset_ok = query.offset === undefined || /^[0-9]{1,15}$/.test(query.offset);
  if (!limit_ok || limit < 1 || limit > BLOCK_PAGE_LIMIT_MAX) {
    throw new HttpProblem('invalid_pagination', `limit must be an integer from 1 to ${BLOCK_PAGE_LIMIT_MAX}`, {}, [{ field: 'limit', message: 'must be an integer from 1 to 100' }]);
  }
  if (!offset_ok) {
    throw new HttpProblem('invalid_pagination', 'offset must be a non-negative integer', {}, [{ field: 'offset', message: 'must be a non-negative integer' }]);
  }
  return { limit, offset };
}
