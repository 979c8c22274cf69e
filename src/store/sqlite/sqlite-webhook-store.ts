/**
 * The webhook tables on the ledger's SQLite database (the same connection as the ledger store).
 * better-sqlite3 is synchronous, so each method is one statement or one transaction.
 */
import type Database from './sqlite-driver.js';
import { ATTEMPTS_KEPT_PER_ENDPOINT, type DeliveryAttempt, type EndpointChanges, type NewAttempt, type WebhookEndpoint, type WebhookStore } from '../../webhooks/webhook-store.js';
import { ATTEMPT_COLUMNS, attemptValues, changeColumns, ENDPOINT_COLUMNS, endpointValues, toAttempt, toEndpoint } from '../webhook-rows.js';

const SQL = {
  count: 'SELECT COUNT(*) FROM webhook_endpoints',
  anyActive: "SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE status = 'active')",
  insert: `INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS.join(', ')}) VALUES (${ENDPOINT_COLUMNS.map(() => '?').join(', ')})`,
  get: 'SELECT * FROM webhook_endpoints WHERE id = ?',
  list: 'SELECT * FROM webhook_endpoints WHERE id > ? ORDER BY id LIMIT ?',
  delete: 'DELETE FROM webhook_endpoints WHERE id = ?',
  due: `SELECT * FROM webhook_endpoints WHERE status = 'active' AND next_attempt_at_ms <= ? AND last_sequence < ?
       AND (lease_owner IS NULL OR lease_expires_at_ms < ?) ORDER BY failed_attempts > 0, next_attempt_at_ms LIMIT ?`,
  lease: 'UPDATE webhook_endpoints SET lease_owner = ?, lease_expires_at_ms = ? WHERE id = ?',
  release: 'UPDATE webhook_endpoints SET lease_owner = NULL, lease_expires_at_ms = NULL WHERE id = ? AND lease_owner = ?',
  releaseOf: 'UPDATE webhook_endpoints SET lease_owner = NULL, lease_expires_at_ms = NULL WHERE substr(lease_owner, 1, ?) = ?',
  insertAttempt: `INSERT INTO webhook_attempts (${ATTEMPT_COLUMNS.join(', ')}) VALUES (${ATTEMPT_COLUMNS.map(() => '?').join(', ')})`,
  pruneAttempts: `DELETE FROM webhook_attempts WHERE endpoint_id = ? AND id < (
       SELECT id FROM webhook_attempts WHERE endpoint_id = ? ORDER BY id DESC LIMIT 1 OFFSET ${ATTEMPTS_KEPT_PER_ENDPOINT - 1})`,
  attempts: 'SELECT * FROM webhook_attempts WHERE endpoint_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
} as const;

type Statements = { [name in keyof typeof SQL]: Database.Statement };

export class SqliteWebhookStore implements WebhookStore {
  private readonly db: Database.Database;
  /** Prepared once: the deliverer claims at every new event, and preparing cost more than running. */
  private readonly statements: Statements;

  constructor(db: Database.Database) {
    this.db = db;
    this.statements = Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Statements;
    this.statements.count.pluck(true);
    this.statements.anyActive.pluck(true);
  }

  async createEndpoint(endpoint: WebhookEndpoint, endpoints_max: number): Promise<boolean> {
    return this.db.transaction(() => {
      if ((this.statements.count.get() as number) >= endpoints_max) return false;
      this.statements.insert.run(...endpointValues(endpoint));
      return true;
    }).immediate();
  }

  async getEndpoint(id: string): Promise<WebhookEndpoint | null> {
    const row = this.statements.get.get(id) as Record<string, unknown> | undefined;
    return row === undefined ? null : toEndpoint(row);
  }

  async listEndpoints(after_id: string | null, limit: number): Promise<WebhookEndpoint[]> {
    return (this.statements.list.all(after_id ?? '', limit) as Record<string, unknown>[]).map(toEndpoint);
  }

  async updateEndpoint(id: string, changes: EndpointChanges): Promise<WebhookEndpoint | null> {
    const columns = changeColumns({ ...changes, updated_at_ms: changes.updated_at_ms ?? Date.now() });
    const sets = [...columns.map(([column]) => `${column} = ?`), 'lease_owner = NULL', 'lease_expires_at_ms = NULL'].join(', ');
    const sql = `UPDATE webhook_endpoints SET ${sets} WHERE id = ? RETURNING *`;
    const row = this.db.prepare(sql).get(...columns.map(([, value]) => value), id) as Record<string, unknown> | undefined;
    return row === undefined ? null : toEndpoint(row);
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    return this.statements.delete.run(id).changes > 0;
  }

  async claimDue(token: string, now_ms: number, lease_until_ms: number, head: number, limit: number, failing_limit: number): Promise<WebhookEndpoint[]> {
    // Nothing due, the usual answer at a new event, needs no write transaction.
    if (this.statements.due.all(now_ms, head, now_ms, 1).length === 0) return [];
    return this.db.transaction(() => {
      // Those not failing come first: the failing ones past `failing_limit` are the last rows.
      const due = (this.statements.due.all(now_ms, head, now_ms, limit) as Record<string, unknown>[]).map(toEndpoint);
      const healthy = due.filter((endpoint) => endpoint.failed_attempts === 0);
      const rows = [...healthy, ...due.filter((endpoint) => endpoint.failed_attempts > 0).slice(0, Math.max(0, failing_limit))];
      const lease = this.statements.lease;
      for (const endpoint of rows) lease.run(token, lease_until_ms, endpoint.id);
      return rows.map((endpoint) => ({ ...endpoint, lease_owner: token, lease_expires_at_ms: lease_until_ms }));
    }).immediate();
  }

  async hasActiveEndpoints(): Promise<boolean> {
    return this.statements.anyActive.get() === 1;
  }

  async updateLeased(id: string, token: string, lease_until_ms: number, changes: EndpointChanges, attempt?: NewAttempt): Promise<boolean> {
    const columns = [...changeColumns({ ...changes, updated_at_ms: Date.now() }), ['lease_expires_at_ms', lease_until_ms] as [string, unknown]];
    const sql = `UPDATE webhook_endpoints SET ${columns.map(([column]) => `${column} = ?`).join(', ')} WHERE id = ? AND lease_owner = ?`;
    return this.db.transaction(() => {
      if (this.db.prepare(sql).run(...columns.map(([, value]) => value), id, token).changes === 0) return false;
      if (attempt !== undefined) this.insertAttempt(attempt);
      return true;
    }).immediate();
  }

  async releaseLease(id: string, token: string): Promise<void> {
    this.statements.release.run(id, token);
  }

  async releaseLeasesOf(prefix: string): Promise<void> {
    this.statements.releaseOf.run(prefix.length, prefix);
  }

  async recordAttempt(attempt: NewAttempt): Promise<void> {
    this.db.transaction(() => this.insertAttempt(attempt)).immediate();
  }

  async listAttempts(endpoint_id: string, before_id: number | null, limit: number): Promise<DeliveryAttempt[]> {
    return (this.statements.attempts.all(endpoint_id, before_id ?? Number.MAX_SAFE_INTEGER, limit) as Record<string, unknown>[]).map(toAttempt);
  }

  private insertAttempt(attempt: NewAttempt): void {
    const exists = this.statements.get.get(attempt.endpoint_id) !== undefined;
    if (!exists) return;
    this.statements.insertAttempt.run(...attemptValues(attempt));
    this.statements.pruneAttempts.run(attempt.endpoint_id, attempt.endpoint_id);
  }
}
