/**
 * PostgreSQL faults under the real service, through a fault-injecting TCP proxy: connections cut in
 * the middle of submissions (a database restart, a lost connection mid-commit) and a database that
 * cannot be reached at start. A caller never gets a 500: a submission whose commit may or may not
 * have happened gets 503 `storage_unavailable`, and retrying it with the same Idempotency-Key yields
 * exactly one transaction.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { runUntilExit, ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../support/test-database.js';

const POSTGRES = new URL(testPostgresUrl());
/** Submissions per round of cuts, and rounds at the most before the test gives up on seeing a 503. */
const KEYS_PER_ROUND = 300;
const ROUNDS_MAX = 10;

function throughProxy(database: TestDatabase, proxy: FaultProxy): string {
  const url = new URL(database.url);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return url.toString();
}

describe('PostgreSQL connections lost under load', () => {
  let database: TestDatabase;
  let proxy: FaultProxy;
  let service: ServiceProcess;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    proxy = await FaultProxy.start({ host: POSTGRES.hostname, port: Number(POSTGRES.port || 5432) });
    service = await ServiceProcess.start({
      env: { DATABASE_URL: throughProxy(database, proxy), JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '200', RATE_LIMIT_MAX: '10000000' },
    });
  });
  afterAll(async () => {
    await service?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('answers 202 or 503 (never 500) while connections are cut, and a retry with the same key gives exactly one transaction', async () => {
    const admin = await service.token('treasury', { admin: true });
    const submit = async (key: string, index: number) => {
      const response = await fetch(`${service.url}/api/transactions/submit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ from: 'treasury', to: `user-${index % 20}`, amount: 1, token: 'USDG', type: 'mint' }),
        signal: AbortSignal.timeout(20_000),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const safely = async (key: string, index: number) => {
      try {
        return await submit(key, index);
      } catch (error) {
        throw new Error(`submit failed: ${String(error)}\n${service.tail(60)}`);
      }
    };
    // Rounds of submissions while every connection is cut each 150 ms, until a cut has hit a commit in
    // flight (a 503): on a fast machine one round can end between two cuts, or only cut idle connections.
    const keys: string[] = [];
    const first = new Map<string, { status: number; body: Record<string, unknown> }>();
    const unavailable = () => [...first.values()].some((answer) => answer.status === 503);
    let cuts = 0;
    const cutter = setInterval(() => {
      cuts += proxy.cutAll() > 0 ? 1 : 0;
    }, 150);
    try {
      for (let round = 0; round < ROUNDS_MAX && !unavailable(); round += 1) {
        const start = keys.length;
        keys.push(...Array.from({ length: KEYS_PER_ROUND }, () => randomBytes(8).toString('hex')));
        await Promise.all(Array.from({ length: 6 }, async (_, worker) => {
          for (let index = start + worker; index < keys.length; index += 6) first.set(keys[index]!, await safely(keys[index]!, index));
        }));
      }
    } finally {
      clearInterval(cutter);
    }
    if (!service.running) throw new Error(`the service died:\n${service.tail(60)}`);
    expect(cuts).toBeGreaterThan(0);
    const statuses = [...first.values()].map((answer) => answer.status);
    expect(statuses.filter((status) => status !== 202 && status !== 503)).toEqual([]);
    for (const answer of first.values()) {
      if (answer.status === 503) expect(answer.body).toMatchObject({ code: 'storage_unavailable' });
    }
    expect(statuses.filter((status) => status === 503).length).toBeGreaterThan(0);

    // Retry every submission with its key, as the SDK does: each resolves to one transaction.
    const hashes = new Map<string, string>();
    for (const [index, key] of keys.entries()) {
      let answer = await submit(key, index);
      for (let attempt = 0; answer.status === 503 && attempt < 20; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        answer = await submit(key, index);
      }
      expect(answer.status).toBe(202);
      const earlier = first.get(key);
      if (earlier?.status === 202) expect(answer.body.tx_hash).toBe(earlier.body.tx_hash);
      hashes.set(key, answer.body.tx_hash as string);
    }
    expect(new Set(hashes.values()).size).toBe(keys.length);
    // Exactly one transaction per key: the ledger holds as many mints as keys, once sealed.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const stats = (await (await fetch(`${service.url}/api/stats`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { total_transactions: number };
      if (stats.total_transactions >= keys.length) {
        expect(stats.total_transactions).toBe(keys.length);
        break;
      }
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }, 180_000);
});

describe('PostgreSQL unreachable at start', () => {
  it('exits non-zero with a message naming the database, within the connect timeout', async () => {
    const proxy = await FaultProxy.start({ host: POSTGRES.hostname, port: Number(POSTGRES.port || 5432) });
    proxy.refuse();
    const database = await createTestDatabase('postgres');
    try {
      const started = Date.now();
      const run = await runUntilExit({ DATABASE_URL: throughProxy(database, proxy), JWT_SECRET: TEST_SECRET }, { timeout_ms: 30_000 });
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(/failed to start: .*(PostgreSQL|database|storage)/i);
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      await proxy.close();
      await database.drop();
    }
  }, 60_000);
});
