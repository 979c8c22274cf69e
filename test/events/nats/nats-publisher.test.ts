/**
 * Publishing the event log to NATS JetStream, end to end: the real service process (`dist/main.js`)
 * and the real local nats-server, each test on a stream and subjects of its own, deleted after it.
 * A real ordered consumer must get every event of the log exactly once, in sequence order, with the
 * same bytes as `GET /api/events`:
 * - across a publisher killed with SIGKILL mid-publishing and restarted on the same data;
 * - while NATS itself is stopped (the ledger keeps serving, `/readyz` stays 200, the lag shows on
 *   `/metrics`, one warning in the log) and after it is started again (publishing catches up);
 * - with two instances on one PostgreSQL database, exactly one of which publishes (the stream holds as
 *   many messages as the log has events), and the other takes over when the publisher dies.
 * The file's tests run one after the other: one of them stops the NATS server every test here uses.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { EventConsumer, checkEventOrder } from '../../support/event-consumer.js';
import { signTestToken, TEST_SECRET } from '../../support/in-process-tabula.js';
import {
  createStream, deleteStream, restoreNatsServer, stopNatsServer, StreamConsumer, streamMessageCount, TEST_NATS_URL, uniqueNatsNames, type StreamedEvent,
} from '../../support/jetstream.js';
import { ServiceProcess } from '../../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../../support/test-database.js';

const METRICS_TOKEN = 'nats-test-metrics-token';
const REQUEST_TIMEOUT_MS = 10_000;
const CATCH_UP_TIMEOUT_MS = 30_000;
/** How long publishing must stay caught up, with the same head, to count as settled (longer than a hub's poll). */
const SETTLED_MS = 1500;

type Metrics = { head: number; lag: number; active: number };

