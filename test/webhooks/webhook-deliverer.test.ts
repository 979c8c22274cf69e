/**
 * The deliverer looks for due endpoints at every new event only while an endpoint is active: with none,
 * the store is not asked at every group commit (a claim per commit was 1.5 % of a SQLite submission
 * profile). The poll learns that one became active (another instance may add it), and an admin's change
 * looks at once. Delivery itself is tested end to end (test/e2e/webhooks.test.ts, test/http/webhooks.test.ts).
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { EncodedEvent, EventFeed } from '../../src/events/event.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { failingWorkersMax, WebhookDeliverer } from '../../src/webhooks/webhook-deliverer.js';
import type { SendResult, WebhookRequest, WebhookSender } from '../../src/webhooks/webhook-sender.js';
import type { WebhookEndpoint } from '../../src/webhooks/webhook-store.js';
import { testEndpoint } from '../support/webhook-endpoints.js';

/** A feed whose head moves when the test says, with nothing to read. */
class TestFeed implements EventFeed {
  private sequence = 0;
  private readonly listeners = new Set<(head: number) => void>();
  head(): number {
    return this.sequence;
  }
  async read(_after = 0, _limit = 0): Promise<EncodedEvent[]> {
    return [];
  }
  onAdvance(listener: (head: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  advance(): void {
    this.sequence += 1;
    for (const listener of this.listeners) listener(this.sequence);
  }
}

/** No endpoint in these tests is ever due (their last sequence is ahead of the feed), so nothing is sent. */
const NEVER_SENT = { send: async () => { throw new Error('nothing is sent in this test'); } } as unknown as WebhookSender;

/** An endpoint whose cursor is ahead of the test feed: never due, so nothing is claimed for it or sent. */
function endpoint(id: string, status: WebhookEndpoint['status']): WebhookEndpoint {
  return testEndpoint(id, { status, disabled_reason: status === 'active' ? null : 'disabled_by_admin', last_sequence: 1_000_000 });
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('the webhook deliverer at new events', () => {
  const stops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  /** A deliverer on a new SQLite store whose claims are counted; the poll never fires by itself in a test. */
  async function deliverer(endpoints: readonly WebhookEndpoint[]) {
    const store = SqliteStore.open({ path: ':memory:' });
    const webhooks = store.webhooks();
    for (const added of endpoints) expect(await webhooks.createEndpoint(added, 10)).toBe(true);
    const counted = { claims: 0 };
    const claimDue = webhooks.claimDue.bind(webhooks);
    webhooks.claimDue = (...args) => {
      counted.claims += 1;
      return claimDue(...args);
    };
    const feed = new TestFeed();
    const options = { concurrency_max: 4, retry_base_ms: 1000, retry_cap_ms: 60_000, retry_period_s: 3600, lease_ms: 30_000, poll_interval_ms: 3_600_000 };
    const instance = new WebhookDeliverer(webhooks, feed, NEVER_SENT, { now_ms: () => Date.now() }, pino({ level: 'silent' }), options);
    instance.start();
    stops.push(async () => {
      await instance.stop();
      await store.close();
    });
    await settle();
    return { instance, feed, counted, webhooks };
  }

  it('asks the store for nothing at new events while no endpoint is active', async () => {
    const { feed, counted } = await deliverer([endpoint('disabled', 'disabled')]);
    const after_start = counted.claims;
    expect(after_start).toBe(1);
    for (let event = 0; event < 50; event += 1) {
      feed.advance();
      await settle();
    }
    expect(counted.claims).toBe(after_start);
  });

  it('looks at every new event while an endpoint is active', async () => {
    const { feed, counted } = await deliverer([endpoint('active', 'active')]);
    const after_start = counted.claims;
    for (let event = 0; event < 5; event += 1) {
      feed.advance();
      await settle();
    }
    expect(counted.claims).toBe(after_start + 5);
  });

  it('looks at once after an admin changes an endpoint, and at new events after it', async () => {
    const { instance, feed, counted, webhooks } = await deliverer([]);
    const after_start = counted.claims;
    feed.advance();
    await settle();
    expect(counted.claims).toBe(after_start);
    expect(await webhooks.createEndpoint(endpoint('added', 'active'), 10)).toBe(true);
    instance.wake();
    await settle();
    expect(counted.claims).toBe(after_start + 1);
    feed.advance();
    await settle();
    expect(counted.claims).toBe(after_start + 2);
  });
});

/** A feed of `block.sealed`-shaped events 1..head. */
class EventsFeed extends TestFeed {
  override async read(after: number, limit: number): Promise<EncodedEvent[]> {
    const events: EncodedEvent[] = [];
    for (let sequence = after + 1; sequence <= Math.min(this.head(), after + limit); sequence += 1) {
      events.push({ sequence, id: `evt_${sequence}_000000000000`, type: 'block.sealed', occurred_at: 0, accounts: [], json: '{}' });
    }
    return events;
  }
}

describe('the webhook deliverer with receivers that hang', () => {
  it('keeps a worker for endpoints that answer: failing ones hold at most three quarters of them', async () => {
    expect([1, 2, 3, 4, 16].map(failingWorkersMax)).toEqual([1, 2, 3, 3, 12]);
    const store = SqliteStore.open({ path: ':memory:' });
    const webhooks = store.webhooks();
    const now = Date.now();
    // Six endpoints already failing, due before the healthy one: by due time alone they would take all four workers.
    for (let index = 0; index < 6; index += 1) {
      const failing = testEndpoint(`failing-${index}`, { url: `https://receiver.invalid/failing-${index}`, failed_attempts: 1, failing_since_ms: now, next_attempt_at_ms: index });
      expect(await webhooks.createEndpoint(failing, 10)).toBe(true);
    }
    expect(await webhooks.createEndpoint(testEndpoint('healthy', { url: 'https://receiver.invalid/healthy', next_attempt_at_ms: 100 }), 10)).toBe(true);
    let hanging = 0;
    let hanging_max = 0;
    const delivered: number[] = [];
    const sender = {
      send: (request: WebhookRequest, signal?: AbortSignal): Promise<SendResult> => {
        if (request.url.endsWith('/healthy')) {
          delivered.push(Number(request.headers['webhook-id']?.split('_')[1]));
          return Promise.resolve({ outcome: 'delivered', response_status: 200, latency_ms: 1, error: null });
        }
        hanging += 1;
        hanging_max = Math.max(hanging_max, hanging);
        // A receiver that never answers: the send ends only when the deliverer stops.
        return new Promise((resolve) => signal?.addEventListener('abort', () => {
          hanging -= 1;
          resolve({ outcome: 'failed', response_status: null, latency_ms: 1, error: 'aborted' });
        }));
      },
    } as unknown as WebhookSender;
    const feed = new EventsFeed();
    feed.advance();
    const options = { concurrency_max: 4, retry_base_ms: 1000, retry_cap_ms: 60_000, retry_period_s: 3600, lease_ms: 30_000, poll_interval_ms: 3_600_000 };
    const instance = new WebhookDeliverer(webhooks, feed, sender, { now_ms: () => Date.now() }, pino({ level: 'silent' }), options);
    try {
      instance.start();
      await settle();
      expect(delivered).toEqual([1]);
      expect(hanging).toBe(3);
      for (let event = 2; event <= 4; event += 1) {
        feed.advance();
        await settle();
      }
      expect(delivered).toEqual([1, 2, 3, 4]);
      expect(hanging_max).toBe(3);
    } finally {
      await instance.stop();
      await store.close();
    }
  });
});

