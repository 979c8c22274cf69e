/**
 * PENDING_MAX: once the transactions waiting to be sealed would pass it, submit and batch answer 503
 * `pending_backlog_full` with Retry-After and store nothing; replays are still answered; sealing makes
 * room again. Runs on both stores.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { expectProblem, type Call } from '../support/http-client.js';

const SUBMIT = '/api/transactions/submit';
const BATCH = '/api/transactions/batch';
const mint = (to: string) => ({ from: 'treasury', to, amount: 1, token: 'TAB', type: 'mint' });

describe('PENDING_MAX', () => {
  let ledger: TestTabula;
  let log_lines: Array<Record<string, unknown>>;
  let admin: { post(url: string, payload: unknown, headers?: Record<string, string>): Promise<Call> };

  beforeEach(async () => {
    log_lines = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => { log_lines.push(JSON.parse(line) as Record<string, unknown>); } });
    ledger = await startTestTabula({ PENDING_MAX: '3', BLOCK_INTERVAL_MS: '2000', METRICS_TOKEN: 'metrics-token-that-is-long-enough-32' }, { logger });
    const token = await ledger.token('treasury', { admin: true });
    // Not client.ts's client: that one fails any 5xx, and these answers are 503 by design.
    admin = {
      async post(url, payload, headers = {}) {
        const response = await ledger.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${token}`, ...headers }, payload: payload as object });
        const is_json = String(response.headers['content-type'] ?? '').includes('json');
        return { status: response.statusCode, headers: response.headers, body: response.body, json: is_json ? JSON.parse(response.body) : undefined };
      },
    };
  });
  afterEach(async () => { await ledger.close(); });

  it('refuses submissions past the bound with 503 and Retry-After, storing nothing, until sealing makes room', async () => {
    // One append fills it (the backlog's count may briefly count an append twice, never miss one).
    expect((await admin.post(BATCH, { transactions: ['a', 'b', 'c'].map(mint) })).json.accepted).toBe(3);
    const refused = await admin.post(SUBMIT, mint('d'));
    expectProblem(refused, 503, 'pending_backlog_full');
    expect(refused.headers['retry-after']).toBe('2');
    const batch = await admin.post(BATCH, { transactions: [mint('e')] });
    expectProblem(batch, 503, 'pending_backlog_full');
    expect(batch.headers['retry-after']).toBe('2');
    expect(await ledger.store.pendingCount()).toBe(3);
    // A refusal is one warn line with its code, no error and no stack trace per refused request.
    const refusals = log_lines.filter((line) => line.msg === 'request refused');
    expect(refusals.map((line) => [line.level, line.code, line.status])).toEqual([[40, 'pending_backlog_full', 503], [40, 'pending_backlog_full', 503]]);
    expect(refusals.every((line) => line.err === undefined)).toBe(true);
    expect(log_lines.filter((line) => (line.level as number) >= 50)).toEqual([]);

    await ledger.producer.drain();
    expect((await admin.post(BATCH, { transactions: [mint('d'), mint('e')] })).json.accepted).toBe(2);
    // A batch that would pass the bound is refused whole, even though part of it would fit.
    expectProblem(await admin.post(BATCH, { transactions: [mint('f'), mint('g')] }), 503, 'pending_backlog_full');
    expect(await ledger.store.pendingCount()).toBe(2);

    const metrics = await ledger.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer metrics-token-that-is-long-enough-32' } });
    expect(metrics.body).toMatch(/^tabula_pending_max 3$/m);
    expect(metrics.body).toMatch(/^tabula_pending_backlog_refusals_total 4$/m);
    expect(Number(/^tabula_pending_backlog_estimate (\d+)$/m.exec(metrics.body)?.[1])).toBeGreaterThanOrEqual(2);
  });

  it('still answers a replay when the backlog is full (it stores nothing)', async () => {
    const first = await admin.post(BATCH, { transactions: [{ ...mint('a'), idempotency_key: 'k-1' }, mint('b'), mint('c')] });
    expect(first.json.accepted).toBe(3);
    const again = await admin.post(SUBMIT, mint('a'), { 'idempotency-key': 'k-1' });
    expect(again.status).toBe(202);
    expect(again.json.tx_hash).toBe(first.json.results[0].tx_hash);
    expectProblem(await admin.post(SUBMIT, mint('a'), { 'idempotency-key': 'k-2' }), 503, 'pending_backlog_full');
    // A batch of repeats only is answered too; one new item among them refuses the batch whole.
    const repeats = await admin.post(BATCH, { transactions: [{ ...mint('a'), idempotency_key: 'k-1' }, { ...mint('b'), idempotency_key: 'k-1' }] });
    expect(repeats.json.results).toEqual([
      expect.objectContaining({ status: 202, tx_hash: first.json.results[0].tx_hash, replayed: true }),
      expect.objectContaining({ status: 422, error: expect.objectContaining({ code: 'idempotency_key_reused' }) }),
    ]);
    expectProblem(await admin.post(BATCH, { transactions: [{ ...mint('a'), idempotency_key: 'k-1' }, mint('d')] }), 503, 'pending_backlog_full');
    expect(await ledger.store.pendingCount()).toBe(3);
    // The replays are not counted as refusals; the new key and the mixed batch's two items are.
    const metrics = await ledger.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer metrics-token-that-is-long-enough-32' } });
    expect(metrics.body).toMatch(/^tabula_pending_backlog_refusals_total 3$/m);
  });
});
