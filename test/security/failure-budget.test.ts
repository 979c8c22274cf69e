/**
 * Issue 15, failures cost the sender, on the built service in production mode with a separate test
 * identity provider: a subject whose transfers its balance does not cover may submit
 * FAILURE_BUDGET_PER_HOUR of them in an hour; past it, every uncovered submission, single or in a
 * batch, is 429 `failure_budget_exceeded` with Retry-After and stores nothing (counted in the
 * database), while covered transfers go on unhindered and the failures that were let in are sealed,
 * reported as `transaction.failed` events, and counted.
 */
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN, AUDIENCE } from '../e2e/support/fixture.js';
import { sleep } from '../e2e/support/http.js';
import { IdentityProvider } from '../e2e/support/identity-provider.js';
import { ServiceProcess } from '../support/service-process.js';

const BUDGET = 5;
const METRICS_TOKEN = 'security-metrics-token-0123456789';

type Answer = { status: number; json: Record<string, unknown>; retry_after: string | null };

async function post(service: ServiceProcess, token: string, path: string, body: unknown): Promise<Answer> {
  const response = await fetch(`${service.url}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(20_000),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown>, retry_after: response.headers.get('retry-after') };
}

const transfer = (from: string, amount: string, to = 'bob') => ({ from, to, amount, token: 'TAB', type: 'transfer' });

/** The transactions the ledger keeps, by status, read from its database. */
function storedByStatus(service: ServiceProcess): Record<string, number> {
  const db = new Database(service.database_path, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT status, count(*) AS count FROM transactions WHERE type <> 'mint' GROUP BY status").all() as Array<{ status: string; count: number }>;
    return Object.fromEntries(rows.map((row) => [row.status, row.count]));
  } finally {
    db.close();
  }
}

async function metric(service: ServiceProcess, series: string): Promise<number> {
  const response = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const line = (await response.text()).split('\n').find((item) => item.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

/** Reads the event log's `transaction.failed` events from the start until `expected` have come (or 10 s passed). */
async function failedEvents(service: ServiceProcess, token: string, expected: number): Promise<number> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  let count = 0;
  try {
    const response = await fetch(`${service.url}/api/events?after=0&types=transaction.failed`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      count += (decoder.decode(chunk, { stream: true }).match(/^event: transaction\.failed$/gm) ?? []).length;
      if (count >= expected) break;
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return count;
}

async function waitUntil(check: () => boolean | Promise<boolean>, timeout_ms = 15_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(50);
  }
}

/** Budgets are per clock hour: a test that must stay within one waits out the last seconds of an hour. */
async function awayFromHourEnd(margin_s = 30): Promise<void> {
  const left_ms = 3_600_000 - (Date.now() % 3_600_000);
  if (left_ms < margin_s * 1000) await new Promise((resolve) => setTimeout(resolve, left_ms + 1000));
}

describe('security: failures cost the sender', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  });

  it('refuses a subject past its failure budget with 429 and Retry-After, and stores no more failed records', { timeout: 90_000 }, async () => {
    const idp = await IdentityProvider.start({ audience: AUDIENCE });
    cleanup.push(() => idp.close());
    const service = await ServiceProcess.start({
      env: {
        NODE_ENV: 'production', JWT_SECRET: '', JWT_ISSUER: idp.issuer, JWT_AUDIENCE: AUDIENCE, METRICS_TOKEN,
        FAILURE_BUDGET_PER_HOUR: String(BUDGET), BLOCK_INTERVAL_MS: '50', RATE_LIMIT_MAX: '1000000',
      },
    });
    cleanup.push(() => service.close());
    await awayFromHourEnd();
    const mallory = await idp.token('mallory');

    // The budget's worth of transfers that cannot succeed is taken...
    for (let index = 0; index < BUDGET; index += 1) {
      expect((await post(service, mallory, '/api/transactions/submit', transfer('mallory', '1'))).status).toBe(202);
    }
    // ...then each one more is refused, single or in a batch, with the seconds to the next hour.
    const refused = await post(service, mallory, '/api/transactions/submit', transfer('mallory', '1'));
    expect(refused.status).toBe(429);
    expect(refused.json.code).toBe('failure_budget_exceeded');
    const retry_after_s = Number(refused.retry_after);
    expect(retry_after_s).toBeGreaterThanOrEqual(1);
    expect(retry_after_s).toBeLessThanOrEqual(3600);
    const batch = await post(service, mallory, '/api/transactions/batch', { transactions: Array.from({ length: 20 }, () => transfer('mallory', '1')) });
    expect(batch.status).toBe(200);
    expect(batch.json.accepted).toBe(0);
    const results = batch.json.results as Array<{ status: number; error?: { code: string } }>;
    expect(results.every((result) => result.status === 429 && result.error?.code === 'failure_budget_exceeded')).toBe(true);

    // The failures let in are sealed as failed; nothing else of mallory's was kept.
    await waitUntil(() => (storedByStatus(service).failed ?? 0) === BUDGET);
    expect(storedByStatus(service)).toEqual({ failed: BUDGET });
    expect(await metric(service, 'tabula_failure_budget_refusals_total{type="transfer"}')).toBe(21);
    expect(await failedEvents(service, mallory, BUDGET)).toBe(BUDGET);

    // A funded sender's covered transfers are never charged, however many.
    const admin = await idp.token(ADMIN, { admin: true });
    expect((await post(service, admin, '/api/transactions/submit', { from: ADMIN, to: 'alice', amount: '100', token: 'TAB', type: 'mint' })).status).toBe(202);
    await waitUntil(async () => {
      const response = await fetch(`${service.url}/api/balance/alice`, { headers: { authorization: `Bearer ${admin}` } });
      return ((await response.json()) as { native?: number }).native === 100;
    });
    const alice = await idp.token('alice');
    for (let index = 0; index < BUDGET * 2; index += 1) {
      expect((await post(service, alice, '/api/transactions/submit', transfer('alice', '1'))).status).toBe(202);
    }
    await waitUntil(() => (storedByStatus(service).confirmed ?? 0) === BUDGET * 2);
    expect(storedByStatus(service)).toEqual({ failed: BUDGET, confirmed: BUDGET * 2 });
  });
});
