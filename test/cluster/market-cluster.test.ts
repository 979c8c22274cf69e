/**
 * Issue 16 on a cluster: "two instances on PostgreSQL report the same `native_price` after every
 * block". Two real service processes share one PostgreSQL schema. Liquidity is seeded into `@pool`,
 * then a stream of swaps both ways (some with a `min_receive` they cannot meet) and transfers goes
 * through BOTH instances, a few at a time so that blocks hold several swaps each. Half-way through,
 * the instance holding the sealer lease is killed (SIGKILL); the other takes over and the stream goes
 * on through it alone; the killed one is then started again on the same database. Once everything is
 * sealed:
 * - every block (`GET /api/blocks/{n}`, whole record, so `native_price` too) and `/api/stats`'
 *   `native_price` are the same from both instances;
 * - the chain audits from genesis on each instance (test/e2e/support/http-chain-audit.ts: hashes, links,
 *   balances, stats, and an independent replay of the pool — the formula of docs/api.md, Market,
 *   written out again there — against every swap's outcome and amount_out and every block's price).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { auditChain, type AuditResult } from '../e2e/support/http-chain-audit.js';
import { ApiClient, type BlockRecord, type SubmitBody, decimalToUnits, rawMembers, serverErrors, waitUntilSealed } from '../e2e/support/http.js';
import { signTestToken, TEST_SECRET } from '../support/in-process-tabula.js';
import { sealersOf, ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const ADMIN = 'treasury';
const POOL = '@pool';
const TRADERS = 8;
const ROUNDS = 24;
const KILL_AFTER_ROUND = 12;
const PER_ROUND = 6;
const FEE_BPS = 30n;
const TAKEOVER_MS_MAX = 10_000;

describe('the market on a cluster of two instances', () => {
  let database: TestDatabase;
  let instances: ServiceProcess[] = [];
  let clients: ApiClient[] = [];
  const submitted: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const env = {
      DATABASE_URL: database.url, JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '100', BLOCK_TXS_MAX: '8',
      // Traders overdraw and miss their minimum on purpose: neither limit is what this test is about.
      RATE_LIMIT_MAX: '1000000', FAILURE_BUDGET_PER_HOUR: '1000000',
    };
    instances = await Promise.all([ServiceProcess.start({ env }), ServiceProcess.start({ env })]);
    const token = await signTestToken(ADMIN, loadConfig({ JWT_SECRET: TEST_SECRET }), { admin: true, expires_in_s: 600 });
    clients = instances.map((instance) => new ApiClient(() => instance.url, { token }));
  });

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
    await database?.drop();
    expect(serverErrors()).toEqual([]);
  });

  const trader = (index: number) => `trader-${index}`;
  const mint = (to: string, amount: string, token: string): SubmitBody => ({ from: ADMIN, to, amount, token, type: 'mint' });

  async function submitThrough(client: ApiClient, body: SubmitBody): Promise<string> {
    const response = await client.submit(body);
    expect(response.status, `${JSON.stringify(body)} → ${response.text}`).toBe(202);
    submitted.push(response.body.tx_hash);
    return response.body.tx_hash;
  }

  /** A round of the stream: swaps both ways, to oneself or to another trader, a few hopeless minimums, and transfers. */
  function round(round_index: number): SubmitBody[] {
    return Array.from({ length: PER_ROUND }, (_, slot) => {
      const n = round_index * PER_ROUND + slot;
      const from = trader(n % TRADERS);
      const to = n % 5 === 0 ? trader((n + 3) % TRADERS) : from;
      if (n % 7 === 3) return { from, to: trader((n + 1) % TRADERS), amount: `${1 + (n % 4)}.5`, token: n % 2 === 0 ? 'USDG' : 'TAB', type: 'transfer' };
      const token = (n + round_index) % 2 === 0 ? 'TAB' : 'USDG';
      const amount = token === 'TAB' ? `${1 + (n % 9)}.${String(n % 97).padStart(2, '0')}123456` : `${2 + (n % 13)}.${String(n % 89).padStart(2, '0')}4321`;
      const body: SubmitBody = { from, to, amount, token, type: 'swap' };
      if (n % 11 === 5) body.min_receive = '100000'; // slippage_exceeded
      return body;
    });
  }

  it('reports the same native_price after every block on both instances, equal to a replay of the pool, across a sealer failover', async () => {
    const [first, second] = instances as [ServiceProcess, ServiceProcess];
    const [leader] = await sealersOf(instances);
    expect(leader, 'one instance holds the sealer lease').toBeDefined();
    const survivor = leader === first ? second : first;
    const survivor_client = clients[instances.indexOf(survivor)] as ApiClient;

    // Liquidity and opening balances, half through each instance.
    const seed: SubmitBody[] = [mint(POOL, '5000', 'TAB'), mint(POOL, '7500', 'USDG')];
    for (let index = 0; index < TRADERS; index += 1) seed.push(mint(trader(index), '200', 'TAB'), mint(trader(index), '300', 'USDG'));
    await Promise.all(seed.map((body, index) => submitThrough(clients[index % 2] as ApiClient, body)));
    await waitUntilSealed(survivor_client, submitted);

    // The stream, through both instances, until the sealer is killed; then through the survivor.
    let killed_after_block = -1;
    let takeover_ms = 0;
    for (let index = 0; index < ROUNDS; index += 1) {
      if (index === KILL_AFTER_ROUND) {
        killed_after_block = (await survivor_client.stats()).body.latest_block_number;
        const killed_at = Date.now();
        await leader!.kill();
        // The survivor takes the lease and seals what was pending when the sealer died.
        await survivor.waitForLog((line) => String(line.msg).includes('sealer lease acquired'), TAKEOVER_MS_MAX);
        takeover_ms = Date.now() - killed_at;
      }
      const live = index < KILL_AFTER_ROUND ? clients : [survivor_client];
      await Promise.all(round(index).map((body, slot) => submitThrough(live[slot % live.length] as ApiClient, body)));
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    const records = await waitUntilSealed(survivor_client, submitted, 30_000);
    await leader!.restart();

    // Both instances serve the same chain, block for block, and the same current price.
    const stats = await Promise.all(clients.map((client) => client.stats()));
    const latest = stats[0]!.body.latest_block_number;
    expect(stats[1]!.body.latest_block_number).toBe(latest);
    expect(latest).toBeGreaterThan(killed_after_block + 3);
    const native_price_text = stats.map((answer) => rawMembers(answer.text).get('native_price'));
    expect(native_price_text[1]).toBe(native_price_text[0]);
    const blocks: BlockRecord[] = [];
    for (let number = 0; number <= latest; number += 1) {
      const [a, b] = await Promise.all(clients.map((client) => client.block(number)));
      expect(a!.status, `block ${number}`).toBe(200);
      expect(b!.text, `block ${number} from both instances`).toBe(a!.text);
      expect(b!.body.native_price, `block ${number}: native_price`).toBe(a!.body.native_price);
      blocks.push(b!.body);
    }

    // The full third-party audit on each instance: hashes, links, every outcome, balances, stats, and an
    // independent replay of the pool that checks every swap's amount_out against the formula (fee
    // POOL_FEE_BPS) and every block's native_price against the replayed reserves.
    const audits: AuditResult[] = [];
    for (const client of clients) audits.push(await auditChain(client, { pool_fee_bps: Number(FEE_BPS) }));
    for (const audit of audits) {
      expect(audit.problems).toEqual([]);
      expect(audit.latest_block_number).toBe(latest);
    }
    const audit = audits[0]!;
    expect(audit.blocks.map((block) => block.native_price)).toEqual(blocks.map((block) => block.native_price));
    const swaps = audit.transactions.filter((tx) => tx.record.type === 'swap');
    const swaps_confirmed = swaps.filter((tx) => tx.expected_status === 'confirmed').length;
    const swaps_failed = swaps.length - swaps_confirmed;
    const priced = blocks.filter((block) => block.number > 0 && block.native_price != null);
    expect(priced).toHaveLength(latest);
    const prices = new Set(priced.map((block) => decimalToUnits(String(block.native_price), 12)));
    const priced_after_failover = priced.filter((block) => block.number > killed_after_block).length;
    expect(decimalToUnits(native_price_text[0]!, 12)).toBe(decimalToUnits(String(blocks.at(-1)!.native_price), 12));
    expect(swaps_confirmed).toBeGreaterThan(ROUNDS * 3);
    expect(swaps_failed, 'some swaps missed their minimum').toBeGreaterThan(0);
    expect(prices.size, 'the price moved from block to block').toBeGreaterThan(10);
    expect(priced_after_failover).toBeGreaterThan(3);
    expect(records.size).toBe(submitted.length);
    console.info(`market cluster: ${submitted.length} transactions (${swaps_confirmed} swaps confirmed, ${swaps_failed} failed) in ${latest} blocks, ` +
      `${prices.size} distinct prices; sealer killed after block ${killed_after_block}, survivor leading ${takeover_ms} ms later; final price ${native_price_text[0]}`);
  }, 120_000);
});
