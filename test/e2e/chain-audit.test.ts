/**
 * A third party audits the chain of the built service through the HTTP API alone, after a mix of
 * activity: mints, transfers and burns in both tokens, exact decimal amounts up to the storage limit,
 * insufficient funds and balance overflows, awkward user ids and metadata, sequential and concurrent
 * submissions. Every block's root, hash and parent link, every tx_hash, every confirmed/failed
 * decision (by an independent replay) and every balance and statistic must check out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditChain, type AuditResult } from './support/http-chain-audit.js';
import { ADMIN, startEnvironment, type E2eEnvironment } from './support/fixture.js';
import { type ApiClient, type SubmitBody, decimalToUnits, mapLimit, rawMembers, serverErrors, waitUntilSealed } from './support/http.js';

const ALICE = 'alice@example.com';
const BOB = 'auth0|5f7c8ec7c33c6c004bbafe82';
const CAROL = 'c0ffee00-1234-4abc-8def-0123456789ab';
const UNICODE = 'ünï-cödé-✓-用户';
const WHALE = 'whale';
const DUST = 'dust';
const FULL = 'full-account';
const POOL = '@pool';
/** 2^63 − 1 base units of the native token: the largest storable balance. */
const UNITS_MAX_TAB = '92233720368.54775807';
const WHALE_AMOUNT = '90071992.54740993';

