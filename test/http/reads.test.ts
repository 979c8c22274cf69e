import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BlockPageSchema } from '../../src/http/schemas.js';
import { ZERO_HASH } from '../../src/domain/shared/hex.js';
import { buildBlock, checkBlock } from '../../src/domain/block.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Clock } from '../../src/service/clock.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

const SUBMIT = '/api/transactions/submit';

class ManualClock implements Clock {
  constructor(public ms: number) {}
  now_ms(): number { return this.ms; }
}

describe('blocks, balances and stats', () => {
  let ledger: TestTabula;
  let clock: ManualClock;
  let admin: Client;

  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 1));
    ledger = await startTestTabula({ NATIVE_PRICE_USD: '2.5' }, { clock });
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
  });
  afterEach(async () => { await ledger.close(); });

  const submit = (body: Record<string, unknown>) => admin.post(SUBMIT, { token: 'TAB', ...body });
  async function sealBlocks(count: number): Promise<void> {
    for (let index = 0; index < count; index += 1) {
      await submit({ from: 'treasury', to: `user${index}`, amount: 1, type: 'mint' });
      await ledger.producer.sealNext();
    }
  }

  it('starts with a genesis block', async () => {
    const genesis = (await admin.get('/api/blocks/0')).json;
    expect(genesis).toMatchObject({
      number: 0, parent_hash: ZERO_HASH, transactions_count: 0, transactions: [],
      transactions_root: '0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    });
    expect(checkBlock(genesis, null)).toEqual({ ok: true });
  });

  it('pages blocks newest first with limit and offset', async () => {
    await sealBlocks(5);
    const page = (await admin.get('/api/blocks')).json;
    expect(page).toMatchObject({ total: 6, limit: 20, offset: 0 });
    expect(page.blocks.map((block: { number: number }) => block.number)).toEqual([5, 4, 3, 2, 1, 0]);
    expect(page.blocks[0]).not.toHaveProperty('transactions');
    expect(Object.keys(page.blocks[0]).sort()).toEqual(['hash', 'native_price', 'number', 'parent_hash', 'timestamp', 'transactions_count', 'transactions_root']);
    // Written from headers serialised once each: byte for byte what the page's response schema gives.
    const raw = await admin.get('/api/blocks?limit=4&offset=1');
    const reference = Fastify();
    reference.get('/', { schema: { response: { 200: BlockPageSchema } } }, async () => JSON.parse(raw.body) as unknown);
    expect(raw.body).toBe((await reference.inject('/')).body);
    await reference.close();
    const second = (await admin.get('/api/blocks?limit=2&offset=2')).json;
    expect(second.blocks.map((block: { number: number }) => block.number)).toEqual([3, 2]);
    expect((await admin.get('/api/blocks?offset=6')).json.blocks).toEqual([]);
    expect((await admin.get('/api/blocks?offset=1000000&limit=100')).json).toMatchObject({ blocks: [], total: 6, limit: 100, offset: 1000000 });
    for (let number = 1; number <= 5; number += 1) {
      const block = (await admin.get(`/api/blocks/${number}`)).json;
      const parent = (await admin.get(`/api/blocks/${number - 1}`)).json;
      expect(checkBlock(block, parent)).toEqual({ ok: true });
    }
  });

  it('moves a page read before along when new blocks are sealed (headers come from memory once read)', async () => {
    await sealBlocks(3);
    const numbers = async (query: string) => ((await admin.get(`/api/blocks${query}`)).json.blocks as Array<{ number: number }>).map((block) => block.number);
    expect(await numbers('?limit=3')).toEqual([3, 2, 1]);
    expect(await numbers('?limit=3')).toEqual([3, 2, 1]);
    await sealBlocks(2);
    const page = (await admin.get('/api/blocks?limit=3')).json;
    expect(page).toMatchObject({ total: 6 });
    expect(page.blocks.map((block: { number: number }) => block.number)).toEqual([5, 4, 3]);
    expect(page.blocks[0]).toEqual(withoutTransactions((await admin.get('/api/blocks/5')).json));
    expect(await numbers('?limit=3&offset=2')).toEqual([3, 2, 1]);
    expect(await numbers('?limit=100')).toEqual([5, 4, 3, 2, 1, 0]);
  });

  it('hands every request for one page the same page object until the next block (its JSON is written once)', async () => {
    await sealBlocks(3);
    const page = await ledger.service.blocks(3, 0);
    expect(await ledger.service.blocks(3, 0)).toBe(page);
    expect(await ledger.service.blocks(3, 1)).not.toBe(page);
    expect(await ledger.service.blocks(2, 0)).not.toBe(page);
    const body = (await admin.get('/api/blocks?limit=3')).body;
    expect((await admin.get('/api/blocks?limit=3')).body).toBe(body);
    await sealBlocks(1);
    const next = await ledger.service.blocks(3, 0);
    expect(next).not.toBe(page);
    expect(next.blocks.map((block) => block.number)).toEqual([4, 3, 2]);
    expect(await ledger.service.blocks(3, 0)).toBe(next);
  });

  it.each([['limit=0'], ['limit=101'], ['limit=-1'], ['limit=1.5'], ['limit=abc'], ['offset=-1'], ['offset=x'], ['offset=1e3'], ['limit=']])(
    'refuses bad pagination %s', async (query) => {
      expectProblem(await admin.get(`/api/blocks?${query}`), 400, 'invalid_pagination');
    },
  );

  it('404 for an unknown block, 400 for a malformed number', async () => {
    expectProblem(await admin.get('/api/blocks/99'), 404, 'block_not_found');
    for (const bad of ['-1', '1.5', 'abc', '1e3', '9999999999999999']) expectProblem(await admin.get(`/api/blocks/${bad}`), 400, 'invalid_block_number');
  });

  it('reports balances from confirmed state, with total_usd at the configured price', async () => {
    await submit({ from: 'treasury', to: 'alice', amount: '1.23456789', type: 'mint' });
    await submit({ from: 'treasury', to: 'alice', amount: 10.5, token: 'USDG', type: 'mint' });
    expect((await admin.get('/api/balance/alice')).json).toEqual({ user_id: 'alice', native: 0, usdg: 0, total_usd: 0 });
    await ledger.producer.drain();
    const balance = await admin.get('/api/balance/alice');
    // 1.23456789 × 2.5 = 3.086419725 → 3.08642 (6 decimals, half away from zero) + 10.5
    expect(balance.body).toBe('{"user_id":"alice","native":1.23456789,"usdg":10.5,"total_usd":13.58642}');
  });

  it("reads an account's balances once per newest block: repeats come from memory until a block is sealed, here or by another instance", async () => {
    await submit({ from: 'treasury', to: 'alice', amount: 3, type: 'mint' });
    await ledger.producer.drain();
    const reads = vi.spyOn(ledger.store, 'pricedBalances');
    const first = await Promise.all([1, 2, 3].map(() => admin.get('/api/balance/alice')));
    expect(first.map((answer) => answer.json.native)).toEqual([3, 3, 3]);
    expect((await admin.get('/api/balance/alice')).json.native).toBe(3);
    expect(reads.mock.calls.length).toBeLessThanOrEqual(3);
    const after_repeats = reads.mock.calls.length;
    expect((await admin.get('/api/balance/alice')).json.native).toBe(3);
    expect(reads).toHaveBeenCalledTimes(after_repeats);
    // A block sealed by this instance's producer.
    await submit({ from: 'treasury', to: 'alice', amount: 2, type: 'mint' });
    await ledger.producer.drain();
    expect((await admin.get('/api/balance/alice')).json.native).toBe(5);
    // A block written straight to the store, as another instance's sealer would: the newest block's number tells.
    const parent = await ledger.store.latestBlock();
    if (parent === null) throw new Error('a block was sealed above');
    const mint = pendingTransaction({
      from: 'treasury', to: 'alice', amount_units: 200_000_000n, token: 'TAB', type: 'mint', metadata: {}, nonce: 'ab'.repeat(16), timestamp: parent.timestamp + 1,
    });
    await ledger.store.appendPending([{ transaction: mint, idempotency: null }]);
    await ledger.store.commitBlock({
      header: buildBlock(parent, [mint.tx_hash], parent.timestamp + 1), totals: parent.totals,
      outcomes: [{ tx_hash: mint.tx_hash, position: 0, status: 'confirmed', error: null }],
      balances: [{ user_id: 'alice', token: 'TAB', units: 700_000_000n }], new_users: [], active_users: [],
    });
    expect((await admin.get('/api/balance/alice')).json.native).toBe(7);
  });

  it('keeps every base unit exact in JSON, beyond what a double holds', async () => {
    await submit({ from: 'treasury', to: 'whale', amount: '92233720368.54775807', type: 'mint' });
    await ledger.producer.drain();
    const body = (await admin.get('/api/balance/whale')).body;
    expect(body).toContain('"native":92233720368.54775807');
    const overflow = (await submit({ from: 'treasury', to: 'whale', amount: '0.00000001', type: 'mint' })).json.tx_hash;
    await ledger.producer.drain();
    expect((await admin.get(`/api/transactions/${overflow}`)).json).toMatchObject({ status: 'failed', error: 'balance_overflow' });
  });

  it('answers unknown users with zero balances and refuses malformed ids', async () => {
    expect((await admin.get('/api/balance/auth0%7C5f7c8ec7c33c6c004bbafe82')).json).toEqual({ user_id: 'auth0|5f7c8ec7c33c6c004bbafe82', native: 0, usdg: 0, total_usd: 0 });
    expect((await admin.get(`/api/balance/${'é'.repeat(128)}`)).status).toBe(200);
    expect((await admin.get('/api/balance/someone@example.com')).status).toBe(200);
    expectProblem(await admin.get('/api/balance/a%20b'), 400, 'invalid_user_id');
    expectProblem(await admin.get(`/api/balance/${'x'.repeat(129)}`), 400, 'invalid_user_id');
  });

  it('computes stats once for concurrent requests within one second and one block', async () => {
    await sealBlocks(2);
    const snapshots = vi.spyOn(ledger.store, 'statsSnapshot');
    const answers = await Promise.all(Array.from({ length: 16 }, () => admin.get('/api/stats')));
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 16 }, () => 200));
    expect(new Set(answers.map((answer) => JSON.stringify(answer.json))).size).toBe(1);
    expect(snapshots).toHaveBeenCalledTimes(1);

    clock.ms += 1000;
    await Promise.all(Array.from({ length: 4 }, () => admin.get('/api/stats')));
    expect(snapshots).toHaveBeenCalledTimes(2);
    await sealBlocks(1);
    expect((await admin.get('/api/stats')).json).toMatchObject({ total_transactions: 3, latest_block_number: 3 });
    expect(snapshots).toHaveBeenCalledTimes(3);
  });

  it('computes stats from counters and a 24 h window', async () => {
    const empty = (await admin.get('/api/stats')).json;
    expect(empty).toEqual({ total_transactions: 0, total_users: 0, native_price: 2.5, trading_volume_24h: 0, active_users_24h: 0, latest_block_number: 0 });

    await submit({ from: 'treasury', to: 'alice', amount: 100, type: 'mint' });
    await submit({ from: 'treasury', to: 'alice', amount: 100, token: 'USDG', type: 'mint' });
    await ledger.producer.drain();
    const alice = clientFor(ledger, await ledger.token('alice'));
    await alice.post(SUBMIT, { from: 'alice', to: 'bob', amount: 10, token: 'TAB', type: 'transfer' });
    await alice.post(SUBMIT, { from: 'alice', to: 'carol', amount: 4, token: 'USDG', type: 'transfer' });
    await alice.post(SUBMIT, { from: 'alice', to: 'dave', amount: 1000, token: 'USDG', type: 'transfer' }); // fails
    await ledger.producer.drain();
    expect((await admin.get('/api/stats')).json).toEqual({
      total_transactions: 5, total_users: 4, native_price: 2.5, trading_volume_24h: 0, active_users_24h: 3, latest_block_number: 2,
    });

    clock.ms += 25 * 3600 * 1000;
    await alice.post(SUBMIT, { from: 'alice', to: 'erin', amount: 1, token: 'USDG', type: 'transfer' });
    await ledger.producer.drain();
    expect((await admin.get('/api/stats')).json).toEqual({
      total_transactions: 6, total_users: 5, native_price: 2.5, trading_volume_24h: 0, active_users_24h: 2, latest_block_number: 3,
    });
  });
});

function withoutTransactions(block: Record<string, unknown>): Record<string, unknown> {
  const { transactions: _transactions, ...header } = block;
  return header;
}
