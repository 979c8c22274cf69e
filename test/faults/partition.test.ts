/**
 * A network partition between the sealing instance and PostgreSQL: three real instances on one
 * schema, the first one's connections through the fault proxy, which forwards, then blackholes
 * (keeps every connection open but passes nothing, as a partition does), then heals. The partitioned
 * sealer stops sealing and knows it before another instance takes over, within the documented bound
 * (SEALER_LEASE_TIMEOUT_MS + 2 s); submissions through it answer 503 `storage_unavailable` within the
 * request timeout, never 500; after the heal it stays a follower and the chain has one history with
 * every acknowledged transaction in it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_CLASS } from '../../src/store/postgres/schema.js';
import { auditChain } from '../support/store-chain-audit.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { connectToSchema, createTestDatabase, testPostgresUrl, type TestDatabase } from '../support/test-database.js';

const POSTGRES = new URL(testPostgresUrl());
const LEASE_TIMEOUT_MS = 3000;
const QUERY_TIMEOUT_MS = 3000;
/** The documented takeover bound: the lease timeout, one lease retry (1 s) and one block interval, rounded up. */
const TAKEOVER_BOUND_MS = LEASE_TIMEOUT_MS + 2000;
/** Fastify's request timeout (src/http/server.ts): no answer may take longer. */
const REQUEST_TIMEOUT_MS = 30_000;

const ENV = {
  JWT_SECRET: TEST_SECRET,
  BLOCK_INTERVAL_MS: '200',
  RATE_LIMIT_MAX: '10000000',
  SEALER_LEASE_TIMEOUT_MS: String(LEASE_TIMEOUT_MS),
  DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
};

type Answer = { status: number; body: Record<string, unknown>; ms: number };

