/**
 * Where a test's ledger lives. Suites that exercise the store interface or the HTTP behaviour run
 * once per store kind (vitest projects `sqlite` and `postgres` set TEST_STORE); on PostgreSQL every
 * ledger gets a schema of its own in TEST_DATABASE_URL, dropped when the test closes it. The global
 * setup (postgres-global-setup.ts) checks the server answers — failing the run loudly when not — and
 * drops whatever schema of this run a crashed test left behind.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ThreadedSqliteStore } from '../../src/store/sqlite/thread/threaded-sqlite-store.js';

export type StoreKind = 'sqlite' | 'postgres';

export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

declare module 'vitest' {
  interface ProvidedContext {
    /** The prefix of every PostgreSQL schema this run creates. */
    postgres_schema_prefix: string;
  }
}

export function testStoreKind(): StoreKind {
  const kind = process.env.TEST_STORE ?? 'sqlite';
  if (kind !== 'sqlite' && kind !== 'postgres') throw new Error(`TEST_STORE must be sqlite or postgres (got ${kind})`);
  return kind;
}

/** The vitest project `sqlite-thread` runs the store contract suites on the SQLite store's thread (src/store/sqlite/thread). */
export function sqliteStoreThread(): boolean {
  return process.env.TEST_SQLITE_STORE_THREAD === 'on';
}

export function testPostgresUrl(): string {
  return process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
}

/** A fresh, empty database for one test: a SQLite file in a temporary folder, or a PostgreSQL schema. */
export type TestDatabase = {
  kind: StoreKind;
  /** The DATABASE_URL that selects it. */
  url: string;
  /** A folder of its own (the SQLite file, the development secret). */
  dir: string;
  /** On PostgreSQL: the server's URL and the schema of this database. */
  postgres: { url: string; schema: string } | null;
  /** Opens a store on it (several may be open at once, as several instances would); on SQLite on a thread of its own when TEST_SQLITE_STORE_THREAD is `on`. */
  open(): Promise<LedgerStore>;
  /** Deletes it. */
  drop(): Promise<void>;
};

export async function createTestDatabase(kind: StoreKind = testStoreKind()): Promise<TestDatabase> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-test-'));
  const removeDir = () => fs.rmSync(dir, { recursive: true, force: true });
  if (kind === 'sqlite') {
    const file = path.join(dir, 'ledger.db');
    return { kind, url: `sqlite:${file}`, dir, postgres: null, open: () => (sqliteStoreThread() ? ThreadedSqliteStore.open({ path: file }) : Promise.resolve(SqliteStore.open({ path: file }))), drop: async () => removeDir() };
  }
  const schema = `${inject('postgres_schema_prefix')}_${randomBytes(6).toString('hex')}`;
  const base = testPostgresUrl();
  return {
    kind,
    url: withSchema(base, schema),
    dir,
    postgres: { url: base, schema },
    open: () => PostgresStore.open({ url: base, schema }),
    drop: async () => {
      await dropSchemas(base, [schema]);
      removeDir();
    },
  };
}

export function withSchema(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('schema', schema);
  return parsed.toString();
}

export async function dropSchemas(url: string, schemas: readonly string[]): Promise<void> {
  if (schemas.length === 0) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** A plain client on a test database's schema, for tests that look at the tables themselves. */
export async function connectToSchema(database: TestDatabase): Promise<pg.Client> {
  if (database.postgres === null) throw new Error('not a PostgreSQL test database');
  const client = new pg.Client({ connectionString: database.postgres.url, options: `-c search_path=${database.postgres.schema}` });
  await client.connect();
  return client;
}
