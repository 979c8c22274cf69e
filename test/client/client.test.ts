/**
 * The SDK against the real service process: every method, exact amounts, and every typed error the
 * service can produce (the ones it cannot be made to produce on demand, 5xx and transport failures,
 * are in retries.test.ts against loopback doubles).
 */
import {
  BATCH_TRANSACTIONS_MAX, BadRequestError, ForbiddenError, IdempotencyConflictError, NetworkError, NotFoundError, PayloadTooLargeError, RateLimitedError,
  TabulaClient, TabulaError, UnauthorizedError, UnsupportedMediaTypeError, WaitTimeoutError, type ApiError, type BatchItemResult,
  type BatchTransactionRequest, type Transaction,
} from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_TRANSACTIONS_MAX as SERVICE_BATCH_TRANSACTIONS_MAX } from '../../src/service/ledger-service.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { freePort, ServiceProcess } from '../support/service-process.js';

const API_KEY = 'sdk-test-api-key-0123456789';
const U64_MAX_TAB = '92233720368.54775807'; // 2^63 − 1 base units of an 8-decimal token

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('expected the call to fail');
}

function expectApiError(error: ApiError, type: new (...args: never[]) => ApiError, status: number, code: string): void {
  expect(error).toBeInstanceOf(type);
  expect(error).toBeInstanceOf(TabulaError);
  expect(error).toMatchObject({ status, code });
  expect(error.problem).toMatchObject({ status, code, type: `urn:tabula:problem:${code}`, title: expect.any(String), detail: expect.any(String) });
}

