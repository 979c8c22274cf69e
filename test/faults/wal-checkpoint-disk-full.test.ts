/**
 * A full disk under the SQLite store's WAL checkpoints (src/store/sqlite/wal-checkpointer.ts), which copy
 * the WAL into the database file on a worker thread: the copy cannot grow the file, so the checkpoint
 * fails; that is counted and logged, nothing is lost, and once space comes back the next checkpoint
 * copies everything. The ledger sits on a small tmpfs (CI runs as root), unmounted whatever happens.
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { DEFAULT_WAL_CHECKPOINT_LIMITS } from '../../src/store/sqlite/wal-checkpointer.js';
import { fillUntilFull, tmpfsForSuite } from '../support/full-disk.js';

const TMPFS_SIZE = '8m';
const ROWS = 600;

describe('a full disk under the WAL checkpoints', () => {
  const mount_point = tmpfsForSuite(TMPFS_SIZE, 'tabula-checkpoint-full-');

  it('counts and logs the failed checkpoint, and copies everything once space is back', async () => {
    const warnings: unknown[] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args), error: () => undefined } as unknown as Parameters<typeof SqliteStore.open>[0]['logger'];
    const file = path.join(mount_point, 'ledger.db');
    const store = SqliteStore.open({ path: file, logger, wal_checkpoints: { ...DEFAULT_WAL_CHECKPOINT_LIMITS, start_bytes: 64 * 1024, tick_ms: 300, retry_ms: 300 } });
    const filler = path.join(mount_point, 'filler');
    try {
      // A write the checkpointer hears of only at its next tick: its pages are in the WAL, not yet in the database file.
      const db = (store as unknown as { db: Database.Database }).db;
      db.exec('CREATE TABLE bulk (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
      const insert = db.prepare('INSERT INTO bulk (body) VALUES (randomblob(2048))');
      db.transaction(() => {
        for (let row = 0; row < ROWS; row += 1) insert.run();
      })();
      expect(store.walCheckpoints()?.completed).toBe(0);
      // Before that tick, the disk fills up: the checkpoint cannot grow the database file.
      fillUntilFull(filler);
      await vi.waitFor(() => expect(store.walCheckpoints()?.failed).toBeGreaterThan(0), { timeout: 5000 });
      expect(store.walCheckpoints()?.completed).toBe(0);
      expect(warnings.some((args) => String((args as unknown[])[1]).includes('a WAL checkpoint failed'))).toBe(true);
      expect(JSON.stringify(warnings[0])).toContain('SQLITE_FULL');

      // Space comes back: the next checkpoint (after the retry pause) copies the whole WAL.
      fs.rmSync(filler);
      await vi.waitFor(() => expect(store.walCheckpoints()?.completed).toBeGreaterThan(0), { timeout: 5000 });
      expect(store.walCheckpoints()?.off_loop).toBe(true);
      expect(db.prepare('SELECT count(*) AS n FROM bulk').get()).toEqual({ n: ROWS });
    } finally {
      await store.close();
    }
  });
});
