/**
 * The webhook tables on the ledger's PostgreSQL database (the ledger store's pool). Due endpoints are
 * leased with `FOR UPDATE SKIP LOCKED`, so instances claiming at once never take the same endpoint,
 * and every write of a deliverer is fenced by its owner id (see webhook-store.ts).
 */
import type pg from 'pg';
import { ATTEMPTS_KEPT_PER_ENDPOINT, type DeliveryAttempt, type EndpointChanges, type NewAttempt, type WebhookEndpoint, type WebhookStore } from '../../webhooks/webhook-store.js';
import { ATTEMPT_COLUMNS, attemptValues, changeColumns, ENDPOINT_COLUMNS, endpointValues, toAttempt, toEndpoint } from '../webhook-rows.js';
import { inTransaction } from './transaction.js';

const placeholders = (count: number, from = 1) => Array.from({ length: count }, (_, index) => `$${index + from}`).join(', ');

const SQL = {
  // Creations queue on this lock, so that two at once cannot both pass the limit.
  lock: 'LOCK TABLE webhook_endpoints IN SHARE ROW EXCLUSIVE MODE',
  count: 'SELECT COUNT(*)::int AS count FROM webhook_endpoints',
  anyActive: "SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE status = 'active') AS active",
  insert: `INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS.join(', ')}) VALUES (${placeholders(ENDPOINT_COLUMNS.length)})`,
  get: 'SELECT * FROM webhook_endpoints WHERE id = $1',
  list: 'SELECT * FROM webhook_endpoints WHERE id > $1 ORDER BY id LIMIT $2',
  delete: 'DELETE FROM webhook_endpoints WHERE id = $1',
  // Those not failing first, then at most $6 failing ones (each group by its next attempt), $5 in all.
  // The due conditions stand at the locking level too, so that a row another instance leased meanwhile
  // is checked again once its lock is taken.
  claim: `UPDATE webhook_endpoints e SET lease_owner = $1, lease_expires_at_ms = $2
       FROM (SELECT w.id FROM webhook_endpoints w
             WHERE w.status = 'active' AND w.next_attempt_at_ms <= $3 AND w.last_sequence < $4
               AND (w.lease_owner IS NULL OR w.lease_expires_at_ms < $3)
               AND (w.failed_attempts = 0 OR w.id IN (
                 SELECT id FROM webhook_endpoints
                  WHERE status = 'active' AND next_attempt_at_ms <= $3 AND last_sequence < $4
                    AND (lease_owner IS NULL OR lease_expires_at_ms < $3) AND failed_attempts > 0
                  ORDER BY next_attempt_at_ms LIMIT $6))
             ORDER BY w.failed_attempts > 0, w.next_attempt_at_ms LIMIT $5 FOR UPDATE OF w SKIP LOCKED) due
       WHERE e.id = due.id RETURNING e.*`,
  release: 'UPDATE webhook_endpoints SET lease_owner = NULL, lease_expires_at_ms = NULL WHERE id = $1 AND lease_owner = $2',
  releaseOf: 'UPDATE webhook_endpoints SET lease_owner = NULL, lease_expires_at_ms = NULL WHERE left(lease_owner, $1) = $2',
  insertAttempt: `INSERT INTO webhook_attempts (${ATTEMPT_COLUMNS.join(', ')})
       SELECT $1::text, $2::text, $3::bigint, $4::text, $5::int, $6::int, $7::text, $8::bigint, $9::bigint, $10::text WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1)`,
  pruneAttempts: `DELETE FROM webhook_attempts WHERE endpoint_id = $1 AND id < (
       SELECT id FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id DESC LIMIT 1 OFFSET ${ATTEMPTS_KEPT_PER_ENDPOINT - 1})`,
  attempts: 'SELECT * FROM webhook_attempts WHERE endpoint_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3',
} as const;

