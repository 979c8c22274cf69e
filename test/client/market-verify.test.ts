/**
 * `verifyMarket` against the real service process: the pool replayed from the chain verifies an
 * honest server, and a lying one is caught by the replay itself — a swap record whose amount_out was
 * rewritten (outcomes are not hashed), and a block whose native_price was changed with its hash
 * recomputed (so the block still verifies by itself). Then the pure replay's failure rules.
 */
import { MarketMismatchError, MarketReplay, TabulaClient, poolAmountOut, tokenUnits, type ReplayTransaction, type Transaction } from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockHash } from '../../src/domain/hashing.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';

const WAIT = { timeoutMs: 10_000, intervalMs: 25 };

/** A fetch that hands each answer's text to `rewrite` (by URL) before the client reads it. */
function rewriting(rewrite: (url: string, text: string) => string): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const text = rewrite(url, await response.text());
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    headers.delete('content-encoding');
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  };
}

describe('verifyMarket against the service', () => {
  let server: ServiceProcess;
  let admin: TabulaClient;
  let alice: TabulaClient;
  let admin_jwt: string;
  let swap: Transaction;

  async function settle(receipt: { tx_hash: string }): Promise<Transaction> {
    return admin.waitForTransaction(receipt.tx_hash, WAIT);
  }

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    admin_jwt = await server.token('treasury', { admin: true });
    admin = new TabulaClient({ baseUrl: server.url, jwt: admin_jwt });
    alice = new TabulaClient({ baseUrl: server.url, jwt: await server.token('alice') });
    await settle(await admin.submitTransaction({ from: 'treasury', to: 'alice', amount: '100', token: 'TAB', type: 'mint' }));
    expect(await settle(await alice.swap({ from: 'alice', amount: '1', token: 'TAB' }))).toMatchObject({ status: 'failed', error: 'pool_empty' });
    for (const [token, amount] of [['TAB', '1000'], ['USDG', '2000']] as const) {
      await settle(await admin.submitTransaction({ from: 'treasury', to: '@pool', amount, token, type: 'mint' }));
    }
    swap = await settle(await alice.swap({ from: 'alice', amount: '10', token: 'TAB' }));
    expect(swap).toMatchObject({ status: 'confirmed', amount_out_text: '19.74316' });
    expect(await settle(await alice.swap({ from: 'alice', amount: '1', token: 'TAB', minReceive: '1000' }))).toMatchObject({ status: 'failed', error: 'slippage_exceeded' });
    expect(await settle(await alice.swap({ from: 'alice', amount: '0.00000001', token: 'TAB' }))).toMatchObject({ status: 'failed', error: 'amount_out_zero' });
    expect(await settle(await alice.swap({ from: 'alice', amount: '5', token: 'USDG' }))).toMatchObject({ status: 'confirmed' });
    await settle(await admin.submitTransaction({ from: '@pool', to: 'treasury', amount: '100', token: 'USDG', type: 'transfer' }));
    await settle(await admin.submitTransaction({ from: '@pool', to: '@pool', amount: '1', token: 'TAB', type: 'burn' }));
  }, 60_000);
  afterAll(async () => { await server?.close(); });

  it('states the market with exact text, and the replay of an honest chain ends where it says', async () => {
    const market = await alice.getMarket();
    expect(market).toMatchObject({ pool: '@pool', fee_bps: 30, reserves: { native_text: expect.any(String), usdg_text: expect.any(String) } });
    const verified = await alice.verifyMarket({ concurrency: 3 });
    expect(verified).toMatchObject({ to: market.block_number, fee_bps: 30, blocks_checked: market.block_number + 1, swaps_checked: 5, price_text: market.native_price_text });
    expect(verified.prices_checked).toBeGreaterThan(0);
    expect(verified.reserves).toEqual({
      native_units: tokenUnits(market.reserves.native_text, 'TAB'), usdg_units: tokenUnits(market.reserves.usdg_text, 'USDG'),
      native_text: market.reserves.native_text, usdg_text: market.reserves.usdg_text,
    });
    // an earlier block: no comparison with the newest reserves
    const partial = await alice.verifyMarket({ toBlock: swap.block_number as number, concurrency: 1 });
    expect(partial).toMatchObject({ to: swap.block_number, swaps_checked: 2, reserves: { native_text: '1010', usdg_text: '1980.25684' } });
  });

  it('catches a swap record whose amount_out was rewritten', async () => {
    const liar = new TabulaClient({
      baseUrl: server.url, jwt: admin_jwt,
      fetch: rewriting((url, text) => (url.endsWith(`/api/transactions/${swap.tx_hash}`) ? text.replace('"amount_out":19.74316', '"amount_out":19.74317') : text)),
    });
    const error = await liar.verifyMarket().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MarketMismatchError);
    expect(error).toMatchObject({ code: 'amount_out_mismatch', block_number: swap.block_number, tx_hash: swap.tx_hash, expected: '19.74316', actual: '19.74317' });
  });

  it('catches a block whose native_price was changed with its hash recomputed (the block verifies by itself)', async () => {
    const number = swap.block_number as number;
    const liar = new TabulaClient({
      baseUrl: server.url, jwt: admin_jwt,
      fetch: rewriting((url, text) => {
        if (!url.endsWith(`/api/blocks/${number}`)) return text;
        const block = JSON.parse(text) as { number: number; parent_hash: string; timestamp: number; transactions_root: string; native_price: string; hash: string };
        block.native_price = '1.960650336634';
        block.hash = blockHash(block);
        return JSON.stringify(block);
      }),
    });
    const forged = await liar.getBlock(number);
    expect(forged.native_price).toBe('1.960650336634');
    await liar.verifyBlock(forged); // its own hash and root hold
    const error = await liar.verifyMarket().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MarketMismatchError);
    expect(error).toMatchObject({ code: 'price_mismatch', block_number: number, tx_hash: null, expected: '1.960650336633', actual: '1.960650336634' });
  });

  it('catches reserves stated by GET /api/market that the chain does not give', async () => {
    const liar = new TabulaClient({
      baseUrl: server.url, jwt: admin_jwt,
      fetch: rewriting((url, text) => (url.endsWith('/api/market') ? text.replace(/"native":[0-9.]+/, '"native":1') : text)),
    });
    await expect(liar.verifyMarket()).rejects.toMatchObject({ name: 'MarketMismatchError', code: 'reserves_mismatch' });
  });
});

