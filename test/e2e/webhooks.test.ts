/**
 * Webhooks from the built service (the real process) to a real loopback receiver that verifies every
 * signature with node:crypto, on SQLite and on PostgreSQL: every event arrives at least once and in
 * order; a receiver answering 503, then not listening at all, gets retries (seen in `/deliveries`)
 * and then catches up in order; after a secret rotation a receiver knowing only the new secret
 * verifies; a 127.0.0.2 endpoint is refused without the allow-list; and a SIGKILL of the service
 * during deliveries loses nothing once it is started again on the same data.
 */
import Database from '../../src/store/sqlite/sqlite-driver.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type StoreKind, type TestDatabase } from '../support/test-database.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const TIMEOUT_MS = 60_000;

describe.each(['sqlite', 'postgres'] as StoreKind[])('webhooks from the real process (%s)', (kind) => {
  let database: TestDatabase;
  let service: ServiceProcess;
  let receiver: WebhookReceiver;
  let admin: string;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    receiver = await WebhookReceiver.start();
    service = await ServiceProcess.start({
      ...(kind === 'sqlite' ? { data_dir: database.dir } : {}),
      env: {
        ...(kind === 'postgres' ? { DATABASE_URL: database.url } : {}),
        JWT_SECRET: TEST_SECRET, RATE_LIMIT_MAX: '10000000', BLOCK_INTERVAL_MS: '50',
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_TIMEOUT_MS: '1000',
      },
    });
    admin = await service.token('treasury', { admin: true });
  });
  afterAll(async () => {
    await service?.close();
    await receiver?.close();
    await database?.drop();
  });

  async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  }

  async function mint(count: number, to = 'alice'): Promise<void> {
    for (let index = 0; index < count; index += 1) {
      const answer = await api('POST', '/api/transactions/submit', { from: 'treasury', to, amount: 1, token: 'TAB', type: 'mint' });
      expect(answer.status).toBe(202);
    }
  }

  /** The last sequence of the log, read from the database itself. */
  async function storedHead(): Promise<number> {
    if (kind === 'sqlite') {
      const db = new Database(service.database_path, { readonly: true, fileMustExist: true });
      try {
        return (db.prepare('SELECT last_sequence FROM event_counter').get() as { last_sequence: number }).last_sequence;
      } finally {
        db.close();
      }
    }
    const client = new pg.Client({ connectionString: database.postgres?.url });
    await client.connect();
    try {
      const result = await client.query<{ last_sequence: string }>(`SELECT last_sequence::text FROM ${database.postgres?.schema}.event_counter`);
      return Number(result.rows[0]?.last_sequence);
    } finally {
      await client.end();
    }
  }

  /** Waits until every event after `start` up to the stored head has been received, the last one a block.sealed. */
  async function caughtUp(start: number): Promise<number> {
    let head = 0;
    await expect.poll(async () => {
      head = await storedHead();
      const received = new Set(receiver.received.map((event) => event.sequence));
      return head > start && Array.from({ length: head - start }, (_, index) => start + 1 + index).every((sequence) => received.has(sequence))
        && receiver.received.at(-1)?.type === 'block.sealed';
    }, { timeout: 30_000, interval: 100 }).toBe(true);
    return head;
  }

  /** First arrivals are in sequence order with no gap from `start` (re-sends of an event may follow it). */
  function expectInOrder(start: number, head: number): void {
    const first_arrivals = [...new Set(receiver.received.map((event) => event.sequence))].filter((sequence) => sequence > start && sequence <= head);
    expect(first_arrivals).toEqual(Array.from({ length: head - start }, (_, index) => start + 1 + index));
    expect(receiver.rejected).toEqual([]);
  }

  it('delivers, retries a receiver that is down, rotates the secret, and loses nothing across a SIGKILL', { timeout: 120_000 }, async () => {
    const refused = await api('POST', '/api/webhooks', { url: `http://127.0.0.2:${receiver.port}/hook` });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('webhook_url_refused');

    const created = await api('POST', '/api/webhooks', { url: receiver.url, description: 'e2e' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const start = created.body.last_sequence as number;
    receiver.secrets = [created.body.secret as string];

    // 1. Every event, in order.
    await mint(10);
    let head = await caughtUp(start);
    expectInOrder(start, head);
    for (const event of receiver.received) expect(event.signatures).toHaveLength(1);

    // 2. The receiver answers 503: attempts fail and are retried with backoff; then it recovers.
    receiver.status = 503;
    await mint(3);
    await expect.poll(async () => {
      const attempts = (await api('GET', `/api/webhooks/${id}/deliveries?limit=10`)).body.deliveries as Array<Record<string, unknown>>;
      return attempts.filter((attempt) => attempt.outcome === 'failed' && attempt.response_status === 503).length;
    }, { timeout: TIMEOUT_MS }).toBeGreaterThanOrEqual(3);
    const failing = await api('GET', `/api/webhooks/${id}`);
    expect(failing.body).toMatchObject({ status: 'active', last_sequence: head });
    expect(failing.body.failed_attempts as number).toBeGreaterThanOrEqual(3);
    const attempts = (await api('GET', `/api/webhooks/${id}/deliveries?limit=3`)).body.deliveries as Array<Record<string, unknown>>;
    expect(attempts.every((attempt) => attempt.sequence === head + 1 && typeof attempt.next_attempt_at_ms === 'number')).toBe(true);
    receiver.status = 204;
    head = await caughtUp(start);
    expectInOrder(start, head);

    // 3. The receiver does not listen at all for a while.
    await receiver.close();
    await mint(3);
    await expect.poll(async () => {
      const recent = (await api('GET', `/api/webhooks/${id}/deliveries?limit=10`)).body.deliveries as Array<Record<string, unknown>>;
      return recent.filter((attempt) => attempt.outcome === 'failed' && attempt.response_status === null && attempt.sequence === head + 1).length;
    }, { timeout: TIMEOUT_MS }).toBeGreaterThanOrEqual(2);
    await receiver.listen();
    head = await caughtUp(start);
    expectInOrder(start, head);

    // 4. Rotation: a receiver that knows only the new secret verifies (both signatures are sent).
    const rotated = await api('POST', `/api/webhooks/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    receiver.secrets = [rotated.body.secret as string];
    const before_rotation = receiver.received.length;
    await mint(2);
    head = await caughtUp(start);
    expectInOrder(start, head);
    const after_rotation = receiver.received.slice(before_rotation);
    expect(after_rotation.length).toBeGreaterThan(0);
    for (const event of after_rotation) expect(event.signatures).toHaveLength(2);

    // 5. SIGKILL while deliveries are in flight (each answer held back), then start again on the same data.
    receiver.delay_ms = 100;
    await mint(15);
    await receiver.waitFor((current) => current.received.some((event) => event.sequence > head + 5));
    await service.kill();
    await service.restart();
    admin = await service.token('treasury', { admin: true });
    await mint(2);
    receiver.delay_ms = 0;
    head = await caughtUp(start);
    expectInOrder(start, head);
    // The receiver records an event before it answers, so the cursor moves a moment after the last arrival.
    await expect.poll(async () => (await api('GET', `/api/webhooks/${id}`)).body, { timeout: TIMEOUT_MS, interval: 100 })
      .toMatchObject({ status: 'active', last_sequence: head, failed_attempts: 0 });
  });
});
