/**
 * The SDK's market methods against the real service process: `quote`, `swap` (a slippage tolerance
 * turned into an exact `min_receive`, confirmed; the same tolerance failing with `slippage_exceeded`
 * once another swap moved the price between the quote and the sealing) and `priceHistory`; and the
 * slippage arithmetic itself, exact in base units.
 */
import { ConflictError, TabulaClient, minReceiveFor, minReceiveUnits, parseSlippage, type CandleInterval } from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';

const WAIT = { timeoutMs: 10_000, intervalMs: 25 };

describe('slippage tolerance → min_receive', () => {
  it('reads fractions and percentages exactly', () => {
    expect(parseSlippage(0.005)).toEqual({ numerator: 5n, denominator: 1000n });
    expect(parseSlippage('0.5%')).toEqual({ numerator: 5n, denominator: 1000n });
    expect(parseSlippage(' 0.005 ')).toEqual({ numerator: 5n, denominator: 1000n });
    expect(parseSlippage(0)).toEqual({ numerator: 0n, denominator: 1n });
    expect(parseSlippage(1e-7)).toEqual({ numerator: 1n, denominator: 10_000_000n });
    expect(parseSlippage('99.99%')).toEqual({ numerator: 9999n, denominator: 10_000n });
  });

  it('refuses a tolerance outside [0, 100 %) or not a decimal', () => {
    for (const bad of [1, '100%', '1', -0.01, '-1%', 'abc', '0.5%%', '1e-3', Number.NaN, Number.POSITIVE_INFINITY, '', '%']) {
      expect(() => parseSlippage(bad), String(bad)).toThrow(RangeError);
    }
    expect(() => parseSlippage('0.0000000000000000001')).toThrow(/decimal places/);
  });

  it('floors amount_out × (1 − slippage) in base units, with bigint only', () => {
    expect(minReceiveUnits(9_871_580n, '0.5%')).toBe(9_822_222n); // 9822222.1 floored
    expect(minReceiveUnits(9_871_580n, 0)).toBe(9_871_580n);
    // 2^63 − 1 base units: a double would round this; bigint does not
    expect(minReceiveUnits(9_223_372_036_854_775_807n, '1%')).toBe(9_131_138_316_486_228_048n);
    expect(minReceiveFor('9.87158', 'USDG', '0.5%')).toBe('9.822222');
    expect(minReceiveFor('92233720368.54775807', 'TAB', 0.01)).toBe('91311383164.86228048');
    expect(() => minReceiveFor('0.000001', 'USDG', '50%')).toThrow(/no minimum/);
  });
});

