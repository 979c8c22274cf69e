/**
 * The SQLite store's WAL is checkpointed on a worker thread (src/store/sqlite/wal-checkpointer.ts), not in
 * the commit on the event loop; appends and block commits wait, off the loop, while the WAL is past its limit.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Transaction } from '../../src/domain/transaction.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { DEFAULT_WAL_CHECKPOINT_LIMITS, WalCheckpointer, type WalCheckpointLimits } from '../../src/store/sqlite/wal-checkpointer.js';

/** Small enough that a few batches of appends cross both bounds. */
const TIGHT: WalCheckpointLimits = { ...DEFAULT_WAL_CHECKPOINT_LIMITS, start_bytes: 64 * 1024, limit_bytes: 1024 * 1024 };
const BATCHES = 40;
const BATCH_SIZE = 200;

function pending(index: number): Transaction {
  const preimage = {
    from: `user-${index % 97}`, to: `user-${(index * 7) % 101}`, amount_units: 1n, token: 'TAB', type: 'transfer' as const, metadata: {},
    nonce: index.toString(16).padStart(32, '0'), timestamp: 1_800_000_000,
  };
  return pendingTransaction(preimage);
}

function connectionOf(store: SqliteStore): Database.Database {
  return (store as unknown as { db: Database.Database }).db;
}

