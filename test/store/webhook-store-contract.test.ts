/**
 * The webhook store's answer to "is any endpoint active?", on both stores (projects sqlite and
 * postgres): the deliverer looks for due endpoints at every new event only while it is yes
 * (src/webhooks/webhook-deliverer.ts), so a wrong no would hold deliveries back until the next poll.
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
});