export class PostgresWebhookStore implements WebhookStore {
  private readonly pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  async createEndpoint(endpoint: WebhookEndpoint, endpoints_max: number): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      await client.query(SQL.lock);
      const count = (await client.query<{ count: number }>(SQL.count)).rows[0]?.count ?? 0;
      if (count >= endpoints_max) return false;
      await client.query(SQL.insert, endpointValues(endpoint));
      return true;
    });
  }

  async getEndpoint(id: string): Promise<WebhookEndpoint | null> {
    const row = (await this.pool.query(SQL.get, [id])).rows[0] as Record<string, unknown> | undefined;
    return row === undefined ? null : toEndpoint(row);
  }

  async listEndpoints(after_id: string | null, limit: number): Promise<WebhookEndpoint[]> {
    return (await this.pool.query(SQL.list, [after_id ?? '', limit])).rows.map(toEndpoint);
  }

  async updateEndpoint(id: string, changes: EndpointChanges): Promise<WebhookEndpoint | null> {
    const columns = changeColumns({ ...changes, updated_at_ms: changes.updated_at_ms ?? Date.now() });
    const sets = [...columns.map(([column], index) => `${column} = $${index + 2}`), 'lease_owner = NULL', 'lease_expires_at_ms = NULL'].join(', ');
    const row = (await this.pool.query(`UPDATE webhook_endpoints SET ${sets} WHERE id = $1 RETURNING *`, [id, ...columns.map(([, value]) => value)])).rows[0] as
      | Record<string, unknown> | undefined;
    return row === undefined ? null : toEndpoint(row);
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    return ((await this.pool.query(SQL.delete, [id])).rowCount ?? 0) > 0;
  }

  async claimDue(token: string, now_ms: number, lease_until_ms: number, head: number, limit: number, failing_limit: number): Promise<WebhookEndpoint[]> {
    return (await this.pool.query(SQL.claim, [token, lease_until_ms, now_ms, head, limit, Math.max(0, failing_limit)])).rows.map(toEndpoint);
  }

  async hasActiveEndpoints(): Promise<boolean> {
    return (await this.pool.query<{ active: boolean }>(SQL.anyActive)).rows[0]?.active === true;
  }

  async updateLeased(id: string, token: string, lease_until_ms: number, changes: EndpointChanges, attempt?: NewAttempt): Promise<boolean> {
    const columns = [...changeColumns({ ...changes, updated_at_ms: Date.now() }), ['lease_expires_at_ms', lease_until_ms] as [string, unknown]];
    const sets = columns.map(([column], index) => `${column} = $${index + 3}`).join(', ');
    const sql = `UPDATE webhook_endpoints SET ${sets} WHERE id = $1 AND lease_owner = $2`;
    return inTransaction(this.pool, async (client) => {
      if (((await client.query(sql, [id, token, ...columns.map(([, value]) => value)])).rowCount ?? 0) === 0) return false;
      if (attempt !== undefined) await insertAttempt(client, attempt);
      return true;
    });
  }

  async releaseLease(id: string, token: string): Promise<void> {
    await this.pool.query(SQL.release, [id, token]);
  }

  async releaseLeasesOf(prefix: string): Promise<void> {
    await this.pool.query(SQL.releaseOf, [prefix.length, prefix]);
  }

  async recordAttempt(attempt: NewAttempt): Promise<void> {
    await inTransaction(this.pool, (client) => insertAttempt(client, attempt));
  }

  async listAttempts(endpoint_id: string, before_id: number | null, limit: number): Promise<DeliveryAttempt[]> {
    return (await this.pool.query(SQL.attempts, [endpoint_id, before_id ?? Number.MAX_SAFE_INTEGER, limit])).rows.map(toAttempt);
  }
}

async function insertAttempt(client: pg.PoolClient, attempt: NewAttempt): Promise<void> {
  await client.query(SQL.insertAttempt, attemptValues(attempt));
  await client.query(SQL.pruneAttempts, [attempt.endpoint_id]);
}