describe('TabulaClient against the service', () => {
  let server: ServiceProcess;
  let admin: TabulaClient;
  let alice: TabulaClient;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, API_KEYS: API_KEY } });
    admin = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY, jwt: await server.token('treasury', { admin: true }) });
    alice = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY, jwt: async () => server.token('alice') });
  });
  afterAll(async () => { await server?.close(); });

  it('health and ready need no token', async () => {
    const anonymous = new TabulaClient({ baseUrl: server.url });
    expect(await anonymous.health()).toEqual({ status: 'ok' });
    expect(await anonymous.ready()).toEqual({ status: 'ready' });
  });

  it('submits, waits for confirmation, reads the record and verifies its hash and inclusion proof', async () => {
    const receipt = await admin.submitTransaction({ from: 'treasury', to: 'alice', amount: 100, token: 'TAB', type: 'mint', metadata: { memo: 'welcome' } });
    expect(receipt).toEqual({ tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/), status: 'pending', timestamp: expect.any(Number), replayed: false, idempotency_key: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const confirmed = await alice.waitForTransaction(receipt.tx_hash, { timeoutMs: 10_000, intervalMs: 25 });
    expect(confirmed).toMatchObject({
      tx_hash: receipt.tx_hash, from: 'treasury', to: 'alice', amount: 100, amount_text: '100', token: 'TAB', type: 'mint',
      metadata: { memo: 'welcome' }, status: 'confirmed', timestamp: receipt.timestamp, block_number: expect.any(Number),
      block_hash: expect.any(String), position: expect.any(Number), error: null, nonce: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(await alice.getTransaction(receipt.tx_hash.toUpperCase().replace('0X', '0x'))).toEqual(confirmed);
    await alice.verifyTransaction(confirmed);
    const proof = await alice.getProof(receipt.tx_hash);
    expect(proof).toMatchObject({ tx_hash: receipt.tx_hash, block_number: confirmed.block_number, block_hash: confirmed.block_hash, leaf_index: confirmed.position });
    const { header } = await alice.verifyInclusion(proof);
    expect(header).toMatchObject({ number: confirmed.block_number, hash: confirmed.block_hash });
  });

  it('reports a failed transaction as final, with its error', async () => {
    const receipt = await alice.submitTransaction({ from: 'alice', to: 'bob', amount: '1000000', token: 'USDG', type: 'transfer' });
    const failed = await alice.waitForTransaction(receipt.tx_hash, { timeoutMs: 10_000, intervalMs: 25 });
    expect(failed).toMatchObject({ status: 'failed', error: 'insufficient_funds', amount_text: '1000000', token: 'USDG' });
    await alice.verifyTransaction(failed);
  });

  it('keeps amounts exact beyond 2^53 base units (amount_text, native_text) and verifies with them', async () => {
    const receipt = await admin.submitTransaction({ from: 'treasury', to: 'whale', amount: U64_MAX_TAB, token: 'tab', type: 'mint' });
    const transaction = await admin.waitForTransaction(receipt.tx_hash, { intervalMs: 25 });
    expect(transaction.amount_text).toBe(U64_MAX_TAB);
    expect(String(transaction.amount)).not.toBe(U64_MAX_TAB); // the double is rounded; the text is not
    await admin.verifyTransaction(transaction);
    // 2^53 + 1 base units: the double is not this decimal, and a hash recomputed from it is wrong.
    const odd = await admin.waitForTransaction((await admin.submitTransaction({ from: 'treasury', to: 'minnow', amount: '90071992.54740993', token: 'TAB', type: 'mint' })).tx_hash, { intervalMs: 25 });
    expect(odd.amount_text).toBe('90071992.54740993');
    expect(String(odd.amount)).not.toBe('90071992.54740993');
    await admin.verifyTransaction(odd);
    const rounded: Transaction = { ...odd, amount_text: String(odd.amount) };
    await expect(admin.verifyTransaction(rounded)).rejects.toMatchObject({ code: 'transaction_hash_mismatch', tx_hash: odd.tx_hash });
    const balance = await admin.getBalance('whale');
    expect(balance).toMatchObject({ user_id: 'whale', native_text: U64_MAX_TAB, usdg: 0, usdg_text: '0' });
    expect(balance.total_usd_text).toBe('92233720368.547758');
  });

  it('reads balances (an unknown user has zeros) with user ids that need escaping', async () => {
    expect(await alice.getBalance('auth0|nobody/yet?#%')).toEqual({ user_id: 'auth0|nobody/yet?#%', native: 0, native_text: '0', usdg: 0, usdg_text: '0', total_usd: 0, total_usd_text: '0' });
    const balance = await alice.getBalance('alice');
    expect(balance.native).toBe(100);
  });

  it("lists an account's transactions page by page, newest first with exact amounts, and iterates over all of them", async () => {
    const hana = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY, jwt: await server.token('hana') });
    const minted = await admin.submitBatch([
      { from: 'treasury', to: 'hana', amount: '90071992.54740993', token: 'TAB', type: 'mint' },
      { from: 'treasury', to: 'hana', amount: '2.5', token: 'USDG', type: 'mint', metadata: { memo: 'amount' } },
      { from: 'treasury', to: 'hana', amount: 1, token: 'TAB', type: 'mint' },
    ]);
    const hashes = minted.results.map((result) => result.tx_hash as string);
    await Promise.all(hashes.map((hash) => admin.waitForTransaction(hash, { intervalMs: 25 })));
    const sent = await hana.submitTransaction({ from: 'hana', to: 'ivan', amount: '0.5', token: 'TAB', type: 'transfer' });
    await hana.waitForTransaction(sent.tx_hash, { intervalMs: 25 });
    const newest_first = [sent.tx_hash, ...[...hashes].reverse()];

    const first = await alice.listAccountTransactions('hana', { limit: 3 });
    expect(first).toMatchObject({ user_id: 'hana', next_cursor: expect.any(String) });
    expect(first.transactions.map((tx) => tx.tx_hash)).toEqual(newest_first.slice(0, 3));
    const last = await alice.listAccountTransactions('hana', { limit: 3, cursor: first.next_cursor as string });
    expect(last.transactions.map((tx) => tx.tx_hash)).toEqual(newest_first.slice(3));
    expect(last.next_cursor).toBeNull();
    const whole = [...first.transactions, ...last.transactions];
    expect(whole[0]).toMatchObject({ from: 'hana', to: 'ivan', amount_text: '0.5' });
    expect(whole.at(-1)).toMatchObject({ amount: 90071992.54740993, amount_text: '90071992.54740993', status: 'confirmed' });
    expect(whole.at(-2)).toMatchObject({ amount_text: '2.5', token: 'USDG', metadata: { memo: 'amount' } });
    for (const tx of whole) {
      expect(tx).toEqual(await alice.getTransaction(tx.tx_hash));
      await alice.verifyTransaction(tx);
    }

    const iterated: string[] = [];
    for await (const tx of alice.iterateAccountTransactions('hana', { limit: 1 })) iterated.push(tx.tx_hash);
    expect(iterated).toEqual(newest_first);
    const stopped: string[] = [];
    for await (const tx of alice.iterateAccountTransactions('hana')) {
      stopped.push(tx.tx_hash);
      if (stopped.length === 2) break;
    }
    expect(stopped).toEqual(newest_first.slice(0, 2));
    expect(await alice.listAccountTransactions('auth0|nobody/yet?#%')).toEqual({ user_id: 'auth0|nobody/yet?#%', transactions: [], next_cursor: null });
    expectApiError(await rejection(alice.listAccountTransactions('hana', { cursor: 'not-a-cursor' })), BadRequestError, 400, 'invalid_pagination');
    expectApiError(await rejection(alice.listAccountTransactions('hana', { limit: 101 })), BadRequestError, 400, 'invalid_pagination');
    expectApiError(await rejection(alice.listAccountTransactions('han a')), BadRequestError, 400, 'invalid_user_id');
  });

  it('lists and reads blocks, verifies each one and the whole chain', async () => {
    const page = await alice.listBlocks({ limit: 2, offset: 0 });
    expect(page).toMatchObject({ limit: 2, offset: 0, total: expect.any(Number) });
    expect(page.blocks).toHaveLength(2);
    const newest = page.blocks[0];
    expect(newest?.number).toBe(page.total - 1);
    const block = await alice.getBlock(newest?.number ?? -1);
    expect(block).toMatchObject({ ...newest, transactions: expect.any(Array) });
    await alice.verifyBlock(block);
    const genesis = await alice.getBlock(0);
    expect(genesis.parent_hash).toBe(`0x${'0'.repeat(64)}`);
    await alice.verifyBlock(genesis);
    const seen: number[] = [];
    const chain = await alice.verifyChain(0, undefined, { onBlock: (header) => seen.push(header.number) });
    expect(chain).toMatchObject({ from: 0, to: page.total - 1, blocks_verified: page.total, head: { number: page.total - 1, hash: newest?.hash } });
    expect(seen).toEqual(Array.from({ length: page.total }, (_, index) => index));
    const tail = await alice.verifyChain(1, page.total - 1, { concurrency: 1 });
    expect(tail.blocks_verified).toBe(page.total - 1);
    expect((await alice.listBlocks()).limit).toBe(20);
  });

  it('reads statistics with exact texts', async () => {
    const stats = await alice.getStats();
    expect(stats).toMatchObject({ native_price: 1, native_price_text: '1', total_transactions: expect.any(Number), latest_block_number: expect.any(Number) });
    expect(stats.trading_volume_24h_text).toBe(String(stats.trading_volume_24h));
  });

  it('replays a repeated Idempotency-Key and refuses it for another request', async () => {
    const request = { from: 'treasury', to: 'carol', amount: 5, token: 'USDG', type: 'mint' } as const;
    const first = await admin.submitTransaction(request, { idempotencyKey: 'sdk-test-key-1' });
    const again = await admin.submitTransaction(request, { idempotencyKey: 'sdk-test-key-1' });
    expect(again).toEqual({ ...first, replayed: true });
    const error = await rejection(admin.submitTransaction({ ...request, amount: 6 }, { idempotencyKey: 'sdk-test-key-1' }));
    expectApiError(error, IdempotencyConflictError, 422, 'idempotency_key_reused');
  });

  it('submits a batch: per-item results, accepted items confirm, refused ones carry their problem', async () => {
    const items: BatchTransactionRequest[] = [
      { from: 'treasury', to: 'ivy', amount: '7.5', token: 'TAB', type: 'mint' },
      { from: 'treasury', to: 'ivy', amount: 0.000000001, token: 'TAB', type: 'mint' },
      { from: 'treasury', to: 'ivy', amount: 1, token: 'DOGE', type: 'mint' },
      { from: 'treasury', to: 'ivy', amount: 2, token: 'USDG', type: 'mint', metadata: { memo: 'second' }, idempotency_key: 'sdk-batch-key-1' },
    ];
    const batch = await admin.submitBatch(items);
    expect(batch.accepted).toBe(2);
    expect(batch.rejected).toBe(2);
    expect(batch.results.map((result) => [result.index, result.status])).toEqual([[0, 202], [1, 400], [2, 400], [3, 202]]);
    const [minted, too_precise, unsupported, keyed] = batch.results as [BatchItemResult, BatchItemResult, BatchItemResult, BatchItemResult];
    expect(minted).toEqual({ index: 0, status: 202, tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/), timestamp: expect.any(Number), replayed: false, idempotency_key: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(too_precise).toEqual({
      index: 1, status: 400, idempotency_key: expect.stringMatching(/^[0-9a-f-]{36}$/),
      error: { type: 'urn:tabula:problem:amount_too_precise', title: expect.any(String), status: 400, detail: expect.any(String), code: 'amount_too_precise', errors: [{ field: 'amount', message: expect.any(String) }] },
    });
    expect(unsupported.error).toMatchObject({ status: 400, code: 'unsupported_token', type: 'urn:tabula:problem:unsupported_token' });
    expect(keyed).toMatchObject({ index: 3, status: 202, replayed: false, idempotency_key: 'sdk-batch-key-1' });
    expect(new Set(batch.results.map((result) => result.idempotency_key)).size).toBe(4); // one key per item
    expect(items[0]).not.toHaveProperty('idempotency_key'); // the caller's objects are left as they were
    if (minted.error !== undefined || keyed.error !== undefined) throw new Error('expected receipts');
    const confirmed = await admin.waitForTransaction(minted.tx_hash, { timeoutMs: 10_000, intervalMs: 25 });
    expect(confirmed).toMatchObject({ tx_hash: minted.tx_hash, to: 'ivy', amount_text: '7.5', token: 'TAB', status: 'confirmed', timestamp: minted.timestamp });
    await admin.verifyTransaction(confirmed);
    expect((await admin.waitForTransaction(keyed.tx_hash, { intervalMs: 25 })).metadata).toEqual({ memo: 'second' });
    expect(await admin.getBalance('ivy')).toMatchObject({ native_text: '7.5', usdg_text: '2' });
  });

  it('replays a batch item by its idempotency_key, like the header of a single submission, and refuses it for another request', async () => {
    const request = { from: 'treasury', to: 'jack', amount: 4, token: 'USDG', type: 'mint' } as const;
    const first = await admin.submitBatch([{ ...request, idempotency_key: 'sdk-batch-key-2' }]);
    const [stored] = first.results;
    if (stored?.error !== undefined || stored === undefined) throw new Error('expected a receipt');
    const again = await admin.submitBatch([
      { ...request, idempotency_key: 'sdk-batch-key-2' },
      { ...request, amount: 5, idempotency_key: 'sdk-batch-key-2' },
      { ...request, idempotency_key: ' not visible ascii' },
    ]);
    expect(again).toMatchObject({ accepted: 1, rejected: 2 });
    expect(again.results[0]).toEqual({ ...stored, replayed: true });
    expect(again.results[1]).toMatchObject({ index: 1, status: 422, error: { status: 422, code: 'idempotency_key_reused' } });
    expect(again.results[2]).toMatchObject({ index: 2, status: 400, error: { code: 'invalid_idempotency_key' } });
    const single = await admin.submitTransaction(request, { idempotencyKey: 'sdk-batch-key-2' });
    expect(single).toMatchObject({ tx_hash: stored.tx_hash, replayed: true });
  });

  it('refuses an empty batch and one over 1000 transactions before sending anything', async () => {
    expect(BATCH_TRANSACTIONS_MAX).toBe(SERVICE_BATCH_TRANSACTIONS_MAX);
    const sent: string[] = [];
    const counting: typeof fetch = (input, init) => {
      sent.push(String(input));
      return fetch(input, init);
    };
    const client = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY, jwt: await server.token('treasury', { admin: true }), fetch: counting });
    const item = { from: 'treasury', to: 'kim', amount: 1, token: 'TAB', type: 'mint' } as const;
    const too_many = Array.from({ length: BATCH_TRANSACTIONS_MAX + 1 }, () => item);
    await expect(client.submitBatch(too_many)).rejects.toThrow(new RangeError('a batch holds 1 to 1000 transactions, got 1001: split it into several submitBatch calls'));
    await expect(client.submitBatch([])).rejects.toBeInstanceOf(RangeError);
    expect(sent).toEqual([]);
    expect((await client.getBalance('kim')).native_text).toBe('0');
  });

  it('throws BadRequestError with the problem and its field errors', async () => {
    const error = await rejection(alice.submitTransaction({ from: 'alice', to: 'bob', amount: 0.000000001, token: 'TAB', type: 'transfer' }));
    expectApiError(error, BadRequestError, 400, 'amount_too_precise');
    expect(error.problem.errors).toEqual([{ field: 'amount', message: expect.any(String) }]);
    expectApiError(await rejection(alice.listBlocks({ limit: 500 })), BadRequestError, 400, 'invalid_pagination');
    expectApiError(await rejection(alice.getBalance(' ')), BadRequestError, 400, 'invalid_user_id');
    expectApiError(await rejection(alice.submitTransaction({ from: 'alice', to: 'bob', amount: 1, token: 'DOGE', type: 'transfer' })), BadRequestError, 400, 'unsupported_token');
  });

  it('throws UnauthorizedError for a missing or bad token and for a missing API key', async () => {
    const no_token = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY });
    expectApiError(await rejection(no_token.getStats()), UnauthorizedError, 401, 'missing_token');
    const bad_token = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY, jwt: 'not.a.jwt' });
    expectApiError(await rejection(bad_token.getStats()), UnauthorizedError, 401, 'invalid_token');
    const no_key = new TabulaClient({ baseUrl: server.url, jwt: await server.token('alice') });
    expectApiError(await rejection(no_key.getStats()), UnauthorizedError, 401, 'invalid_api_key');
  });

  it('refreshes a token function once after a 401, and only once', async () => {
    const calls: boolean[] = [];
    const refreshing = new TabulaClient({
      baseUrl: server.url, apiKey: API_KEY,
      jwt: async ({ refresh }) => {
        calls.push(refresh);
        return refresh ? server.token('alice') : server.token('alice', { expires_in_s: -120 });
      },
    });
    expect((await refreshing.getBalance('alice')).user_id).toBe('alice');
    expect(calls).toEqual([false, true]);
    const hopeless_calls: boolean[] = [];
    const hopeless = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY, jwt: ({ refresh }) => { hopeless_calls.push(refresh); return 'still.not.valid'; } });
    expectApiError(await rejection(hopeless.getStats()), UnauthorizedError, 401, 'invalid_token');
    expect(hopeless_calls).toEqual([false, true]);
  });

  it('throws ForbiddenError for a mint by a non-admin and a transfer from another account', async () => {
    expectApiError(await rejection(alice.submitTransaction({ from: 'alice', to: 'alice2', amount: 1, token: 'TAB', type: 'mint' })), ForbiddenError, 403, 'admin_required');
    expectApiError(await rejection(alice.submitTransaction({ from: 'bob', to: 'alice', amount: 1, token: 'TAB', type: 'transfer' })), ForbiddenError, 403, 'not_account_owner');
  });

  it('throws NotFoundError for an unknown transaction, proof or block', async () => {
    const unknown = `0x${'ab'.repeat(32)}`;
    expectApiError(await rejection(alice.getTransaction(unknown)), NotFoundError, 404, 'transaction_not_found');
    expectApiError(await rejection(alice.getProof(unknown)), NotFoundError, 404, 'transaction_not_found');
    expectApiError(await rejection(alice.getBlock(1_000_000)), NotFoundError, 404, 'block_not_found');
    await expect(alice.getTransaction('0x1234')).rejects.toBeInstanceOf(RangeError);
  });

  it('throws PayloadTooLargeError for a body over 64 KiB, without retrying it', async () => {
    const error = await rejection(alice.submitTransaction({ from: 'alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer', metadata: { blob: 'x'.repeat(70_000) } }));
    expectApiError(error, PayloadTooLargeError, 413, 'payload_too_large');
  });

  it('throws UnsupportedMediaTypeError when a custom fetch drops the JSON content type', async () => {
    const stripping: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('content-type', 'application/xml');
      return fetch(input, { ...init, headers });
    };
    const client = new TabulaClient({ baseUrl: server.url, apiKey: API_KEY, jwt: await server.token('alice'), fetch: stripping });
    const error = await rejection(client.submitTransaction({ from: 'alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer' }));
    expectApiError(error, UnsupportedMediaTypeError, 415, 'unsupported_media_type');
  });

  it('throws NetworkError when nothing listens, after its bounded retries', async () => {
    const closed = new TabulaClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, jwt: 'x', retry: { attempts: 2, base_delay_ms: 10 } });
    const error = await rejection(closed.getStats());
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toContain('GET /api/stats failed');
  });
});

