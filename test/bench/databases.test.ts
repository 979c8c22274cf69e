import fs from 'node:fs';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { freshDatabase, settleDatabase, type FreshDatabase } from '../../bench/databases.js';
import { testPostgresUrl } from '../support/test-database.js';

describe('the benchmark lets a loaded ledger settle before its reads are measured', () => {
  let database: FreshDatabase | null = null;
  afterEach(async () => {
    await database?.drop();
    database = null;
  });

  it('vacuums and analyzes every table of a PostgreSQL ledger, so no autovacuum runs during the reads', async () => {
    database = await freshDatabase(testPostgresUrl(), 'settle_test');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      // A table left as a load leaves one: rows inserted, then rewritten (dead versions), never vacuumed.
      await client.query('CREATE TABLE loaded (id bigint PRIMARY KEY, sealed boolean NOT NULL) WITH (autovacuum_enabled = false)');
      await client.query('INSERT INTO loaded SELECT n, false FROM generate_series(1, 5000) AS n');
      await client.query('UPDATE loaded SET sealed = true');
      const settle_s = await settleDatabase(database.url);
      expect(settle_s).toBeGreaterThan(0);
      const stats = await client.query<{ vacuumed: boolean; analyzed: boolean; dead: string }>(
        "SELECT last_vacuum IS NOT NULL AS vacuumed, last_analyze IS NOT NULL AS analyzed, n_dead_tup::text AS dead FROM pg_stat_user_tables WHERE relname = 'loaded'",
      );
      expect(stats.rows).toEqual([{ vacuumed: true, analyzed: true, dead: '0' }]);
    } finally {
      await client.end();
    }
  });

  it("checkpoints a SQLite ledger's WAL, so the service's checkpoint worker is not copying the load during the reads", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-settle-'));
    const file = path.join(dir, 'ledger.db');
    // A writer that leaves its WAL behind, as the service's connection does while it runs.
    const writer = new Database(file);
    try {
      writer.pragma('journal_mode = WAL');
      writer.pragma('wal_autocheckpoint = 0');
      writer.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)');
      const insert = writer.prepare('INSERT INTO rows (body) VALUES (?)');
      writer.transaction(() => { for (let index = 0; index < 2000; index += 1) insert.run('x'.repeat(500)); })();
      expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(1_000_000);
      await expect(settleDatabase(`sqlite:${file}`)).resolves.toBeGreaterThanOrEqual(0);
      // The database file alone, without its WAL, now holds every row.
      const copy = path.join(dir, 'copy.db');
      fs.copyFileSync(file, copy);
      const reader = new Database(copy, { readonly: true });
      try {
        expect(reader.prepare('SELECT count(*) AS count FROM rows').get()).toEqual({ count: 2000 });
      } finally {
        reader.close();
      }
    } finally {
      writer.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
