/** A webhook endpoint row for store-level tests: active, never attempted, pointing at a `.invalid` host; `changes` override fields. */
import type { WebhookEndpoint } from '../../src/webhooks/webhook-store.js';

export function testEndpoint(id: string, changes: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id, url: 'https://receiver.invalid/hook', description: '', types: null, accounts: null, secret: 'whsec_test', previous_secret: null,
    previous_secret_expires_at_ms: null, status: 'active', disabled_reason: null, last_sequence: 0, failing_since_ms: null,
    failed_attempts: 0, next_attempt_at_ms: 0, lease_owner: null, lease_expires_at_ms: null, created_at_ms: 0, updated_at_ms: 0,
    ...changes,
  };
}
