/**
 * PostgreSQL runs (BENCH_DATABASE_URL=postgres://…): every ledger the benchmark starts gets a new,
 * empty database on that server (so the service's own migrations create its tables), dropped at the
 * end even when the run fails. The URL's user must be allowed to CREATE DATABASE; a `?schema=` on it is
 * kept, and the service then works in that schema of each new database.
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from '../src/store/sqlite/sqlite-driver.js';
import pg from 'pg';
import { BenchError } from './processes.js';

export type FreshDatabase = { url: string; drop(): Promise<void> };

export async function freshDatabase(server_url: string, name: string): Promise<FreshDatabase> {
  const database = `tabula_bench_${name}_${Date.now()}_${process.pid}`;
  const admin = new pg.Client({ connectionString: server_url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const url = new URL(server_url);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: server_url });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** What a ledger takes on disk: a SQLite file with its WAL, or a PostgreSQL database (pg_database_size). */
export async function databaseBytes(database_url: string): Promise<number> {
  if (database_url.startsWith('sqlite:')) {
    const file = database_url.slice('sqlite:'.length);
    return [file, `${file}-wal`].reduce((sum, name) => sum + (fs.existsSync(name) ? fs.statSync(name).size : 0), 0);
  }
  const client = new pg.Client({ connectionString: database_url });
  await client.connect();
  try {
    const result = await client.query<{ bytes: string }>('SELECT pg_database_size(current_database())::text AS bytes');
    return Number(result.rows[0]?.bytes ?? 0);
  } finally {
    await client.end();
  }
}

/**
 * Lets a freshly loaded ledger settle before its reads are measured, as a database does between a bulk
 * load and its steady state: on PostgreSQL a VACUUM (ANALYZE), so no autovacuum of the load's tables runs
 * during the measured reads, and a CHECKPOINT, so the load's dirty pages are not written back meanwhile.
 * On SQLite a checkpoint of the WAL, so the service's checkpoint worker is not still copying the load's
 * pages into the database file during the measured reads. Returns the seconds it took.
 */
export async function settleDatabase(database_url: string): Promise<number> {
  const started_ms = performance.now();
  if (database_url.startsWith('sqlite:')) {
    await checkpointSqlite(database_url.slice('sqlite:'.length));
    return (performance.now() - started_ms) / 1000;
  }
  const client = new pg.Client({ connectionString: database_url });
  await client.connect();
  try {
    await client.query('VACUUM (ANALYZE)');
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
  return (performance.now() - started_ms) / 1000;
}

/** Checkpoint attempts at most while the service's own checkpoint holds the WAL (100 ms apart: a minute). */
const SQLITE_CHECKPOINT_TRIES_MAX = 600;
const SQLITE_CHECKPOINT_RETRY_MS = 100;

/**
 * A PASSIVE checkpoint from a connection of the benchmark's own, retried until one has copied every
 * frame of the WAL (the service's checkpoint worker may hold the checkpoint meanwhile: `busy`).
 */
async function checkpointSqlite(file: string): Promise<void> {
  const db = new Database(file);
  try {
    for (let tries = 0; tries < SQLITE_CHECKPOINT_TRIES_MAX; tries += 1) {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
      if (result !== undefined && result.busy === 0 && result.checkpointed === result.log) return;
      await sleep(SQLITE_CHECKPOINT_RETRY_MS);
    }
    throw new BenchError(`the SQLite WAL of ${file} was not checkpointed within a minute`);
  } finally {
    db.close();
  }
}
