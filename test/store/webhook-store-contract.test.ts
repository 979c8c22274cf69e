/**
 * The webhook store's answer to "is any endpoint active?", on both stores (projects sqlite and
 * postgres): the deliverer looks for due endpoints at every new event only while it is yes
 * (src/webhooks/webhook-deliverer.ts), so a wrong no would hold deliveries back until the next poll.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { WebhookEndpoint } from '../../src/webhooks/webhook-store.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

function endpoint(id: string): WebhookEndpoint {
  return {
    id, url: 'https://receiver.invalid/hook', description: '', types: null, accounts: null, secret: 'whsec_test', previous_secret: null,
    previous_secret_expires_at_ms: null, status: 'active', disabled_reason: null, last_sequence: 0, failing_since_ms: null,
    failed_attempts: 0, next_attempt_at_ms: 0, lease_owner: null, lease_expires_at_ms: null, created_at_ms: 0, updated_at_ms: 0,
  };
}

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
      expect(await webhooks.createEndpoint(endpoint('first'), 10)).toBe(true);
      expect(await webhooks.createEndpoint(endpoint('second'), 10)).toBe(true);
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