describe('SQLite WAL checkpoints off the event loop', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  function ledgerFile(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-checkpoints-'));
    dirs.push(dir);
    return path.join(dir, 'ledger.db');
  }

  /** The same appends, in the same order: deterministic transactions, so each commit writes the same pages wherever it runs. */
  async function appendAll(store: SqliteStore, after_each: (batch: number) => void): Promise<void> {
    for (let batch = 0; batch < BATCHES; batch += 1) {
      const items = Array.from({ length: BATCH_SIZE }, (_, index) => ({ transaction: pending(batch * BATCH_SIZE + index), idempotency: null }));
      await store.appendPending(items);
      after_each(batch);
    }
  }

  /** The bytes each append adds to a WAL that is never checkpointed: what one commit can add at most. */
  async function largestCommitBytes(): Promise<number> {
    const file = ledgerFile();
    const store = SqliteStore.open({ path: file, wal_checkpoints: null });
    connectionOf(store).pragma('wal_autocheckpoint = 0');
    let largest = 0;
    let before = fs.statSync(`${file}-wal`).size;
    try {
      await appendAll(store, () => {
        const after = fs.statSync(`${file}-wal`).size;
        largest = Math.max(largest, after - before);
        before = after;
      });
    } finally {
      await store.close();
    }
    return largest;
  }

  it('checkpoints on the worker, keeps the WAL within its limit plus one commit, and loses nothing', async () => {
    const largest_commit_bytes = await largestCommitBytes();
    expect(largest_commit_bytes).toBeLessThan(TIGHT.limit_bytes);
    const file = ledgerFile();
    const store = SqliteStore.open({ path: file, wal_checkpoints: TIGHT });
    try {
      // SQLite's own checkpoints (in the commit, on this thread) are off; the file starts over at the start size.
      expect(connectionOf(store).pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      expect(connectionOf(store).pragma('journal_size_limit', { simple: true })).toBe(TIGHT.start_bytes);
      let largest_wal_bytes = 0;
      await appendAll(store, () => {
        largest_wal_bytes = Math.max(largest_wal_bytes, fs.statSync(`${file}-wal`).size);
      });
      const stats = store.walCheckpoints();
      expect(stats?.off_loop).toBe(true);
      expect(stats?.completed).toBeGreaterThan(0);
      expect(stats?.failed).toBe(0);
      // Back to back, the appends outrun the checkpoints: some had to wait for one, and that held the WAL.
      expect(stats?.write_waits).toBeGreaterThan(0);
      expect(largest_wal_bytes).toBeGreaterThan(TIGHT.limit_bytes);
      expect(largest_wal_bytes).toBeLessThanOrEqual(TIGHT.limit_bytes + largest_commit_bytes);
      expect(await store.pendingCount()).toBe(BATCHES * BATCH_SIZE);
    } finally {
      await store.close();
    }
    // Everything is in the database file itself once the store has closed (the last connection checkpoints and removes the WAL).
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const reopened = SqliteStore.open({ path: file, wal_checkpoints: null });
    try {
      expect(await reopened.pendingCount()).toBe(BATCHES * BATCH_SIZE);
      expect(connectionOf(reopened).pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
      expect(reopened.walCheckpoints()).toBeNull();
    } finally {
      await reopened.close();
    }
  });

  it('does not hold writes while a reader (a backup, an audit) keeps part of the WAL, and copies it once the reader is done', async () => {
    const file = ledgerFile();
    const store = SqliteStore.open({ path: file, wal_checkpoints: TIGHT });
    const reader = new Database(file, { readonly: true });
    try {
      await store.appendPending([{ transaction: pending(10_000_000), idempotency: null }]);
      // A read transaction's snapshot: no checkpoint may copy past it while it lasts.
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM transactions').get();
      await appendAll(store, () => undefined);
      const held = store.walCheckpoints();
      expect(held?.partial).toBeGreaterThan(0);
      expect(held?.write_waits).toBeGreaterThan(0);
      // A write that finds the WAL held gives up waiting after one checkpoint that could not copy it all
      // (waiting for more would only repeat that one until the reader is done).
      expect(held?.partial).toBeLessThanOrEqual(BATCHES + 1 + 2 * (held?.write_waits ?? 0));
      expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(TIGHT.limit_bytes);
      reader.exec('COMMIT');
      // The next write after the reader is gone: a checkpoint copies everything, and the WAL starts over.
      let next = BATCHES * BATCH_SIZE;
      await vi.waitFor(async () => {
        next += 1;
        await store.appendPending([{ transaction: pending(next), idempotency: null }]);
        expect(store.walCheckpoints()?.completed).toBeGreaterThan(held?.completed ?? 0);
        expect(fs.statSync(`${file}-wal`).size).toBeLessThanOrEqual(TIGHT.limit_bytes);
      }, { timeout: 5000, interval: 50 });
    } finally {
      reader.close();
      await store.close();
    }
  });

  it('makes one checkpoint per start size of WAL that small commits add up to, not one per commit', async () => {
    const file = ledgerFile();
    const store = SqliteStore.open({ path: file, wal_checkpoints: { ...TIGHT, tick_ms: 60_000 } });
    const commits = 300;
    try {
      for (let index = 0; index < commits; index += 1) await store.appendPending([{ transaction: pending(index), idempotency: null }]);
      const stats = store.walCheckpoints();
      const checkpoints = (stats?.completed ?? 0) + (stats?.partial ?? 0);
      expect(checkpoints).toBeGreaterThan(0);
      // Each of these commits adds a few pages (well under the start size): several add up to one checkpoint.
      expect(checkpoints).toBeLessThan(commits / 2);
      expect(await store.pendingCount()).toBe(commits);
    } finally {
      await store.close();
    }
  });

  it('catches up, within a tick, with a WAL that grew without an append or a block saying so', async () => {
    const file = ledgerFile();
    const store = SqliteStore.open({ path: file, wal_checkpoints: { ...TIGHT, tick_ms: 50 } });
    try {
      // A write the checkpointer is not told of (webhooks and settings are such writes): one large transaction.
      const db = connectionOf(store);
      db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
      db.prepare('INSERT INTO filler (body) SELECT randomblob(1024) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400) SELECT i FROM n)').run();
      expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(TIGHT.start_bytes);
      await vi.waitFor(() => expect(store.walCheckpoints()?.completed).toBeGreaterThan(0), { timeout: 5000 });
    } finally {
      await store.close();
    }
  });

  it('ends its worker by a message, never by terminating it, whenever it is closed while the worker starts', async () => {
    // Terminated while it loaded the SQLite driver's addon (better-sqlite3 13, Node 22 and later), the
    // worker aborted the whole process (FATAL ERROR: Error::New napi_get_last_error_info).
    const file = ledgerFile();
    await SqliteStore.open({ path: file, wal_checkpoints: null }).close();
    for (const delay_ms of [0, 1, 2, 5, 10, 20, 40, 80, 160]) {
      const checkpointer = new WalCheckpointer(file, TIGHT, null, () => undefined);
      const worker = (checkpointer as unknown as { worker: Worker }).worker;
      const terminate = vi.spyOn(worker, 'terminate');
      const exit_code = new Promise<number>((resolve) => worker.once('exit', resolve));
      await new Promise((resolve) => setTimeout(resolve, delay_ms));
      await checkpointer.close();
      expect(await exit_code).toBe(0);
      expect(terminate).not.toHaveBeenCalled();
    }
  });

  it('hands the checkpoints back to SQLite when the worker fails, and says so', async () => {
    const fell_back = vi.fn();
    const errors: unknown[] = [];
    const logger = { error: (...args: unknown[]) => errors.push(args), warn: () => undefined } as unknown as ConstructorParameters<typeof WalCheckpointer>[2];
    // The worker cannot open a database that is not there: it fails as it starts.
    const checkpointer = new WalCheckpointer(path.join(ledgerFile(), 'missing.db'), TIGHT, logger, fell_back);
    try {
      await vi.waitFor(() => expect(fell_back).toHaveBeenCalledTimes(1), { timeout: 5000 });
      expect(checkpointer.snapshot().off_loop).toBe(false);
      expect(errors).toHaveLength(1);
      // No write waits on a checkpointer that is no longer there.
      await checkpointer.ready();
    } finally {
      await checkpointer.close();
    }
  });
});
