/**
 * The webhook store's answer to "is any endpoint active?", on both stores (projects sqlite and
 * postgres): the deliverer looks for due endpoints at every new event only while it is yes
 * (src/webhooks/webhook-deliverer.ts), so a wrong no would hold deliveries back until the next poll.
 * And the order of its claims: endpoints that are not failing first, failing ones up to a limit.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { testEndpoint } from '../support/webhook-endpoints.js';

describe('webhook store: whether any endpoint is active', () => {
  let database: TestDatabase | null = null;
  afterEach(async () => {
    await database?.drop();
    database = null;
  });

  it('is no without endpoints, yes once one is active, and no again when every one is disabled or deleted', async () => {
    database = await createTestDatabase();
    const store = (await database.open()) as SqliteStore | PostgresStore;
    try {
      const webhooks = store.webhooks();
      expect(await webhooks.hasActiveEndpoints()).toBe(false);
      expect(await webhooks.createEndpoint(testEndpoint('first'), 10)).toBe(true);
      expect(await webhooks.createEndpoint(testEndpoint('second'), 10)).toBe(true);
      expect(await webhooks.hasActiveEndpoints()).toBe(true);
      await webhooks.updateEndpoint('first', { status: 'disabled', disabled_reason: 'disabled_by_admin' });
      expect(await webhooks.hasActiveEndpoints()).toBe(true);
      expect(await webhooks.deleteEndpoint('second')).toBe(true);
      expect(await webhooks.hasActiveEndpoints()).toBe(false);
      await webhooks.updateEndpoint('first', { status: 'active', disabled_reason: null });
      expect(await webhooks.hasActiveEndpoints()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('claims endpoints that are not failing first, and at most failing_limit failing ones', async () => {
    database = await createTestDatabase();
    const store = (await database.open()) as SqliteStore | PostgresStore;
    try {
      const webhooks = store.webhooks();
      // Failing endpoints due long before the healthy ones: by due time alone they would be claimed first.
      for (let index = 0; index < 6; index += 1) {
        expect(await webhooks.createEndpoint(testEndpoint(`failing-${index}`, { failed_attempts: 1 + index, failing_since_ms: 1, next_attempt_at_ms: index }), 20)).toBe(true);
      }
      for (let index = 0; index < 2; index += 1) {
        expect(await webhooks.createEndpoint(testEndpoint(`healthy-${index}`, { next_attempt_at_ms: 100 + index }), 20)).toBe(true);
      }
      const ids = (claimed: Array<{ id: string }>) => claimed.map((endpoint) => endpoint.id).sort();
      expect(ids(await webhooks.claimDue('one', 1000, 60_000, 10, 4, 1))).toEqual(['failing-0', 'healthy-0', 'healthy-1']);
      // Leased ones are not claimed again; no room for failing ones claims none of them.
      expect(ids(await webhooks.claimDue('two', 1000, 60_000, 10, 4, 0))).toEqual([]);
      expect(ids(await webhooks.claimDue('three', 1000, 60_000, 10, 2, 5))).toEqual(['failing-1', 'failing-2']);
      expect(ids(await webhooks.claimDue('four', 1000, 60_000, 10, 10, 10))).toEqual(['failing-3', 'failing-4', 'failing-5']);
    } finally {
      await store.close();
    }
  });
});
