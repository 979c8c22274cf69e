/**
 * The requests of the benchmark's scenarios, shared by `npm run bench` (bench/run.ts) and the per-step
 * cost breakdown (bench/cost-breakdown.ts), so both measure the same requests.
 */
import type { PooledRequest } from './load-types.js';
import type { TransferBody } from './ledger-client.js';

export const SUBMIT_AMOUNT = '0.01';
export const FUNDING_AMOUNT = '1000000';
/** Requests per read pool (spread over the ledger's users and sampled hashes). */
export const SAMPLE_POOL_SIZE = 1000;

export function mint(user: string): TransferBody {
  return { from: 'bench-treasury', to: user, amount: FUNDING_AMOUNT, token: 'TAB', type: 'mint' };
}

export function submitRequest(token: string, body: TransferBody): PooledRequest {
  return { method: 'POST', path: '/api/transactions/submit', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

export function batchRequest(token: string, items: TransferBody[]): PooledRequest {
  return { method: 'POST', path: '/api/transactions/batch', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ transactions: items }) };
}

export function getRequest(token: string, request_path: string): PooledRequest {
  return { method: 'GET', path: request_path, headers: { authorization: `Bearer ${token}` } };
}

/** Each sender pays the next one (every sender is funded, so every transfer is covered). */
export function submitManyPool(senders: readonly string[], sender_tokens: readonly string[]): PooledRequest[] {
  return senders.map((sender, index) => submitRequest(sender_tokens[index] as string, {
    from: sender, to: senders[(index + 1) % senders.length] as string, amount: SUBMIT_AMOUNT, token: 'TAB', type: 'transfer',
  }));
}

/**
 * The many senders' transfers, each sent with a new random `Idempotency-Key`, as a payments client that
 * retries safely sends every submission: the key is claimed in the same commit as the transaction.
 */
export function submitKeyedPool(senders: readonly string[], sender_tokens: readonly string[]): PooledRequest[] {
  return submitManyPool(senders, sender_tokens).map((request) => ({ ...request, new_idempotency_key: true }));
}

/** One funded sender ('hot-sender') paying many receivers. */
export function submitHotPool(hot_token: string, receivers: readonly string[]): PooledRequest[] {
  return receivers.slice(0, SAMPLE_POOL_SIZE).map((receiver) => submitRequest(hot_token, {
    from: 'hot-sender', to: receiver, amount: SUBMIT_AMOUNT, token: 'TAB', type: 'transfer',
  }));
}

/** Sixteen batches of `batch_size` transfers between the senders, sent by the admin. */
export function batchPool(admin_token: string, senders: readonly string[], batch_size: number): PooledRequest[] {
  return Array.from({ length: 16 }, (_, batch) => batchRequest(admin_token, Array.from({ length: batch_size }, (_, index) => {
    const sender = (batch * batch_size + index) % senders.length;
    return { from: senders[sender] as string, to: senders[(sender + 7) % senders.length] as string, amount: SUBMIT_AMOUNT, token: 'TAB', type: 'transfer' as const };
  })));
}

export type ReadPool = { name: string; title: string; pool: PooledRequest[] };

/** The read scenarios, each a pool of requests spread over the ledger (users, sampled hashes), from two readers. */
export function readPools(readers: readonly string[], users: readonly string[], hashes: readonly string[], blocks: number): ReadPool[] {
  const pick = <T>(items: readonly T[], index: number) => items[(index * 7919) % items.length] as T;
  const pool = (make: (index: number) => string) => Array.from({ length: SAMPLE_POOL_SIZE }, (_, index) => getRequest(readers[index % readers.length] as string, make(index)));
  return [
    { name: 'tx_lookup', title: 'transaction by hash', pool: pool((index) => `/api/transactions/${pick(hashes, index)}`) },
    { name: 'balance', title: 'balance', pool: pool((index) => `/api/balance/${pick(users, index)}`) },
    { name: 'account_history', title: 'account history', pool: pool((index) => `/api/accounts/${pick(users, index)}/transactions?limit=20`) },
    { name: 'blocks_first', title: 'blocks page, offset 0', pool: pool(() => '/api/blocks?limit=20&offset=0') },
    { name: 'blocks_deep', title: `blocks page, offset ${Math.max(0, blocks - 20)}`, pool: pool(() => `/api/blocks?limit=20&offset=${Math.max(0, blocks - 20)}`) },
    { name: 'stats', title: 'stats', pool: pool(() => '/api/stats') },
  ];
}
