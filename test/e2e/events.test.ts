/**
 * The event log of the built service on its embedded SQLite store: a consumer that reads the stream
 * from `after=0` — one steadily, one cut at random points and resuming with Last-Event-ID — while
 * submissions run and the process is killed with SIGKILL and started again on the same database.
 * Nothing acknowledged loses its events, nothing is delivered twice, and the sequence has no gap.
 */
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEventOrder, EventConsumer } from '../support/event-consumer.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';

const SUBMISSIONS = 1500;
const KILL_AFTER_SUBMISSIONS = 600;
const WORKERS = 8;

describe('the event log across a SIGKILL (SQLite)', () => {
  let service: ServiceProcess;

  beforeAll(async () => {
    service = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '100', BLOCK_TXS_MAX: '300', RATE_LIMIT_MAX: '10000000', FAILURE_BUDGET_PER_HOUR: '1000000' } });
  });
  afterAll(async () => {
    await service?.close();
  });

  function storedHead(): number {
    const db = new Database(service.database_path, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT last_sequence FROM event_counter').get() as { last_sequence: number }).last_sequence;
    } finally {
      db.close();
    }
  }

  it('delivers every event exactly once and in sequence, before and after a crash', async () => {
    const reader = await service.token('reader');
    const admin = await service.token('treasury', { admin: true });
    const steady = new EventConsumer({ urls: () => [service.url], token: reader, after: 0, retry_delay_ms: 200 });
    const choppy = new EventConsumer({ urls: () => [service.url], token: reader, after: 0, cut_after_events_max: 300, retry_delay_ms: 200 });
    steady.start();
    choppy.start();
    // Both hold a stream before the traffic (and the crash) begins, so the crash cuts a live connection
    // whatever the machine's load.
    for (const deadline = Date.now() + 20_000; steady.connections < 1 || choppy.connections < 1;) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const acknowledged = new Set<string>();
    let unknown = 0;
    let sent = 0;
    let crashed: Promise<void> | null = null;
    const submit = async (body: Record<string, unknown>): Promise<void> => {
      try {
        const response = await fetch(`${service.url}/api/transactions/submit`, {
          method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        const answer = (await response.json()) as { tx_hash?: string };
        if (response.status === 202) acknowledged.add(answer.tx_hash as string);
      } catch {
        unknown += 1;
      }
    };
    const worker = async () => {
      while (sent < SUBMISSIONS) {
        sent += 1;
        if (sent === KILL_AFTER_SUBMISSIONS) {
          crashed = (async () => {
            await service.kill();
            await service.restart();
          })();
        }
        // Until the new process listens a submission would fail at once (it is spawned, and counts as
        // running, before it listens), and the rest could all be spent before it is up, leaving no event
        // after the crash for the steady stream to reconnect for. Once restarted, this await is immediate.
        if (crashed !== null) await crashed;
        const user = `user-${sent % 37}`;
        await submit(sent % 5 === 0
          ? { from: user, to: 'elsewhere', amount: 1000, token: 'USDG', type: 'transfer' }
          : { from: 'treasury', to: user, amount: 1 + (sent % 7), token: 'USDG', type: 'mint' });
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    await crashed;

    // Wait until every acknowledged transaction has its outcome, then until both consumers have the whole log.
    const deadline = Date.now() + 30_000;
    const outcomes = () => new Set(steady.events.filter((event) => event.type !== 'transaction.accepted' && event.type !== 'block.sealed').map((event) => event.data.tx_hash));
    while ([...acknowledged].some((hash) => !outcomes().has(hash))) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const head = storedHead();
    await steady.waitFor(head, 20_000);
    await choppy.waitFor(head, 20_000);
    await steady.stop();
    await choppy.stop();

    const expected = Array.from({ length: head }, (_, index) => index + 1);
    expect(steady.sequences()).toEqual(expected);
    expect(choppy.sequences()).toEqual(expected);
    expect(choppy.events.map((event) => event.json)).toEqual(steady.events.map((event) => event.json));
    expect(steady.connections).toBeGreaterThanOrEqual(2);
    checkEventOrder(steady.events, acknowledged);
    const accepted = steady.events.filter((event) => event.type === 'transaction.accepted').length;
    expect(accepted - acknowledged.size).toBeGreaterThanOrEqual(0);
    expect(accepted - acknowledged.size).toBeLessThanOrEqual(unknown);
  }, 180_000);
});
