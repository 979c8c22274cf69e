/**
 * A full disk under the SQLite store's hash index merge (src/store/sqlite/sqlite-hash-index.ts), whose
 * steps are write transactions of their own between the appends: a step that cannot grow the WAL fails
 * with SQLITE_FULL, which is reported to the storage health as any write's, logged, and tried again; the
 * look-ups by hash stay exact meanwhile (the rows stay in memory), and once space comes back the merge
 * completes. The ledger sits on a small tmpfs (CI runs as root), unmounted whatever happens.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { describe, expect, it, vi } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { fillUntilFull, tmpfsForSuite } from '../support/full-disk.js';

const TMPFS_SIZE = '8m';
const ROWS = 400;

function transfer(index: number) {
  const preimage = { from: 'alice', to: 'bob', amount_units: 1n, token: 'TAB', type: 'transfer' as const, metadata: {}, nonce: String(index).padStart(32, '0'), timestamp: 1_800_000_000 };
  return { transaction: pendingTransaction(preimage), idempotency: null };
}

describe('a full disk under the hash index merge', () => {
  const mount_point = tmpfsForSuite(TMPFS_SIZE, 'tabula-hash-merge-full-');

  it('reports and logs the failed step, keeps look-ups exact, and merges everything once space is back', async () => {
    const warnings: unknown[][] = [];
    const errors: unknown[][] = [];
    const logger = {
      warn: (...args: unknown[]) => warnings.push(args),
      error: (...args: unknown[]) => errors.push(args),
    } as unknown as Parameters<typeof SqliteStore.open>[0]['logger'];
    const failures: Array<{ operation: string; error: unknown }> = [];
    const health = { writeFailed: (operation: string, error: unknown) => failures.push({ operation, error }), writeSucceeded: () => undefined };
    const file = path.join(mount_point, 'ledger.db');
    const filler = path.join(mount_point, 'filler');
    // SQLite checkpoints in the commit here (no checkpoint worker to reset the WAL): a step's frames grow the WAL file.
    const store = SqliteStore.open({ path: file, logger, health, wal_checkpoints: null, hash_merge: { rows_min: ROWS, step_keys_max: 100, step_interval_ms: 300 } });
    const mark = () => {
      const db = new Database(file, { readonly: true });
      try {
        return db.prepare('SELECT through_seq FROM transaction_hashes_merged').pluck().get() as number;
      } finally {
        db.close();
      }
    };
    try {
      const items = Array.from({ length: ROWS }, (_, index) => transfer(index + 1));
      await store.appendPending(items);
      // Before the first step (300 ms after the append), the disk fills up.
      fillUntilFull(filler);
      await vi.waitFor(() => expect(failures.some((failure) => failure.operation === 'merge the transaction hash index')).toBe(true), { timeout: 5000 });
      expect(JSON.stringify(failures.find((failure) => failure.operation === 'merge the transaction hash index')?.error)).toContain('SQLITE_FULL');
      expect(warnings.some((args) => String(args[1]).includes('could not be merged now'))).toBe(true);
      expect(errors).toEqual([]);
      expect(mark()).toBe(0);
      for (const item of items.slice(0, 20)) expect((await store.getTransaction(item.transaction.tx_hash))?.tx_hash).toBe(item.transaction.tx_hash);

      // Space comes back: the step is tried again (a second later) and the merge goes on to the end.
      fs.rmSync(filler);
      await vi.waitFor(() => expect(mark()).toBe(ROWS), { timeout: 10_000, interval: 100 });
      for (const item of items) expect((await store.getTransaction(item.transaction.tx_hash))?.tx_hash).toBe(item.transaction.tx_hash);
      expect(errors).toEqual([]);
    } finally {
      fs.rmSync(filler, { force: true });
      await store.close();
    }
  });
});
