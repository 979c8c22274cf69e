/**
 * Once per vitest project: PostgreSQL must answer (no silent skip: the run fails with a message that
 * says how to start it), every schema this run creates gets a prefix of its own, and at the end the
 * schemas with that prefix that a failed test left behind are dropped. Other runs' schemas on the same
 * server are never touched.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { dropSchemas, testPostgresUrl } from './test-database.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const url = testPostgresUrl();
  const prefix = `tabula_test_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new Error(
      `PostgreSQL at ${url} (TEST_DATABASE_URL) cannot be reached: ${(error as Error).message}. ` +
        'The contract suite runs on PostgreSQL too and is never skipped; start the server (see .ci/run).',
    );
  } finally {
    await client.end().catch(() => undefined);
  }
  project.provide('postgres_schema_prefix', prefix);
  return async () => {
    const leftover = new pg.Client({ connectionString: url });
    await leftover.connect();
    const rows = (await leftover.query<{ name: string }>("SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1)", [`${prefix}_`])).rows;
    await leftover.end();
    await dropSchemas(url, rows.map((row) => row.name));
  };
}
