/** The market over HTTP: the @ rule, a swap end to end, its record, the price, quotes, candles and their errors. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkBlock } from '../../src/domain/block.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

const SUBMIT = '/api/transactions/submit';

describe('the market', () => {
  let ledger: TestTabula;
  let admin: Client;
  let alice: Client;

  beforeEach(async () => {
    ledger = await startTestTabula({ NATIVE_PRICE_USD: '2.5' });
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
    alice = clientFor(ledger, await ledger.token('alice'));
  });
  afterEach(async () => { await ledger.close(); });

  async function provideLiquidity(): Promise<void> {
    for (const [to, token, amount] of [['@pool', 'TAB', '1000'], ['@pool', 'USDG', '2000'], ['alice', 'TAB', '100']] as const) {
      expect((await admin.post(SUBMIT, { from: 'treasury', to, amount, token, type: 'mint' })).status).toBe(202);
    }
    await ledger.producer.drain();
  }

  it('keeps system accounts to admins, and no token acts as one', async () => {
    expectProblem(await alice.post(SUBMIT, { from: 'alice', to: '@pool', amount: 1, token: 'TAB', type: 'transfer' }), 403, 'system_account');
    const pool = clientFor(ledger, await ledger.token('@pool'));
    expectProblem(await pool.post(SUBMIT, { from: '@pool', to: 'alice', amount: 1, token: 'TAB', type: 'transfer' }), 403, 'system_account');
    expectProblem(await alice.post(SUBMIT, { from: 'alice', to: '@pool', amount: 1, token: 'TAB', type: 'swap' }), 400, 'invalid_swap_account');
    expectProblem(await alice.post(SUBMIT, { from: 'bob', to: 'alice', amount: 1, token: 'TAB', type: 'swap' }), 403, 'not_account_owner');
    expectProblem(await alice.post(SUBMIT, { from: 'alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer', min_receive: 1 }), 400, 'validation_failed');
    expectProblem(await alice.post(SUBMIT, { from: 'alice', to: 'alice', amount: 1, token: 'TAB', type: 'swap', min_receive: '0.0000001' }), 400, 'amount_too_precise');
    expect(await ledger.store.pendingCount()).toBe(0);
  });

  it('seals a swap at the pool price, records what it paid, and moves the price, the stats and the candles', async () => {
    expect((await admin.get('/api/stats')).json.native_price).toBe(2.5);
    expectProblem(await alice.get('/api/price/quote?token=TAB&amount=10'), 409, 'market_unavailable');
    await provideLiquidity();
    const stats_before = (await admin.get('/api/stats')).json;
    expect(stats_before).toMatchObject({ native_price: 2, trading_volume_24h: 0, total_users: 2 });

    const quote = (await alice.get('/api/price/quote?token=TAB&amount=10')).json;
    // floor(2000e6 × 10e8 × 9970 ÷ (1000e8 × 10000 + 10e8 × 9970)) base units of USDG
    expect(quote).toEqual({ amount_out: 19.74316, token_out: 'USDG', price: 2, price_after: 1.960650336633, fee: 0.03 });

    const refused = await alice.post(SUBMIT, { from: 'alice', to: 'alice', amount: '10', token: 'TAB', type: 'swap', min_receive: '19.8' });
    const swap = await alice.post(SUBMIT, { from: 'alice', to: 'alice', amount: '10', token: 'TAB', type: 'swap', min_receive: '19.7' });
    await ledger.producer.drain();
    expect((await alice.get(`/api/transactions/${refused.json.tx_hash}`)).json).toMatchObject({ status: 'failed', error: 'slippage_exceeded', amount_out: null, token_out: 'USDG', min_receive: 19.8 });
    const record = (await alice.get(`/api/transactions/${swap.json.tx_hash}`)).json;
    expect(record).toMatchObject({ type: 'swap', status: 'confirmed', amount: 10, min_receive: 19.7, amount_out: 19.74316, token_out: 'USDG' });

    expect((await alice.get('/api/balance/alice')).json).toMatchObject({ native: 90, usdg: 19.74316 });
    const block = (await alice.get(`/api/blocks/${record.block_number}`)).json;
    expect(block.native_price).toBe('1.960650336633');
    expect(checkBlock(block, (await alice.get(`/api/blocks/${record.block_number - 1}`)).json)).toEqual({ ok: true });
    expect((await admin.get('/api/stats')).json).toMatchObject({ native_price: 1.960650336633, trading_volume_24h: 19.74316 });

    const history = (await alice.get('/api/price/history?interval=1m&limit=10')).json;
    expect(history.interval).toBe('1m');
    expect(history.candles.at(-1)).toMatchObject({ close: 1.960650336633, volume_usd: 19.74316 });
    expect(history.candles[0].open).toBe(2.5);
  });

  it('states the pool as of the newest block: account, fee, reserves and price, exact', async () => {
    const empty = await alice.get('/api/market');
    expect(empty.status).toBe(200);
    expect(empty.json).toMatchObject({ pool: '@pool', fee_bps: 30, native_price: 2.5, reserves: { native: 0, usdg: 0 } });
    await provideLiquidity();
    const swap = await alice.post(SUBMIT, { from: 'alice', to: 'alice', amount: '10', token: 'TAB', type: 'swap' });
    await ledger.producer.drain();
    const record = (await alice.get(`/api/transactions/${swap.json.tx_hash}`)).json;
    const market = await alice.get('/api/market');
    expect(market.json).toEqual({
      pool: '@pool', fee_bps: 30, native_price: 1.960650336633, reserves: { native: 1010, usdg: 1980.25684 }, block_number: record.block_number,
    });
    // the exact text, as the block carries it
    expect(market.body).toContain('"native_price":1.960650336633');
    expect((await alice.get(`/api/blocks/${record.block_number}`)).json.native_price).toBe('1.960650336633');
    expectProblem(await alice.get('/api/market', null), 401, 'missing_token');
  });

  it('refuses a bad interval or limit with its own code', async () => {
    expectProblem(await alice.get('/api/price/history?interval=5m'), 400, 'invalid_price_interval');
    expectProblem(await alice.get('/api/price/history?limit=0'), 400, 'invalid_pagination');
    expectProblem(await alice.get('/api/price/quote?token=DOGE&amount=1'), 400, 'unsupported_token');
  });
});