describe('MarketReplay (pure)', () => {
  const base = { from: 'alice', to: 'alice', status: 'confirmed', error: null, min_receive: null, amount_out: null, token_out: null } as const;
  let n = 0;
  const tx = (fields: Partial<ReplayTransaction>): ReplayTransaction => ({ ...base, tx_hash: `0x${String(n += 1)}`, type: 'mint', token: 'TAB', amount_text: '1', ...fields });
  const funded = (): MarketReplay => {
    const replay = new MarketReplay(30);
    replay.transaction(tx({ to: '@pool', token: 'TAB', amount_text: '1000' }), 1);
    replay.transaction(tx({ to: '@pool', token: 'USDG', amount_text: '2000' }), 1);
    replay.endBlock({ number: 1, native_price: '2' });
    return replay;
  };

  it('applies the formula in base units', () => {
    expect(poolAmountOut(1000_00000000n, 2000_000000n, 10_00000000n, 30)).toBe(19_743160n);
    const replay = funded();
    replay.transaction(tx({ type: 'swap', amount_text: '10', token_out: 'USDG', amount_out: 19.74316, amount_out_text: '19.74316' }), 2);
    replay.endBlock({ number: 2, native_price: '1.960650336633' });
    expect(replay.reserves).toEqual({ native_units: 1010_00000000n, usdg_units: 1980_256840n });
    expect(replay).toMatchObject({ swaps_checked: 1, prices_checked: 2, blocks_checked: 2, last_price_units: 1_960650336633n });
  });

  it('accepts a failure only for a reason the pool allows', () => {
    const empty = new MarketReplay(30);
    empty.transaction(tx({ type: 'swap', status: 'failed', error: 'pool_empty', token_out: 'USDG' }), 1);
    expect(() => empty.transaction(tx({ type: 'swap', status: 'failed', error: 'slippage_exceeded', token_out: 'USDG', min_receive: 5, min_receive_text: '5' }), 1)).toThrow(MarketMismatchError);
    empty.endBlock({ number: 1, native_price: '2.5' }); // the configured fallback: not checked
    const replay = funded();
    expect(() => replay.transaction(tx({ type: 'swap', status: 'failed', error: 'pool_empty', token_out: 'USDG' }), 2)).toThrow(/pool_empty/);
    replay.transaction(tx({ type: 'swap', status: 'failed', error: 'amount_out_zero', amount_text: '0.00000001', token_out: 'USDG' }), 2);
    expect(() => replay.transaction(tx({ type: 'swap', status: 'failed', error: 'amount_out_zero', amount_text: '1', token_out: 'USDG' }), 2)).toThrow(MarketMismatchError);
    replay.transaction(tx({ type: 'swap', status: 'failed', error: 'slippage_exceeded', amount_text: '10', token_out: 'USDG', min_receive: 19.74317, min_receive_text: '19.74317' }), 2);
    expect(() => replay.transaction(tx({ type: 'swap', status: 'failed', error: 'slippage_exceeded', amount_text: '10', token_out: 'USDG', min_receive: 19.74316, min_receive_text: '19.74316' }), 2))
      .toThrow(expect.objectContaining({ code: 'failure_implausible', block_number: 2 }));
    replay.transaction(tx({ type: 'swap', status: 'failed', error: 'insufficient_funds', amount_text: '10', token_out: 'USDG' }), 2);
    expect(() => replay.transaction(tx({ type: 'swap', amount_text: '10', token_out: 'TAB', amount_out: 1, amount_out_text: '1' }), 2)).toThrow(/token_out/);
    expect(() => replay.transaction(tx({ type: 'burn', from: '@pool', token: 'USDG', amount_text: '2000.000001' }), 2)).toThrow(expect.objectContaining({ code: 'reserve_negative' }));
    expect(replay.reserves).toEqual({ native_units: 1000_00000000n, usdg_units: 2000_000000n });
  });
});
