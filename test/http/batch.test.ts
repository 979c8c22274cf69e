import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

const BATCH = '/api/transactions/batch';
const transfer = (to: string, amount: number | string = 1) => ({ from: 'alice', to, amount, token: 'TAB', type: 'transfer' });

describe('POST /api/transactions/batch', () => {
  let ledger: TestTabula;
  let alice: Client;

  beforeEach(async () => {
    // Batches of up to 1000 transfers from an unfunded sender: all within the failure budget.
    ledger = await startTestTabula({ FAILURE_BUDGET_PER_HOUR: '100000' });
    alice = clientFor(ledger, await ledger.token('alice'));
  });
  afterEach(async () => { await ledger.close(); });

  it('answers each item on its own: valid ones 202 with a hash, invalid ones their 4xx problem; stores only the valid', async () => {
    const call = await alice.post(BATCH, {
      transactions: [
        transfer('bob'),
        transfer('carol', 0.000000001),
        { ...transfer('dave'), fee: 1 },
        { from: 'bob', to: 'alice', amount: 1, token: 'TAB', type: 'transfer' },
        { ...transfer('erin', '2.5'), metadata: { memo: 'x' } },
        'not an object',
        { ...transfer('frank'), type: 'mint' },
      ],
    });
    expect(call.status).toBe(200);
    expect(call.json.accepted).toBe(2);
    expect(call.json.rejected).toBe(5);
    const results = call.json.results;
    expect(results.map((result: { index: number }) => result.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(results.map((result: { status: number }) => result.status)).toEqual([202, 400, 400, 403, 202, 400, 403]);
    expect(results[0]).toEqual({ index: 0, status: 202, tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/), timestamp: expect.any(Number) });
    expect(results[1].error).toMatchObject({ status: 400, code: 'amount_too_precise', type: 'urn:tabula:problem:amount_too_precise', title: 'Bad Request' });
    expect(results[2].error).toMatchObject({ code: 'validation_failed', errors: [expect.objectContaining({ field: 'fee' })] });
    expect(results[3].error).toMatchObject({ status: 403, code: 'not_account_owner' });
    expect(results[5].error).toMatchObject({ code: 'validation_failed' });
    expect(results[6].error).toMatchObject({ code: 'admin_required' });
    expect(await ledger.store.pendingCount()).toBe(2);
    // Durable before the answer, in request order: the store already holds both, pending.
    const pending = await ledger.store.pendingTransactions(10);
    expect(pending.map((tx) => tx.tx_hash)).toEqual([results[0].tx_hash, results[4].tx_hash]);
    expect(pending[1]).toMatchObject({ to: 'erin', amount_units: 250_000_000n, metadata: { memo: 'x' } });
  });

  it('seals batch items like single submissions', async () => {
    const admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
    const call = await admin.post(BATCH, { transactions: [
      { from: 'treasury', to: 'alice', amount: 10, token: 'TAB', type: 'mint' },
      transfer('bob', 4),
      transfer('bob', 7),
    ] });
    expect(call.json.accepted).toBe(3);
    await ledger.producer.drain();
    const statuses = await Promise.all(call.json.results.map(async (result: { tx_hash: string }) => (await alice.get(`/api/transactions/${result.tx_hash}`)).json));
    expect(statuses.map((tx) => tx.status)).toEqual(['confirmed', 'confirmed', 'failed']);
    expect((await alice.get('/api/balance/bob')).json).toMatchObject({ native: 4 });
  });

  it('writes all stored items of a batch in one commit', async () => {
    const commits: number[] = [];
    const append = ledger.store.appendPending.bind(ledger.store);
    ledger.store.appendPending = async (batch) => {
      commits.push(batch.length);
      return append(batch);
    };
    const call = await alice.post(BATCH, { transactions: Array.from({ length: 1000 }, (_, index) => transfer(`r${index}`)) });
    expect(call.json.accepted).toBe(1000);
    expect(commits).toEqual([1000]);
    expect(await ledger.store.pendingCount()).toBe(1000);
  });

  it('refuses the whole request, storing nothing, when the envelope is wrong', async () => {
    expectProblem(await alice.post(BATCH, { transactions: [] }), 400, 'validation_failed');
    expectProblem(await alice.post(BATCH, { transactions: Array.from({ length: 1001 }, () => transfer('bob')) }), 400, 'validation_failed');
    expectProblem(await alice.post(BATCH, [transfer('bob')]), 400, 'validation_failed');
    expectProblem(await alice.post(BATCH, { transactions: [transfer('bob')], extra: true }), 400, 'validation_failed');
    expect(await ledger.store.pendingCount()).toBe(0);
  });

  // Found by the edge fuzz (edge-fuzz.test.ts): one item's metadata holding 1e400 (Infinity once parsed) failed the whole batch with a 500.
  it('regression: refuses alone an item whose metadata holds a number beyond a double, storing the others', async () => {
    const text = `{"transactions":[${JSON.stringify(transfer('bob'))},{"from":"alice","to":"carol","amount":1,"token":"TAB","type":"transfer","metadata":{"x":[1e400]}}]}`;
    const call = await alice.post(BATCH, text, undefined, { 'content-type': 'application/json' });
    expect(call.status).toBe(200);
    expect(call.json.results.map((result: { status: number }) => result.status)).toEqual([202, 400]);
    expect(call.json.results[1].error).toMatchObject({ code: 'invalid_metadata', errors: [{ field: 'metadata' }] });
    expect(await ledger.store.pendingCount()).toBe(1);
  });

  it('takes bodies up to 1 MiB and refuses larger ones with 413', async () => {
    const padded = (index: number) => ({ ...transfer(`r${index}`), metadata: { pad: 'x'.repeat(1000) } });
    const within = await alice.post(BATCH, { transactions: Array.from({ length: 900 }, (_, index) => padded(index)) });
    expect(within.json.accepted).toBe(900);
    const beyond = await alice.post(BATCH, { transactions: Array.from({ length: 1000 }, (_, index) => padded(index)) });
    expectProblem(beyond, 413, 'payload_too_large');
    expect(await ledger.store.pendingCount()).toBe(900);
  });

  it('replays items by their idempotency keys, within a batch and across batches', async () => {
    const first = await alice.post(BATCH, { transactions: [
      { ...transfer('bob'), idempotency_key: 'k1' },
      { ...transfer('bob', '1.0'), idempotency_key: 'k1' },
      { ...transfer('bob', 2), idempotency_key: 'k1' },
    ] });
    const [original, repeat, conflicting] = first.json.results;
    expect(original).toMatchObject({ status: 202 });
    expect(original.replayed).toBeUndefined();
    expect(repeat).toMatchObject({ status: 202, tx_hash: original.tx_hash, timestamp: original.timestamp, replayed: true });
    expect(conflicting).toMatchObject({ status: 422, error: { code: 'idempotency_key_reused' } });
    const retry = await alice.post(BATCH, { transactions: [{ ...transfer('bob'), idempotency_key: 'k1' }, { ...transfer('carol'), idempotency_key: 'k2' }] });
    expect(retry.json.results[0]).toMatchObject({ status: 202, tx_hash: original.tx_hash, replayed: true });
    expect(retry.json.results[1]).toMatchObject({ status: 202 });
    // The single-submission header finds a key stored by a batch item.
    const single = await alice.post('/api/transactions/submit', transfer('bob'), undefined, { 'idempotency-key': 'k1' });
    expect(single.json.tx_hash).toBe(original.tx_hash);
    expect(await ledger.store.pendingCount()).toBe(2);
    expect(first.json.results[0].status).toBe(202);
    const bad_key = (await alice.post(BATCH, { transactions: [{ ...transfer('bob'), idempotency_key: ' bad key' }] })).json.results[0].error;
    expect(bad_key).toMatchObject({ code: 'invalid_idempotency_key', errors: [{ field: 'idempotency_key' }] });
  });

  it('counts every transaction of a batch against the rate limit', async () => {
    await ledger.close();
    ledger = await startTestTabula({ RATE_LIMIT_MAX: '10' });
    alice = clientFor(ledger, await ledger.token('alice'));
    const first = await alice.post(BATCH, { transactions: Array.from({ length: 8 }, (_, index) => transfer(`r${index}`)) });
    expect(first.json.accepted).toBe(8);
    expect(first.headers.ratelimit).toMatch(/remaining=2/);
    const refused = await alice.post(BATCH, { transactions: Array.from({ length: 3 }, (_, index) => transfer(`s${index}`)) });
    expectProblem(refused, 429, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // More than the whole limit could never fit: a 400 that says so, not a 429 to wait out.
    const oversized = await clientFor(ledger, await ledger.token('bob')).post(BATCH, { transactions: Array.from({ length: 11 }, (_, index) => ({ ...transfer(`t${index}`), from: 'bob' })) });
    expectProblem(oversized, 400, 'validation_failed');
    expect(oversized.json.errors).toEqual([{ field: 'transactions', message: expect.stringMatching(/RATE_LIMIT_MAX/) }]);
    expect(await ledger.store.pendingCount()).toBe(8);
  });

  it('does not charge a retried batch again for the items it already stored (the SDK retries lost answers)', async () => {
    await ledger.close();
    ledger = await startTestTabula({ RATE_LIMIT_MAX: '10' });
    alice = clientFor(ledger, await ledger.token('alice'));
    const keyed = Array.from({ length: 8 }, (_, index) => ({ ...transfer(`r${index}`), idempotency_key: `retry-${index}` }));
    const first = await alice.post(BATCH, { transactions: keyed });
    expect(first.json.accepted).toBe(8);
    // The answer was lost; the same batch again would cost 8 with 2 left, but all 8 keys are stored.
    const retry = await alice.post(BATCH, { transactions: keyed });
    expect(retry.status).toBe(200);
    expect(retry.json.results.map((result: { replayed?: boolean }) => result.replayed)).toEqual(Array(8).fill(true));
    expect(retry.json.results.map((result: { tx_hash: string }) => result.tx_hash)).toEqual(first.json.results.map((result: { tx_hash: string }) => result.tx_hash));
    // New items are still charged: the retry's request took one of the two left, this request takes the
    // last, and of its three items only the stored key is free, so the batch does not fit.
    const fresh = await alice.post(BATCH, { transactions: [keyed[0], { ...transfer('s1'), idempotency_key: 'new-1' }, transfer('s2')] });
    expectProblem(fresh, 429, 'rate_limited');
    expect(await ledger.store.pendingCount()).toBe(8);
  });

  it('refuses a batch that could not fit even if every keyed item were a repeat without looking up a key', async () => {
    await ledger.close();
    ledger = await startTestTabula({ RATE_LIMIT_MAX: '10' });
    alice = clientFor(ledger, await ledger.token('alice'));
    const store = ledger.store;
    let lookups = 0;
    const count = store.countIdempotencyKeys.bind(store);
    const find = store.findIdempotency.bind(store);
    store.countIdempotencyKeys = async (caller, keys) => { lookups += 1; return count(caller, keys); };
    store.findIdempotency = async (caller, key) => { lookups += 1; return find(caller, key); };
    expect((await alice.post(BATCH, { transactions: Array.from({ length: 9 }, (_, index) => transfer(`r${index}`)) })).json.accepted).toBe(9);
    // One request left: 10 items, 2 keyed, would cost at least 8 even if both keys were stored.
    const items = Array.from({ length: 10 }, (_, index) => ({ ...transfer(`s${index}`), ...(index < 2 ? { idempotency_key: `k-${index}` } : {}) }));
    for (let attempt = 0; attempt < 5; attempt += 1) expectProblem(await alice.post(BATCH, { transactions: items }), 429, 'rate_limited');
    expect(lookups).toBe(0);
    expect(await ledger.store.pendingCount()).toBe(9);
  });

  it('reports at most ten schema errors for an item, however many it has', async () => {
    const item = Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`extra_${index}`, index]));
    const call = await alice.post(BATCH, { transactions: [item] });
    expect(call.status).toBe(200);
    expect(call.json.results[0].error).toMatchObject({ code: 'validation_failed' });
    expect(call.json.results[0].error.errors).toHaveLength(10);
  });

  it('fails the whole batch with a bare 500 when the store cannot commit it', async () => {
    ledger.store.appendPending = async () => { throw new Error('disk full'); };
    const call = await ledger.app.inject({ method: 'POST', url: BATCH, headers: { authorization: `Bearer ${await ledger.token('alice')}` }, payload: { transactions: [transfer('bob')] } });
    expect(call.statusCode).toBe(500);
    expect(call.json()).toMatchObject({ code: 'internal_error', detail: 'an unexpected error occurred' });
  });
});