describe('TabulaClient against a service that seals slowly and limits hard', () => {
  let server: ServiceProcess;
  let admin: TabulaClient;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '3600000', RATE_LIMIT_MAX: '40', RATE_LIMIT_WINDOW_MS: '3600000' } });
    admin = new TabulaClient({ baseUrl: server.url, jwt: await server.token('treasury', { admin: true }) });
  });
  afterAll(async () => { await server?.close(); });

  it('a proof of a pending transaction is NotFoundError transaction_not_sealed; waiting times out with WaitTimeoutError', async () => {
    const receipt = await admin.submitTransaction({ from: 'treasury', to: 'dave', amount: 1, token: 'TAB', type: 'mint' });
    expectApiError(await rejection(admin.getProof(receipt.tx_hash)), NotFoundError, 404, 'transaction_not_sealed');
    const started = Date.now();
    const error = await rejection(admin.waitForTransaction(receipt.tx_hash, { timeoutMs: 300, intervalMs: 50 }));
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect((await admin.getTransaction(receipt.tx_hash)).status).toBe('pending');
  });

  it('throws RateLimitedError at once when Retry-After is longer than the client may wait', async () => {
    const hasty = new TabulaClient({ baseUrl: server.url, jwt: await server.token('hasty'), retry: { max_delay_ms: 1000 } });
    let error: ApiError | null = null;
    // 40 per hour: the 41st request in a row is refused with a Retry-After of about 90 s.
    for (let request = 0; request < 45 && error === null; request += 1) {
      error = await hasty.getStats().then(() => null, (failure: ApiError) => failure);
    }
    expect(error).not.toBeNull();
    expectApiError(error as ApiError, RateLimitedError, 429, 'rate_limited');
    expect((error as ApiError).retry_after_ms).toBeGreaterThan(1000);
  });
});
