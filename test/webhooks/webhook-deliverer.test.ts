/**
 * The deliverer looks for due endpoints at every new event only while an endpoint is active: with none,
 * the store is not asked at every group commit (a claim per commit was 1.5 % of a SQLite submission
 * profile). The poll learns that one became active (another instance may add it), and an admin's change
 * looks at once. Delivery itself is tested end to end (test/e2e/webhooks.test.ts, test/http/webhooks.test.ts).
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventFeed } from '../../src/events/event.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { WebhookDeliverer } from '../../src/webhooks/webhook-deliverer.js';
import type { WebhookSender } from '../../src/webhooks/webhook-sender.js';
import type { WebhookEndpoint } from '../../src/webhooks/webhook-store.js';
import { testEndpoint } from '../support/webhook-endpoints.js';

/** A feed whose head moves when the test says, with nothing to read. */
class TestFeed implements EventFeed {
  private sequence = 0;
  private readonly listeners = new Set<(head: number) => void>();
  head(): number {
    return this.sequence;
  }
  async read(): Promise<never[]> {
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
