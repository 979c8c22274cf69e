/**
 * Concurrency against the built service: many simultaneous spends of one balance (every submission
 * acknowledged, exactly the affordable ones confirmed in arrival order, no balance below zero), and
 * Idempotency-Key under concurrent replays (one transaction, the same receipt for every replay).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditChain } from './support/http-chain-audit.js';
import { ADMIN, startEnvironment, type E2eEnvironment } from './support/fixture.js';
import { type ApiClient, type ApiResponse, type Receipt, type TransactionRecord, serverErrors, waitUntilSealed } from './support/http.js';

describe('e2e: concurrent submissions', () => {
  let env: E2eEnvironment;

  beforeAll(async () => {
    // Small blocks, so the contested spends straddle several blocks.
    env = await startEnvironment({ env: { BLOCK_INTERVAL_MS: '50', BLOCK_TXS_MAX: '16' } });
  });

  afterAll(async () => {
    await env?.close();
    expect(serverErrors()).toEqual([]);
  });

  async function fund(user: string, amount: number): Promise<void> {
    const mint = await env.admin.submit({ from: ADMIN, to: user, amount, token: 'TAB', type: 'mint' });
    expect(mint.status, mint.text).toBe(202);
    const sealed = await waitUntilSealed(env.admin, [mint.body.tx_hash]);
    expect(sealed.get(mint.body.tx_hash)?.status).toBe('confirmed');
  }

  it('confirms exactly the affordable 10 of 60 concurrent 1-unit spends and fails the rest with insufficient_funds', async () => {
    await fund('spender', 10);
    const spender = await env.as('spender');
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        spender.submit({ from: 'spender', to: `receiver-${index % 7}`, amount: 1, token: 'TAB', type: 'transfer', metadata: { index } })),
    );
    for (const response of responses) expect(response.status, response.text).toBe(202);
    const hashes = responses.map((response) => response.body.tx_hash);
    expect(new Set(hashes).size).toBe(60);

    const records = [...(await waitUntilSealed(spender, hashes)).values()];
    const confirmed = records.filter((record) => record.status === 'confirmed');
    const failed = records.filter((record) => record.status === 'failed');
    expect(confirmed).toHaveLength(10);
    expect(failed).toHaveLength(50);
    for (const record of confirmed) expect(record.error).toBeNull();
    for (const record of failed) expect(record.error).toBe('insufficient_funds');

    // Sealed in arrival order: the first ten in chain order are the confirmed ones.
    const in_chain_order = [...records].sort((a, b) => (a.block_number ?? 0) - (b.block_number ?? 0) || (a.position ?? 0) - (b.position ?? 0));
    expect(in_chain_order.map((record) => record.status)).toEqual([...Array<string>(10).fill('confirmed'), ...Array<string>(50).fill('failed')]);
    expect(new Set(records.map((record) => record.block_number)).size).toBeGreaterThan(1);

    const balance = await spender.balance('spender');
    expect(balance.body).toMatchObject({ native: 0, usdg: 0, total_usd: 0 });
    let received = 0;
    for (let index = 0; index < 7; index += 1) {
      const body = (await spender.balance(`receiver-${index}`)).body;
      expect(body.native).toBeGreaterThanOrEqual(0);
      received += body.native;
    }
    expect(received).toBe(10);
  });

  it('keeps balances exact and non-negative under concurrent transfers in both directions', async () => {
    const users = ['ring-0', 'ring-1', 'ring-2', 'ring-3'];
    for (const user of users) await fund(user, 5);
    const clients = new Map<string, ApiClient>();
    for (const user of users) clients.set(user, await env.as(user));
    // Each user sends 2 units to each of the others, 3 rounds: 18 units asked of 5 available.
    const submissions: Array<Promise<ApiResponse<Receipt>>> = [];
    for (let round = 0; round < 3; round += 1) {
      for (const from of users) {
        for (const to of users) {
          if (from !== to) submissions.push((clients.get(from) as ApiClient).submit({ from, to, amount: 2, token: 'TAB', type: 'transfer' }));
        }
      }
    }
    const responses = await Promise.all(submissions);
    for (const response of responses) expect(response.status, response.text).toBe(202);
    const records = await waitUntilSealed(env.admin, responses.map((response) => response.body.tx_hash));
    let total = 0;
    for (const user of users) {
      const body = (await env.admin.balance(user)).body;
      expect(body.native).toBeGreaterThanOrEqual(0);
      total += body.native;
    }
    expect(total).toBe(20); // transfers move value, they never create or destroy it
    const statuses = [...records.values()].map((record: TransactionRecord) => record.error ?? record.status);
    expect(new Set(statuses).size).toBeLessThanOrEqual(2);
    expect(statuses.every((status) => status === 'confirmed' || status === 'insufficient_funds')).toBe(true);
  });

  it('answers 20 concurrent identical submissions with one Idempotency-Key with one transaction', async () => {
    await fund('idem-payer', 5);
    const payer = await env.as('idem-payer');
    const body = { from: 'idem-payer', to: 'idem-payee', amount: 2, token: 'TAB', type: 'transfer', metadata: { invoice: 'INV-42' } };
    const key = `pay-invoice-42-${Date.now()}`;
    const responses = await Promise.all(Array.from({ length: 20 }, () => payer.submit(body, { headers: { 'idempotency-key': key } })));
    for (const response of responses) expect(response.status, response.text).toBe(202);
    const hashes = new Set(responses.map((response) => response.body.tx_hash));
    expect(hashes.size).toBe(1);
    const [tx_hash] = [...hashes];
    expect(new Set(responses.map((response) => response.body.timestamp)).size).toBe(1);
    for (const response of responses) expect(response.headers.get('location')).toBe(`/api/transactions/${tx_hash}`);
    const replayed = responses.filter((response) => response.headers.get('idempotent-replayed') === 'true');
    expect(replayed).toHaveLength(19);

    await waitUntilSealed(payer, [tx_hash ?? '']);
    expect((await payer.balance('idem-payer')).body.native).toBe(3);
    expect((await payer.balance('idem-payee')).body.native).toBe(2);

    // A later replay still returns the first receipt, flagged as a replay.
    const later = await payer.submit(body, { headers: { 'idempotency-key': key } });
    expect(later.status).toBe(202);
    expect(later.body.tx_hash).toBe(tx_hash);
    expect(later.headers.get('idempotent-replayed')).toBe('true');

    // The same key with another body is refused.
    const reused = await payer.submit({ ...body, amount: 3 }, { headers: { 'idempotency-key': key } });
    expect(reused.status, reused.text).toBe(422);
    expect(reused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(reused.body).toMatchObject({ status: 422, code: 'idempotency_key_reused' });

    // Keys are scoped to the caller: another caller may use the same key for its own submission.
    await fund('idem-other', 1);
    const other = await env.as('idem-other');
    const own = await other.submit({ from: 'idem-other', to: 'idem-payee', amount: 1, token: 'TAB', type: 'transfer' }, { headers: { 'idempotency-key': key } });
    expect(own.status, own.text).toBe(202);
    expect(own.body.tx_hash).not.toBe(tx_hash);
    expect(own.headers.get('idempotent-replayed')).toBeNull();
  });

  it('lets exactly one of 10 concurrent different bodies claim one Idempotency-Key', async () => {
    await fund('idem-racer', 100);
    const racer = await env.as('idem-racer');
    const key = `race-${Date.now()}`;
    const responses = await Promise.all(Array.from({ length: 10 }, (_, index) =>
      racer.submit({ from: 'idem-racer', to: 'idem-payee', amount: index + 1, token: 'TAB', type: 'transfer' }, { headers: { 'idempotency-key': key } })));
    const accepted = responses.filter((response) => response.status === 202);
    const refused = responses.filter((response) => response.status === 422);
    expect(accepted).toHaveLength(1);
    expect(refused).toHaveLength(9);
    for (const response of refused) expect(response.body).toMatchObject({ code: 'idempotency_key_reused' });
    const winner = accepted[0]?.body.tx_hash ?? '';
    const record = (await waitUntilSealed(racer, [winner])).get(winner);
    expect(record?.status).toBe('confirmed');
    expect((await racer.balance('idem-racer')).body.native).toBe(100 - (record?.amount ?? 0));
  });

  it('leaves a chain that an independent replay agrees with', async () => {
    const audit = await auditChain(env.admin);
    expect(audit.problems).toEqual([]);
    for (const [, account] of audit.balances) for (const [, units] of account) expect(units >= 0n).toBe(true);
  });
});