describe.sequential('publishing the event log to NATS JetStream', () => {
  const cleanups: Array<() => Promise<void>> = [];
  const run = randomBytes(3).toString('hex');
  const config = loadConfig({ JWT_SECRET: TEST_SECRET });
  const treasury = `treasury-${run}`;

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  function serviceEnv(names: { stream: string; subject_prefix: string }, extra: Record<string, string> = {}): Record<string, string> {
    return {
      JWT_SECRET: TEST_SECRET, METRICS_TOKEN, RATE_LIMIT_MAX: '10000000', BLOCK_INTERVAL_MS: '50',
      EVENTS_NATS_URL: TEST_NATS_URL, EVENTS_NATS_STREAM: names.stream, EVENTS_NATS_SUBJECT_PREFIX: names.subject_prefix,
      ...extra,
    };
  }

  async function startService(env: Record<string, string>): Promise<ServiceProcess> {
    const service = await ServiceProcess.start({ env });
    cleanups.push(() => service.close());
    return service;
  }

  async function submitMints(url: () => string, count: number, in_flight: number, tag: string): Promise<string[]> {
    const admin = await signTestToken(treasury, config, { admin: true, expires_in_s: 600 });
    const accepted: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const index = next;
        next += 1;
        const response = await fetch(`${url()}/api/transactions/submit`, {
          method: 'POST',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          body: JSON.stringify({ from: treasury, to: `nats-${run}-${index % 7}`, amount: 1, token: 'TAB', type: 'mint', metadata: { tag, index } }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        }).catch(() => null);
        if (response === null) continue; // in flight when the service died
        const body = (await response.json()) as { tx_hash?: string };
        expect(response.status, JSON.stringify(body)).toBe(202);
        accepted.push(body.tx_hash as string);
      }
    };
    await Promise.all(Array.from({ length: in_flight }, worker));
    return accepted;
  }

  async function metricsOf(service: ServiceProcess): Promise<Metrics> {
    const response = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    expect(response.status).toBe(200);
    const text = await response.text();
    const value = (name: string) => {
      const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
      if (line === undefined) throw new Error(`${name} is not on /metrics`);
      return Number(line.slice(name.length + 1));
    };
    return { head: value('tabula_events_head_sequence'), lag: value('tabula_events_publish_lag'), active: value('tabula_events_publisher_active') };
  }

  /** Waits until nothing is pending and the stream holds as many messages as the log has events; returns that count. */
  async function waitUntilPublished(services: ServiceProcess[], stream: string): Promise<number> {
    const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
    let last = '';
    // Caught up, and still so with the same head a while later: a hub learns of the store's newest
    // events by a signal or its 1 s poll, so "nothing pending" can come a little before the last events.
    let settled: { head: number; since_ms: number } | null = null;
    for (;;) {
      const metrics = await Promise.all(services.map(metricsOf));
      const head = Math.max(...metrics.map((entry) => entry.head));
      const count = await streamMessageCount(stream).catch(() => -1);
      const pending = await pendingCount(services[0] as ServiceProcess);
      last = JSON.stringify({ metrics, count, pending });
      const caught_up = pending === 0 && head > 0 && count === head && metrics.every((entry) => entry.head === head && entry.lag === 0);
      const previous = settled as { head: number; since_ms: number } | null;
      settled = !caught_up ? null : previous?.head === head ? previous : { head, since_ms: Date.now() };
      if (settled !== null && Date.now() - settled.since_ms >= SETTLED_MS) return head;
      if (Date.now() > deadline) throw new Error(`publishing did not catch up within ${CATCH_UP_TIMEOUT_MS} ms: ${last}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async function pendingCount(service: ServiceProcess): Promise<number> {
    const response = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const line = (await response.text()).split('\n').find((candidate) => candidate.startsWith('tabula_pending_transactions '));
    return Number(line?.split(' ')[1] ?? 'NaN');
  }

  /** Every event of the log, as `GET /api/events?after=0` sends them. */
  async function logEvents(service: ServiceProcess, head: number) {
    const consumer = new EventConsumer({ urls: () => [service.url], token: await signTestToken(`reader-${run}`, config, { expires_in_s: 600 }), after: 0 });
    consumer.start();
    try {
      await consumer.waitFor(head, CATCH_UP_TIMEOUT_MS);
    } finally {
      await consumer.stop();
    }
    expect(consumer.sequences()).toEqual(Array.from({ length: head }, (_, index) => index + 1));
    return consumer.events;
  }

  /** The stream holds the log: each event once, in sequence order, on its subject, with its id and bytes. */
  function expectStreamHoldsLog(messages: readonly StreamedEvent[], log: Awaited<ReturnType<typeof logEvents>>, subject_prefix: string, accepted: ReadonlySet<string>): void {
    expect(new Set(messages.map((message) => message.msg_id)).size).toBe(messages.length);
    expect(messages.map((message) => Number(message.tabula_sequence))).toEqual(log.map((event) => event.sequence));
    expect(messages.map((message) => message.msg_id)).toEqual(log.map((event) => event.id));
    expect(messages.map((message) => message.subject)).toEqual(log.map((event) => `${subject_prefix}.${event.type}`));
    expect(messages.map((message) => message.body)).toEqual(log.map((event) => event.json));
    expect(messages.map((message) => message.stream_sequence)).toEqual(log.map((_, index) => index + 1));
    checkEventOrder(log, accepted);
  }

  async function consumeAll(stream: string, count: number): Promise<StreamedEvent[]> {
    const consumer = await StreamConsumer.open(stream);
    try {
      await consumer.waitForCount(count, CATCH_UP_TIMEOUT_MS);
      await new Promise((resolve) => setTimeout(resolve, 200)); // anything beyond `count` would show now
      return [...consumer.messages];
    } finally {
      await consumer.close();
    }
  }

  it('a JetStream consumer gets every event once, in order, across a publisher killed with SIGKILL', { timeout: 120_000 }, async () => {
    const names = uniqueNatsNames();
    cleanups.push(() => deleteStream(names.stream));
    // The operator made the stream; the service publishes into it.
    await createStream(names.stream, names.subject_prefix);
    const consumer = await StreamConsumer.open(names.stream);
    cleanups.push(() => consumer.close());
    const service = await startService(serviceEnv(names));

    // Killed in the middle of a burst: submissions in flight, blocks being sealed, events being published.
    const submitting = submitMints(() => service.url, 400, 8, 'before-kill');
    await consumer.waitForCount(60, CATCH_UP_TIMEOUT_MS);
    expect(await service.kill()).toEqual({ code: null, signal: 'SIGKILL' });
    const published_at_kill = consumer.messages.length;
    const first = await submitting;
    expect(first.length).toBeLessThan(400);

    await service.restart();
    const second = await submitMints(() => service.url, 120, 8, 'after-restart');
    const head = await waitUntilPublished([service], names.stream);
    await consumer.waitForCount(head, CATCH_UP_TIMEOUT_MS);
    await new Promise((resolve) => setTimeout(resolve, 200));

    // The restarted publisher resumed after the last event the stream held (not from the start).
    const resumes = service.logs().filter((line) => line.msg === 'publishing events to NATS').map((line) => line.resume_after as number);
    expect(resumes).toHaveLength(2);
    expect(resumes[0]).toBe(0);
    expect(resumes[1]).toBeGreaterThanOrEqual(published_at_kill);
    expect(resumes[1]).toBeLessThan(head);
    const log = await logEvents(service, head);
    expectStreamHoldsLog(consumer.messages, log, names.subject_prefix, new Set([...first, ...second]));
  });

  it('keeps serving while NATS is down, shows the lag on /metrics, and catches up when NATS is back', { timeout: 180_000 }, async () => {
    const names = uniqueNatsNames();
    cleanups.push(() => deleteStream(names.stream));
    // No stream yet: the service creates it.
    const service = await startService(serviceEnv(names));
    const before = await submitMints(() => service.url, 20, 4, 'before-outage');
    // Sealed first, so that no outcome of these is still to come when NATS goes away.
    for (const deadline = Date.now() + CATCH_UP_TIMEOUT_MS; (await pendingCount(service)) > 0;) {
      if (Date.now() > deadline) throw new Error('the submissions before the outage were not sealed');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const head_before = await waitUntilPublished([service], names.stream);

    let during: string[] = [];
    try {
      await stopNatsServer();
      during = await submitMints(() => service.url, 40, 4, 'during-outage');
      // The ledger goes on: the submissions above were accepted, and they get sealed.
      const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
      let metrics = await metricsOf(service);
      while (metrics.head < head_before + 2 * during.length + 1 || (await pendingCount(service)) > 0) {
        if (Date.now() > deadline) throw new Error(`the ledger did not seal while NATS was down: ${JSON.stringify(metrics)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        metrics = await metricsOf(service);
      }
      // Everything committed since NATS went away is behind: at least each outage submission's acceptance
      // and outcome, at most all that came after what was published before.
      expect(metrics.lag).toBeGreaterThanOrEqual(2 * during.length);
      expect(metrics.lag).toBeLessThanOrEqual(metrics.head - head_before);
      expect(metrics.active).toBe(1);
      expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
      // Several retries failed by now, but one warning covers them (at most one a minute).
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const warnings = service.logs().filter((line) => String(line.msg).startsWith('publishing events to NATS failed'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.failures).toBe(1);
    } finally {
      await restoreNatsServer();
    }

    const head = await waitUntilPublished([service], names.stream);
    const recovered = await service.waitForLog((line) => String(line.msg).startsWith('NATS answers again'));
    expect(recovered.failures).toBeGreaterThan(1);
    const log = await logEvents(service, head);
    expectStreamHoldsLog(await consumeAll(names.stream, head), log, names.subject_prefix, new Set([...before, ...during]));
  });

  it('on PostgreSQL exactly one of two instances publishes, and the other takes over when it dies', { timeout: 180_000 }, async () => {
    const names = uniqueNatsNames();
    cleanups.push(() => deleteStream(names.stream));
    const database: TestDatabase = await createTestDatabase('postgres');
    cleanups.push(() => database.drop());
    const env = serviceEnv(names, { DATABASE_URL: database.url, BLOCK_INTERVAL_MS: '100' });
    const instances = [await startService(env), await startService(env)];

    let turn = 0;
    const nextUrl = () => (instances[turn++ % instances.length] as ServiceProcess).url;
    const first = await submitMints(nextUrl, 150, 8, 'two-instances');
    await waitUntilPublished(instances, names.stream);
    const actives = await Promise.all(instances.map(async (instance) => (await metricsOf(instance)).active));
    expect(actives.sort()).toEqual([0, 1]);
    expect(instances.filter((instance) => instance.logged('events publisher lease acquired'))).toHaveLength(1);

    // The publisher dies; the other instance takes the lease and goes on from where the stream ends.
    const publisher = instances.find((instance) => instance.logged('events publisher lease acquired')) as ServiceProcess;
    const survivor = instances.find((instance) => instance !== publisher) as ServiceProcess;
    await publisher.kill();
    const second = await submitMints(() => survivor.url, 100, 8, 'after-takeover');
    const head = await waitUntilPublished([survivor], names.stream);
    expect((await metricsOf(survivor)).active).toBe(1);

    // No duplicate stored: the stream holds exactly the log, each event once.
    expect(await streamMessageCount(names.stream)).toBe(head);
    const log = await logEvents(survivor, head);
    expectStreamHoldsLog(await consumeAll(names.stream, head), log, names.subject_prefix, new Set([...first, ...second]));
  });
});
