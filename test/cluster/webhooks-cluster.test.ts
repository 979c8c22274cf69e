/**
 * Webhooks from two real instances on one PostgreSQL schema: each endpoint is delivered by one
 * instance at a time (its receiver never sees two requests at once, nor an event twice, in normal
 * operation), and when the instance holding an endpoint's lease is killed with SIGKILL during
 * deliveries, the other takes the endpoint over once the lease expires and every event arrives.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const ENDPOINTS = 2;

describe('webhooks from two instances on PostgreSQL', () => {
  let database: TestDatabase;
  let instances: ServiceProcess[] = [];
  let receivers: WebhookReceiver[] = [];
  let client: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    receivers = await Promise.all(Array.from({ length: ENDPOINTS }, () => WebhookReceiver.start()));
    const env = {
      DATABASE_URL: database.url, JWT_SECRET: TEST_SECRET, RATE_LIMIT_MAX: '10000000', BLOCK_INTERVAL_MS: '50',
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_TIMEOUT_MS: '1000',
    };
    instances = await Promise.all([ServiceProcess.start({ env }), ServiceProcess.start({ env })]);
    client = new pg.Client({ connectionString: database.postgres?.url });
    await client.connect();
    await client.query(`SET search_path TO ${database.postgres?.schema}`);
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await client?.end();
    await database?.drop();
  });

  async function api(instance: ServiceProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const token = await instance.token('treasury', { admin: true });
    const response = await fetch(`${instance.url}${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  async function mint(instance: ServiceProcess, count: number): Promise<void> {
    for (let index = 0; index < count; index += 1) {
      expect((await api(instance, 'POST', '/api/transactions/submit', { from: 'treasury', to: `u${index % 5}`, amount: 1, token: 'TAB', type: 'mint' })).status).toBe(202);
    }
  }

  async function storedHead(): Promise<number> {
    return Number((await client.query<{ last_sequence: string }>('SELECT last_sequence::text FROM event_counter')).rows[0]?.last_sequence);
  }

  async function allReceived(starts: number[]): Promise<void> {
    await expect.poll(async () => {
      const head = await storedHead();
      return receivers.every((receiver, index) => {
        const received = new Set(receiver.received.map((event) => event.sequence));
        const start = starts[index] as number;
        return Array.from({ length: head - start }, (_, offset) => start + 1 + offset).every((sequence) => received.has(sequence))
          && receiver.received.at(-1)?.type === 'block.sealed';
      });
    }, { timeout: 60_000, interval: 200 }).toBe(true);
  }

  it('delivers each endpoint from one instance at a time, and takes a killed instance\'s endpoints over', { timeout: 180_000 }, async () => {
    const [first, second] = instances as [ServiceProcess, ServiceProcess];
    const starts: number[] = [];
    const ids: string[] = [];
    for (const [index, receiver] of receivers.entries()) {
      const created = await api(index === 0 ? first : second, 'POST', '/api/webhooks', { url: receiver.url });
      expect(created.status).toBe(201);
      receiver.secrets = [created.body.secret as string];
      receiver.delay_ms = 20;
      starts.push(created.body.last_sequence as number);
      ids.push(created.body.id as string);
    }

    // Normal operation: submissions through both instances, both instances delivering.
    await Promise.all([mint(first, 20), mint(second, 20)]);
    await allReceived(starts);
    for (const receiver of receivers) {
      expect(receiver.concurrent_max).toBe(1);
      expect(receiver.received.length).toBe(receiver.distinctIds().length);
      expect(receiver.rejected).toEqual([]);
    }

    // Hold answers back so that deliveries are in flight, find who holds the first endpoint's lease, and kill it.
    for (const receiver of receivers) receiver.delay_ms = 150;
    await mint(first, 30);
    let owner: string | null = null;
    await expect.poll(async () => {
      owner = (await client.query<{ lease_owner: string | null }>('SELECT lease_owner FROM webhook_endpoints WHERE id = $1', [ids[0]])).rows[0]?.lease_owner ?? null;
      return owner;
    }, { timeout: 30_000, interval: 20 }).not.toBeNull();
    // A lease is `<deliverer owner>/<claim number>`; each instance logs its owner at start.
    const holder = instances.find((instance) => instance.logs().some((line) => line.msg === 'webhook deliverer started' && String(owner).startsWith(`${String(line.owner)}/`)));
    expect(holder).toBeDefined();
    const survivor = instances.find((instance) => instance !== holder) as ServiceProcess;
    const received_before_kill = receivers[0]?.received.length ?? 0;
    await holder?.kill();
    await mint(survivor, 5);
    for (const receiver of receivers) receiver.delay_ms = 0;
    await allReceived(starts);
    expect(receivers[0]?.received.length).toBeGreaterThan(received_before_kill);
    // The cursor is written just after the receiver answers.
    const head = await storedHead();
    await expect.poll(async () => Number((await client.query<{ last_sequence: string }>('SELECT last_sequence::text FROM webhook_endpoints WHERE id = $1', [ids[0]])).rows[0]?.last_sequence)).toBe(head);
    const lease_owner = (await client.query<{ lease_owner: string | null }>('SELECT lease_owner FROM webhook_endpoints WHERE id = $1', [ids[0]])).rows[0]?.lease_owner;
    expect(String(lease_owner)).not.toMatch(new RegExp(`^${String(owner).split('/')[0]}/`));
    for (const receiver of receivers) {
      const first_arrivals = [...new Set(receiver.received.map((event) => event.sequence))];
      expect(first_arrivals).toEqual([...first_arrivals].sort((a, b) => a - b));
      expect(receiver.rejected).toEqual([]);
    }
  });
});