describe('TabulaClient market methods against the service', () => {
  let server: ServiceProcess;
  let admin: TabulaClient;
  let alice: TabulaClient;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    admin = new TabulaClient({ baseUrl: server.url, jwt: await server.token('treasury', { admin: true }) });
    alice = new TabulaClient({ baseUrl: server.url, jwt: await server.token('alice') });
  });
  afterAll(async () => { await server?.close(); });

  it('quote is a ConflictError (409 market_unavailable) while the pool is empty', async () => {
    const error = await alice.quote('TAB', 10).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ status: 409, code: 'market_unavailable' });
  });

  it('quotes with exact text beside every number', async () => {
    const mints = [['@pool', 'TAB', '1000'], ['@pool', 'USDG', '1000'], ['alice', 'TAB', '100'], ['bob', 'TAB', '500']] as const;
    for (const [to, token, amount] of mints) {
      const receipt = await admin.submitTransaction({ from: 'treasury', to, amount, token, type: 'mint' });
      expect((await admin.waitForTransaction(receipt.tx_hash, WAIT)).status).toBe('confirmed');
    }
    const quote = await alice.quote('tab', '10');
    // floor(1000e6 × 10e8 × 9970 ÷ (1000e8 × 10000 + 10e8 × 9970)) base units of USDG
    expect(quote).toEqual({
      amount_out: 9.87158, amount_out_text: '9.87158', token_out: 'USDG', price: 1, price_text: '1',
      price_after: 0.980325168316, price_after_text: '0.980325168316', fee: 0.03, fee_text: '0.03',
    });
    expect((await alice.quote('USDG', 1e-6)).token_out).toBe('TAB');
  });

  it('swaps with a slippage tolerance: min_receive from the quote, confirmed, hash verified', async () => {
    const receipt = await alice.swap({ from: 'alice', amount: '10', token: 'TAB', slippage: '0.5%' });
    expect(receipt).toMatchObject({ status: 'pending', replayed: false, min_receive: '9.822222', quote: { amount_out_text: '9.87158', token_out: 'USDG' } });
    const swap = await alice.waitForTransaction(receipt.tx_hash, WAIT);
    expect(swap).toMatchObject({
      type: 'swap', status: 'confirmed', from: 'alice', to: 'alice', amount_text: '10', token: 'TAB',
      min_receive: 9.822222, min_receive_text: '9.822222', amount_out: 9.87158, amount_out_text: '9.87158', token_out: 'USDG', error: null,
    });
    await alice.verifyTransaction(swap);
    expect((await alice.getBalance('alice')).usdg_text).toBe('9.87158');
  });

  it('fails a swap with slippage_exceeded when the price moved past the tolerance between quote and sealing', async () => {
    // bob's swap is sealed after alice's quote is taken and before her swap is submitted
    const bob = new TabulaClient({ baseUrl: server.url, jwt: await server.token('bob') });
    let moved = false;
    const moving: typeof fetch = async (input, init) => {
      if (!moved && init?.method === 'POST') {
        moved = true;
        const { tx_hash } = await bob.swap({ from: 'bob', amount: '200', token: 'TAB' });
        expect((await bob.waitForTransaction(tx_hash, WAIT)).status).toBe('confirmed');
      }
      return fetch(input, init);
    };
    const trader = new TabulaClient({ baseUrl: server.url, jwt: await server.token('alice'), fetch: moving });
    const receipt = await trader.swap({ from: 'alice', to: 'carol', amount: 5, token: 'TAB', slippage: 0.0001 });
    expect(moved).toBe(true);
    const failed = await alice.waitForTransaction(receipt.tx_hash, WAIT);
    expect(failed).toMatchObject({ type: 'swap', status: 'failed', error: 'slippage_exceeded', to: 'carol', min_receive_text: receipt.min_receive, amount_out: null, token_out: 'USDG' });
    await alice.verifyTransaction(failed);
    // the same tolerance against a fresh quote goes through
    const retried = await alice.swap({ from: 'alice', to: 'carol', amount: 5, token: 'TAB', slippage: 0.0001 });
    expect((await alice.waitForTransaction(retried.tx_hash, WAIT)).status).toBe('confirmed');
  });

  it('swaps with an explicit minReceive or none, and refuses a bad tolerance before sending', async () => {
    const bounded = await alice.swap({ from: 'alice', amount: '1', token: 'TAB', minReceive: '1000' });
    expect(bounded).toMatchObject({ quote: null, min_receive: '1000' });
    expect(await alice.waitForTransaction(bounded.tx_hash, WAIT)).toMatchObject({ status: 'failed', error: 'slippage_exceeded', min_receive_text: '1000' });
    const unbounded = await alice.swap({ from: 'alice', amount: '1', token: 'TAB' }, { idempotencyKey: 'market-swap-unbounded' });
    expect(unbounded).toMatchObject({ quote: null, min_receive: null, idempotency_key: 'market-swap-unbounded' });
    expect(await alice.waitForTransaction(unbounded.tx_hash, WAIT)).toMatchObject({ status: 'confirmed', min_receive: null });
    await expect(alice.swap({ from: 'alice', amount: '1', token: 'TAB', slippage: '100%' })).rejects.toThrow(RangeError);
    await expect(alice.swap({ from: 'alice', amount: '1', token: 'TAB', slippage: '1%', minReceive: '1' })).rejects.toThrow(/not both/);
  });

  it('reads the price history: candles oldest first, exact, closing at the current price', async () => {
    const history = await alice.priceHistory({ interval: '1m', limit: 10 });
    expect(history.interval).toBe('1m');
    expect(history.candles.length).toBeGreaterThan(0);
    const starts = history.candles.map((candle) => candle.start);
    expect([...starts].sort((a, b) => a - b)).toEqual(starts);
    const last = history.candles.at(-1);
    const stats = await alice.getStats();
    expect(last?.close_text).toBe(stats.native_price_text);
    expect(Number(last?.close_text)).toBe(last?.close);
    expect(history.candles.reduce((sum, candle) => sum + Number(candle.volume_usd_text), 0)).toBeGreaterThan(0);
    expect(history.candles[0]).toMatchObject({ open_text: expect.any(String), high_text: expect.any(String), low_text: expect.any(String), volume_usd_text: expect.any(String) });
    expect((await alice.priceHistory()).interval).toBe('1h');
    await expect(alice.priceHistory({ limit: 0 })).rejects.toThrow(RangeError);
    await expect(alice.priceHistory({ interval: '5m' as CandleInterval })).rejects.toThrow(RangeError);
  });
});
