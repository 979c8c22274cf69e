/**
 * The event log across a cluster: three real instances on one PostgreSQL schema take 5,000
 * submissions while the sealer is killed with SIGKILL. One consumer reads the stream from `after=0`
 * through the other instances; another is cut at random points and resumes (with Last-Event-ID) on
 * whichever instance is next, the killed one first. Both must see every event exactly once, in
 * sequence, with no gap, with the same bytes; every acknowledged transaction has its accepted event
 * before exactly one outcome; and each block's outcomes come right before its block.sealed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { checkEventOrder, EventConsumer } from '../support/event-consumer.js';
import { signTestToken, TEST_SECRET } from '../support/in-process-tabula.js';
import { sealersOf, ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const INSTANCES = 3;
const SUBMISSIONS = 5000;
const WORKERS = 16;
const ACCOUNTS = 20;
const KILL_AFTER_SUBMISSIONS = 1500;
const REQUEST_TIMEOUT_MS = 10_000;

describe('the event log of a cluster of three instances', () => {
  let database: TestDatabase;
  let instances: ServiceProcess[] = [];
  let store: LedgerStore;
  const run = randomBytes(3).toString('hex');
  const config = loadConfig({ JWT_SECRET: TEST_SECRET });
  const account = (index: number) => `ev${index}-${run}`;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const env = { DATABASE_URL: database.url, JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '200', BLOCK_TXS_MAX: '500', RATE_LIMIT_MAX: '10000000', FAILURE_BUDGET_PER_HOUR: '1000000' };
    instances = await Promise.all(Array.from({ length: INSTANCES }, () => ServiceProcess.start({ env })));
    store = await database.open();
  });

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
    await store?.close();
    await database?.drop();
  });

  async function submit(url: string, token: string, body: Record<string, unknown>): Promise<string | 'refused' | 'unknown'> {
    try {
      const response = await fetch(`${url}/api/transactions/submit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const answer = (await response.json()) as { tx_hash?: string };
      return response.status === 202 ? (answer.tx_hash as string) : 'refused';
    } catch {
      return 'unknown';
    }
  }

  it('delivers every event exactly once, in sequence, to a steady and a resuming consumer while the sealer is killed', async () => {
    const [leader] = await sealersOf(instances);
    expect(leader).toBeDefined();
    const others = instances.filter((instance) => instance !== leader);
    const live = () => instances.filter((instance) => instance.running).map((instance) => instance.url);
    const reader_token = await signTestToken(`reader-${run}`, config, { expires_in_s: 900 });
    const steady = new EventConsumer({ urls: () => others.map((instance) => instance.url), token: reader_token, after: 0 });
    // The resuming consumer starts on the leader, so the SIGKILL lands while it is being delivered to.
    const choppy = new EventConsumer({ urls: () => [leader!.url, ...live().filter((url) => url !== leader!.url)], token: reader_token, after: 0, cut_after_events_max: 500 });
    steady.start();
    choppy.start();

    const admin = await signTestToken(`treasury-${run}`, config, { admin: true, expires_in_s: 900 });
    const tokens = await Promise.all(Array.from({ length: ACCOUNTS }, (_, index) => signTestToken(account(index), config, { expires_in_s: 900 })));
    const acknowledged = new Set<string>();
    let unknown = 0;
    for (let index = 0; index < ACCOUNTS; index += 1) {
      const answer = await submit(instances[index % INSTANCES]!.url, admin, { from: `treasury-${run}`, to: account(index), amount: 40, token: 'TAB', type: 'mint' });
      expect(answer).toMatch(/^0x/);
      acknowledged.add(answer);
    }
    let sent = ACCOUNTS;
    let killed = false;
    const worker = async () => {
      while (sent < SUBMISSIONS) {
        sent += 1;
        if (!killed && sent >= KILL_AFTER_SUBMISSIONS) {
          killed = true;
          await leader!.kill();
        }
        const urls = live();
        const sender = Math.floor(Math.random() * ACCOUNTS);
        const receiver = (sender + 1 + Math.floor(Math.random() * (ACCOUNTS - 1))) % ACCOUNTS;
        const body = { from: account(sender), to: account(receiver), amount: 1 + Math.floor(Math.random() * 20), token: 'TAB', type: 'transfer' };
        const answer = await submit(urls[Math.floor(Math.random() * urls.length)]!, tokens[sender]!, body);
        if (answer === 'unknown') unknown += 1;
        else if (answer !== 'refused') acknowledged.add(answer);
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    expect(killed).toBe(true);

    // Everything acknowledged gets sealed by the new sealer; then both consumers reach the head.
    const deadline = Date.now() + 60_000;
    while ((await store.pendingCount()) > 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const head = await store.eventHead();
    await steady.waitFor(head, 30_000);
    await choppy.waitFor(head, 30_000);
    await steady.stop();
    await choppy.stop();

    const expected = Array.from({ length: head }, (_, index) => index + 1);
    expect(steady.sequences()).toEqual(expected);
    expect(choppy.sequences()).toEqual(expected);
    expect(choppy.events.map((event) => event.json)).toEqual(steady.events.map((event) => event.json));
    expect(choppy.connections).toBeGreaterThan(3);

    checkEventOrder(steady.events, acknowledged);
    const accepted = steady.events.filter((event) => event.type === 'transaction.accepted').length;
    // Nothing invented: only acknowledged submissions, and those whose answer the SIGKILL cut off, were accepted.
    expect(accepted).toBeGreaterThanOrEqual(acknowledged.size);
    expect(accepted - acknowledged.size).toBeLessThanOrEqual(unknown);
  }, 240_000);
});