describe('e2e: chain audit by an independent replay', () => {
  let env: E2eEnvironment;
  const submitted: string[] = [];
  let audit: AuditResult;

  beforeAll(async () => {
    env = await startEnvironment({ env: { BLOCK_INTERVAL_MS: '100', BLOCK_TXS_MAX: '12' } });
  });

  afterAll(async () => {
    await env?.close();
    expect(serverErrors()).toEqual([]);
  });

  async function submitAll(client: ApiClient, bodies: SubmitBody[], mode: 'sequential' | 'concurrent'): Promise<string[]> {
    const send = async (body: SubmitBody): Promise<string> => {
      const response = await client.submit(body);
      expect(response.status, `${JSON.stringify(body)} → ${response.text}`).toBe(202);
      return response.body.tx_hash;
    };
    const hashes = mode === 'sequential' ? [] as string[] : await mapLimit(bodies, 32, send);
    if (mode === 'sequential') for (const body of bodies) hashes.push(await send(body));
    submitted.push(...hashes);
    return hashes;
  }

  const mint = (to: string, amount: number | string, token = 'TAB', metadata: Record<string, unknown> = {}): SubmitBody =>
    ({ from: ADMIN, to, amount, token, type: 'mint', metadata });
  const transfer = (from: string, to: string, amount: number | string, token = 'TAB', metadata: Record<string, unknown> = {}): SubmitBody =>
    ({ from, to, amount, token, type: 'transfer', metadata });
  const burn = (from: string, amount: number | string, token = 'TAB'): SubmitBody => ({ from, to: ADMIN, amount, token, type: 'burn' });
  const swap = (from: string, to: string, amount: number | string, token: string, min_receive?: string): SubmitBody =>
    ({ from, to, amount, token, type: 'swap', ...(min_receive === undefined ? {} : { min_receive }) });

  it('builds a history of mixed activity', { timeout: 45_000 }, async () => {
    await submitAll(env.admin, [
      mint(ALICE, 1000),
      mint(BOB, '500.5', 'USDG'),
      mint(DUST, '0.00000001'),
      mint(WHALE, WHALE_AMOUNT),
      mint(CAROL, 12.345678, 'usdg'),
      mint(UNICODE, 3, 'Tab', { note: 'mixed-case token symbol' }),
      mint(FULL, UNITS_MAX_TAB),
    ], 'sequential');
    await waitUntilSealed(env.admin, submitted);

    const metadata = {
      b: 1, a: 2, é: 3, A: 4, '': 'empty key', '10': 'digit key',
      nested: { z: [1, 2.5, 'x', null, true, {}], y: -0.5 },
      big: 1e21, small: 1e-7, emoji: '😀', quote: '"\\', separator: '\u2028',
    };
    await submitAll(env.admin, [
      transfer(ALICE, BOB, '10.12345678', 'TAB', metadata),
      transfer(BOB, ALICE, 0.5, 'USDG'),
      transfer(CAROL, ALICE, 100, 'USDG'), // insufficient_funds
      transfer(WHALE, ALICE, WHALE_AMOUNT), // all of it
      transfer(WHALE, BOB, 1), // insufficient_funds: nothing left
      transfer(DUST, ALICE, '0.00000001'),
      transfer(DUST, ALICE, '0.00000001'), // insufficient_funds
      mint(FULL, '0.00000001'), // balance_overflow
      transfer(ALICE, FULL, 1), // balance_overflow
      burn(ALICE, 5),
      burn(BOB, 1_000_000_000), // insufficient_funds
      transfer(UNICODE, CAROL, '2.5', 'TAB', { long: 'x'.repeat(3900) }),
    ], 'sequential');

    // The market: a swap before there is liquidity, liquidity from the admin, then swaps both ways
    // (one to someone else), and each way a swap can fail.
    await submitAll(env.admin, [swap(ALICE, ALICE, 1, 'TAB')], 'sequential'); // pool_empty
    await waitUntilSealed(env.admin, submitted);
    await submitAll(env.admin, [mint(POOL, 1000), mint(POOL, 1500, 'USDG')], 'sequential');
    await waitUntilSealed(env.admin, submitted);
    await submitAll(env.admin, [
      swap(ALICE, ALICE, '10.5', 'TAB', '15'),
      swap(BOB, CAROL, '20.000001', 'USDG'),
      swap(ALICE, ALICE, 1, 'TAB', '1000'), // slippage_exceeded
      swap(DUST, DUST, 1, 'TAB'), // insufficient_funds
      swap(ALICE, BOB, '0.00000001', 'TAB'), // amount_out_zero
      swap(CAROL, ALICE, '0.333333', 'USDG', '0.00000001'),
    ], 'sequential');

    // Concurrent traffic between everyone, in both tokens, some of it unaffordable.
    const people = [ALICE, BOB, CAROL, UNICODE, DUST];
    const burst: SubmitBody[] = [];
    for (let index = 0; index < 60; index += 1) {
      const from = people[index % people.length] ?? ALICE;
      const to = people[(index * 3 + 1) % people.length] ?? BOB;
      if (from === to) continue;
      const token = index % 3 === 0 ? 'USDG' : 'TAB';
      const amount = token === 'USDG' ? `${(index % 7) + 0.25}` : `${(index % 11) * 3}.0000000${(index % 9) + 1}`;
      burst.push(transfer(from, to, amount, token, { index }));
    }
    burst.push(mint(CAROL, 50), burn(ALICE, '0.5'), mint(`late-user-${Date.now()}`, '0.1', 'USDG'));
    await submitAll(env.admin, burst, 'concurrent');

    const records = await waitUntilSealed(env.admin, submitted, 30_000);
    expect(records.size).toBe(submitted.length);
  });

  it('recomputes every root, hash and link, and agrees with every decision, balance and statistic', async () => {
    audit = await auditChain(env.admin);
    expect(audit.problems).toEqual([]);
    expect(audit.transactions.map((tx) => tx.record.tx_hash).sort()).toEqual([...submitted].sort());
    expect(audit.blocks[0]?.number).toBe(0);
    expect(audit.blocks.length).toBe(audit.latest_block_number + 1);
  });

  it('covered what it meant to cover', () => {
    const errors = new Set(audit.transactions.map((tx) => tx.record.error));
    expect(errors).toEqual(new Set([null, 'insufficient_funds', 'balance_overflow', 'pool_empty', 'slippage_exceeded', 'amount_out_zero']));
    expect(new Set(audit.transactions.map((tx) => tx.record.type))).toEqual(new Set(['mint', 'transfer', 'burn', 'swap']));
    expect(audit.transactions.filter((tx) => tx.record.type === 'swap' && tx.record.status === 'confirmed').length).toBe(3);
    expect(audit.blocks.some((block) => block.native_price != null && block.native_price !== '1')).toBe(true);
    expect(Number(audit.stats.trading_volume_24h)).toBeGreaterThan(0);
    expect(new Set(audit.transactions.map((tx) => tx.record.token))).toEqual(new Set(['TAB', 'USDG']));
    expect(audit.blocks.some((block) => block.transactions_count > 1)).toBe(true);
    expect(audit.blocks.some((block) => block.transactions_count === 12)).toBe(true); // BLOCK_TXS_MAX reached
    // Amounts are read exactly, beyond what a double holds.
    const amounts = new Set(audit.transactions.map((tx) => tx.amount_text));
    expect(amounts).toContain(WHALE_AMOUNT);
    expect(amounts).toContain(UNITS_MAX_TAB);
    expect(amounts).toContain('0.00000001');
    expect(audit.balances.get(FULL)?.get('TAB')).toBe(2n ** 63n - 1n);
  });

  it('reports the exact balance at the storage limit', async () => {
    const response = await env.admin.balance(FULL);
    expect(response.status).toBe(200);
    expect(rawMembers(response.text).get('native')).toBe(UNITS_MAX_TAB);
    // total_usd at the pool's live price, to the micro-dollar, rounded half away from zero.
    const stats = await env.admin.stats();
    const price_units = decimalToUnits(rawMembers(stats.text).get('native_price') ?? 'NaN', 12);
    const scaled = (2n ** 63n - 1n) * price_units;
    const divisor = 10n ** 14n;
    const micros = scaled / divisor + (scaled % divisor >= divisor / 2n ? 1n : 0n);
    expect(decimalToUnits(rawMembers(response.text).get('total_usd') ?? 'NaN', 6)).toBe(micros);
  });
});
