/**
 * PostgreSQL turning read-only under the real service, as a primary does when it is demoted to a standby
 * in a failover: the service's role gets `default_transaction_read_only` and its sessions are ended, so
 * that every new session refuses writes with 25006. Submissions get 503 `storage_unavailable` with
 * Retry-After — never a 500 —, readiness answers 503 while it lasts, and once writes are allowed again
 * the service takes them by itself: every acknowledged transaction is sealed and the chain audits.
 * The role and its schema are dropped whatever happens.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { expectAcknowledgedInChain } from '../support/store-chain-audit.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { waitUntilAllSealed } from '../support/sealed.js';
import { ServiceProcess } from '../support/service-process.js';
import { testPostgresUrl } from '../support/test-database.js';

const REFUSALS_WANTED = 5;

describe('PostgreSQL turning read-only (a demoted primary after a failover)', () => {
  const name = `tabula_ro_${randomBytes(4).toString('hex')}`;
  const server = new URL(testPostgresUrl());
  const service_url = new URL(testPostgresUrl());
  service_url.username = name;
  service_url.searchParams.set('schema', name);
  const database = server.pathname.slice(1);
  let admin_sql: pg.Client;
  let service: ServiceProcess | null = null;

  /** Makes the role's sessions read-only (or writable again) and ends the ones it has, so the pool reconnects. */
  async function setReadOnly(read_only: boolean): Promise<void> {
    await admin_sql.query(read_only ? `ALTER ROLE ${name} SET default_transaction_read_only = on` : `ALTER ROLE ${name} RESET default_transaction_read_only`);
    await admin_sql.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [name]);
  }

  beforeAll(async () => {
    admin_sql = new pg.Client({ connectionString: server.toString() });
    await admin_sql.connect();
    await admin_sql.query(`CREATE ROLE ${name} LOGIN`);
    await admin_sql.query(`CREATE SCHEMA ${name} AUTHORIZATION ${name}`);
    // The migrations' CREATE SCHEMA IF NOT EXISTS needs the right to create schemas in the database.
    await admin_sql.query(`GRANT CREATE ON DATABASE ${database} TO ${name}`);
    service = await ServiceProcess.start({
      env: { DATABASE_URL: service_url.toString(), JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '200', RATE_LIMIT_MAX: '10000000' },
    });
  });
  afterAll(async () => {
    await service?.close();
    await admin_sql.query(`ALTER ROLE ${name} RESET default_transaction_read_only`).catch(() => undefined);
    await admin_sql.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [name]).catch(() => undefined);
    await admin_sql.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    await admin_sql.query(`REVOKE ALL ON DATABASE ${database} FROM ${name}`).catch(() => undefined);
    await admin_sql.query(`DROP ROLE IF EXISTS ${name}`);
    await admin_sql.end();
  });

  it('answers 503 storage_unavailable while writes are refused, and recovers by itself when they are allowed', async () => {
    const running = service as ServiceProcess;
    const admin = await running.token('treasury', { admin: true });
    const acknowledged = new Set<string>();
    const submit = async (index: number) => {
      const response = await fetch(`${running.url}/api/transactions/submit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'treasury', to: `user-${index % 10}`, amount: 1, token: 'USDG', type: 'mint' }),
        signal: AbortSignal.timeout(20_000),
      });
      const body = (await response.json()) as Record<string, unknown>;
      expect(response.status, JSON.stringify(body)).not.toBe(500);
      if (response.status === 202) acknowledged.add(body.tx_hash as string);
      return { status: response.status, body, retry_after: response.headers.get('retry-after') };
    };

    for (let index = 0; index < 20; index += 1) expect((await submit(index)).status).toBe(202);

    await setReadOnly(true);
    let refused = 0;
    for (let index = 0; index < 200 && refused < REFUSALS_WANTED; index += 1) {
      const answer = await submit(index);
      if (answer.status === 202) continue; // a session that had not been ended yet
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ code: 'storage_unavailable', status: 503 });
      expect(Number(answer.retry_after)).toBeGreaterThanOrEqual(1);
      refused += 1;
    }
    expect(refused).toBe(REFUSALS_WANTED);
    const ready = await fetch(`${running.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(running.logs().some((line) => String(line.msg).includes('the store refuses writes'))).toBe(true);

    await setReadOnly(false);
    let recovered = false;
    for (let attempt = 0; attempt < 100 && !recovered; attempt += 1) {
      recovered = (await submit(attempt)).status === 202;
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(recovered).toBe(true);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);

    await waitUntilAllSealed(running.url, admin, acknowledged);
    await running.stop();
    await expectAcknowledgedInChain(await PostgresStore.open({ url: server.toString(), schema: name }), acknowledged);
  }, 120_000);
});
