/**
 * Failures cost the sender across a cluster (issue 15): two real instances share one PostgreSQL
 * schema, and one subject floods both at once with transfers its balance cannot cover, single and in
 * batches. Together they take exactly FAILURE_BUDGET_PER_HOUR of them (the check and the charge are
 * one write transaction, serialised on the subject's budget row), refuse the rest with 429, and the
 * database holds no more of that subject's records than the budget.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { signTestToken, TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { connectToSchema, createTestDatabase, type TestDatabase } from '../support/test-database.js';

const BUDGET = 10;
const SINGLES_PER_INSTANCE = 40;
const BATCHES_PER_INSTANCE = 4;
const BATCH_ITEMS = 25;

/** Budgets are per clock hour: a test that must stay within one waits out the last seconds of an hour. */
async function awayFromHourEnd(margin_s = 30): Promise<void> {
  const left_ms = 3_600_000 - (Date.now() % 3_600_000);
  if (left_ms < margin_s * 1000) await new Promise((resolve) => setTimeout(resolve, left_ms + 1000));
}

describe('the failure budget on a cluster of two instances', () => {
  let database: TestDatabase;
  let instances: ServiceProcess[] = [];
  let sql: pg.Client;
  const config = loadConfig({ JWT_SECRET: TEST_SECRET });

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const env = { DATABASE_URL: database.url, JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '100', RATE_LIMIT_MAX: '1000000', FAILURE_BUDGET_PER_HOUR: String(BUDGET) };
    instances = await Promise.all([0, 1].map(() => ServiceProcess.start({ env })));
    sql = await connectToSchema(database);
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
    await sql?.end();
    await database?.drop();
  });

  async function post(instance: ServiceProcess, token: string, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown>; retry_after: string | null }> {
    const response = await fetch(`${instance.url}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(20_000),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown>, retry_after: response.headers.get('retry-after') };
  }

  const transfer = (from: string) => ({ from, to: 'bob', amount: '1', token: 'TAB', type: 'transfer' });

  it('lets both instances together store no more of one subject\'s uncovered debits than its budget', { timeout: 90_000 }, async () => {
    await awayFromHourEnd();
    const mallory = await signTestToken('mallory', config, { expires_in_s: 600 });
    const statuses: number[] = [];
    await Promise.all(instances.flatMap((instance) => [
      (async () => {
        for (let index = 0; index < SINGLES_PER_INSTANCE; index += 1) {
          const answer = await post(instance, mallory, '/api/transactions/submit', transfer('mallory'));
          statuses.push(answer.status);
          if (answer.status === 429) {
            expect(answer.json.code).toBe('failure_budget_exceeded');
            expect(Number(answer.retry_after)).toBeGreaterThanOrEqual(1);
          }
        }
      })(),
      (async () => {
        for (let index = 0; index < BATCHES_PER_INSTANCE; index += 1) {
          const answer = await post(instance, mallory, '/api/transactions/batch', { transactions: Array.from({ length: BATCH_ITEMS }, () => transfer('mallory')) });
          expect(answer.status).toBe(200);
          for (const result of answer.json.results as Array<{ status: number }>) statuses.push(result.status);
        }
      })(),
    ]));
    const total = instances.length * (SINGLES_PER_INSTANCE + BATCHES_PER_INSTANCE * BATCH_ITEMS);
    expect(statuses).toHaveLength(total);
    expect(statuses.filter((status) => status === 202)).toHaveLength(BUDGET);
    expect(statuses.filter((status) => status === 429)).toHaveLength(total - BUDGET);
    const stored = await sql.query<{ count: string }>("SELECT count(*)::text AS count FROM transactions WHERE from_id = 'mallory'");
    expect(Number(stored.rows[0]?.count)).toBe(BUDGET);
    const charged = await sql.query<{ charged: number }>("SELECT charged FROM failure_budgets WHERE subject = 'mallory'");
    expect(charged.rows.map((row) => row.charged)).toEqual([BUDGET]);
  });
});