function throughProxy(database: TestDatabase, proxy: FaultProxy): string {
  const url = new URL(database.url);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return url.toString();
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('a network partition between the sealer and PostgreSQL', () => {
  let database: TestDatabase;
  let proxy: FaultProxy;
  let partitioned: ServiceProcess;
  const others: ServiceProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    proxy = await FaultProxy.start({ host: POSTGRES.hostname, port: Number(POSTGRES.port || 5432) });
    // The instance behind the proxy starts first and takes the sealer lease; the others follow.
    partitioned = await ServiceProcess.start({ env: { ...ENV, DATABASE_URL: throughProxy(database, proxy) } });
    await partitioned.waitForLog((line) => String(line.msg).includes('sealer lease acquired'));
    for (let index = 0; index < 2; index += 1) others.push(await ServiceProcess.start({ env: { ...ENV, DATABASE_URL: database.url } }));
  }, 120_000);
  afterAll(async () => {
    proxy?.heal();
    for (const service of [partitioned, ...others]) await service?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('stops the partitioned sealer, lets another take over within the bound, answers 503 there, and keeps one history', async () => {
    const admin = await partitioned.token('treasury', { admin: true });
    const acknowledged = new Set<string>();
    const statuses: number[] = [];
    let counter = 0;
    const submit = async (service: ServiceProcess): Promise<Answer> => {
      counter += 1;
      const started = Date.now();
      const response = await fetch(`${service.url}/api/transactions/submit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'idempotency-key': randomBytes(8).toString('hex') },
        body: JSON.stringify({ from: 'treasury', to: `user-${counter % 10}`, amount: 1, token: 'USDG', type: 'mint' }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS + 5000),
      });
      const body = (await response.json()) as Record<string, unknown>;
      statuses.push(response.status);
      if (response.status === 202) acknowledged.add(body.tx_hash as string);
      return { status: response.status, body, ms: Date.now() - started };
    };
    const latestBlock = async (service: ServiceProcess): Promise<number> => {
      const response = await fetch(`${service.url}/api/blocks?limit=1`, { headers: { authorization: `Bearer ${admin}` } });
      return ((await response.json()) as { blocks: Array<{ number: number }> }).blocks[0]!.number;
    };
    const sealedThrough = async (service: ServiceProcess, tx_hash: string): Promise<boolean> => {
      const response = await fetch(`${service.url}/api/transactions/${tx_hash}`, { headers: { authorization: `Bearer ${admin}` } });
      return response.status === 200 && ((await response.json()) as { status: string }).status !== 'pending';
    };

    // Before: every instance takes submissions, the partitioned one seals them.
    for (const service of [partitioned, ...others]) expect((await submit(service)).status).toBe(202);
    const before = await latestBlock(others[0]!);

    // Partition: connections stay open, nothing passes.
    const partitioned_at = Date.now();
    proxy.blackhole();

    // Meanwhile, submissions through the partitioned instance: 503 storage_unavailable within the request timeout.
    const cut_off = Promise.all([submit(partitioned), submit(partitioned), submit(partitioned)]);
    const readiness = fetch(`${partitioned.url}/readyz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });

    // Another instance takes over: a submission through it is sealed within the bound.
    const after_partition = await submit(others[1]!);
    expect(after_partition.status).toBe(202);
    const probe = after_partition.body.tx_hash as string;
    while (!(await sealedThrough(others[0]!, probe))) {
      if (Date.now() - partitioned_at > TAKEOVER_BOUND_MS + QUERY_TIMEOUT_MS) {
        throw new Error(`no takeover within the bound:\n${others.map((service) => service.tail(15)).join('\n')}\n${partitioned.tail(15)}`);
      }
      await delay(100);
    }
    const takeover_ms = Date.now() - partitioned_at;
    const successor = others.find((service) => service.logged('sealer lease acquired'));
    expect(successor, 'no other instance took the sealer lease').toBeDefined();
    const acquired = successor!.logs().find((line) => String(line.msg).includes('sealer lease acquired'))!;
    expect(Number(acquired.time) - partitioned_at).toBeLessThan(TAKEOVER_BOUND_MS);
    // The old sealer learnt that it lost the lease (by its heartbeat or its next ask) before the successor got it.
    const lost = await partitioned.waitForLog((line) => /lease connection stopped answering|cannot ask for the sealer lease|sealer lease lost/.test(String(line.msg)), 1000);
    expect(Number(lost.time)).toBeLessThanOrEqual(Number(acquired.time));
    expect(await latestBlock(others[0]!)).toBeGreaterThan(before);
    for (const answer of await cut_off) {
      expect(answer.ms).toBeLessThan(REQUEST_TIMEOUT_MS);
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.body).toMatchObject({ code: 'storage_unavailable' });
    }
    expect((await readiness).status).toBe(503);

    // Heal: the old sealer stays a follower and takes submissions again.
    proxy.heal();
    const healed_at = Date.now();
    for (;;) {
      const answer = await submit(partitioned);
      if (answer.status === 202) break;
      expect(answer.status).toBe(503);
      expect(Date.now() - healed_at).toBeLessThan(30_000);
      await delay(200);
    }
    for (let index = 0; index < 10; index += 1) await submit(others[index % 2]!);
    await delay(LEASE_TIMEOUT_MS);
    const acquisitions = partitioned.logs().filter((line) => String(line.msg).includes('sealer lease acquired'));
    expect(acquisitions).toHaveLength(1);

    // One holder of the lease, every acknowledged transaction sealed once, the chain audits.
    const client = await connectToSchema(database);
    try {
      const holders = await client.query<{ holders: number }>(
        `SELECT count(*)::int AS holders FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = hashtext($2)::oid`,
        [LOCK_CLASS.sealer, database.postgres!.schema],
      );
      expect(holders.rows[0]?.holders).toBe(1);
    } finally {
      await client.end();
    }
    const store = await database.open();
    try {
      const deadline = Date.now() + 20_000;
      while ((await store.pendingCount()) > 0 && Date.now() < deadline) await delay(100);
      const audit = await auditChain(store);
      for (const tx_hash of acknowledged) expect(audit.sealed.has(tx_hash), tx_hash).toBe(true);
    } finally {
      await store.close();
    }
    expect(statuses.filter((status) => status >= 500 && status !== 503)).toEqual([]);
    expect(takeover_ms).toBeGreaterThan(0);
  }, 120_000);
});
