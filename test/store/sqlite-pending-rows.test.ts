/**
 * The SQLite store's copies of its pending rows (the failure budget's debits, the pending history) are
 * rebuilt from one scan (sqlite-pending-rows.ts): only the copies behind SQLite's data_version, each
 * row read once and handed to each of them, in row order. The stores' contract tests check the
 * copies' answers after another handle's writes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBlock, genesisBlock } from '../../src/domain/block.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { TransactionType } from '../../src/domain/transaction.js';
import { SqlitePendingRows, type PendingRow, type PendingRowsCopy } from '../../src/store/sqlite/sqlite-pending-rows.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

let nonce = 0;
function item(from: string, to: string, type: TransactionType, amount_units: bigint) {
  nonce += 1;
  const preimage = { from, to, amount_units, token: 'TAB', type, metadata: {}, nonce: String(nonce).padStart(32, '0'), timestamp: 1_800_000_000 };
  return { transaction: pendingTransaction(preimage), idempotency: null };
}

/** A copy that records what it is given. */
class RecordingCopy implements PendingRowsCopy {
  data_version: number | null = null;
  rows: PendingRow[] = [];
  clears = 0;
  clear(): void {
    this.clears += 1;
    this.rows = [];
  }
  addPendingRow(row: PendingRow): void {
    this.rows.push(row);
  }
  rebuilt(data_version: number): void {
    this.data_version = data_version;
  }
}

describe('SQLite: the pending rows, scanned once for every copy kept in memory', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A ledger file with a sealed mint and three pending transactions after it. */
  async function ledgerWithPendingRows(): Promise<{ file: string; pending: ReturnType<typeof item>[] }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-pending-rows-'));
    dirs.push(dir);
    const file = path.join(dir, 'ledger.db');
    const store = SqliteStore.open({ path: file, wal_checkpoints: null });
    try {
      const genesis = genesisBlock(1_800_000_000);
      const empty = { balances: [], new_users: [], active_users: [] };
      await store.commitBlock({ header: genesis, totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], ...empty });
      const mint = item('treasury', 'alice', 'mint', 500n);
      await store.appendPending([mint]);
      await store.commitBlock({
        header: buildBlock(genesis, [mint.transaction.tx_hash], genesis.timestamp + 1),
        totals: { transactions: 1, users: 1, transfer_volume_units: {} },
        outcomes: [{ tx_hash: mint.transaction.tx_hash, position: 0, status: 'confirmed', error: null }],
        ...empty,
      });
      const pending = [item('alice', 'bob', 'transfer', 7n), item('treasury', 'carol', 'mint', 9n), item('bob', 'bob', 'burn', 11n)];
      await store.appendPending(pending);
      return { file, pending };
    } finally {
      await store.close();
    }
  }

  it('hands each pending row, in row order, to every copy behind, reading the rows once', async () => {
    const { file, pending } = await ledgerWithPendingRows();
    const db = new Database(file);
    try {
      const budget = new RecordingCopy();
      const history = new RecordingCopy();
      new SqlitePendingRows(db, [budget, history]).sync(7);
      expect(budget.rows.map((row) => ({ from: row.from, to: row.to, token: row.token, type: row.type, amount_units: row.amount_units }))).toEqual(pending.map(({ transaction: tx }) => ({
        from: tx.from, to: tx.to, token: tx.token, type: tx.type, amount_units: tx.amount_units,
      })));
      const seqs = budget.rows.map((row) => row.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(new Set(seqs).size).toBe(3);
      // One scan: the very same row objects went to both copies.
      history.rows.forEach((row, index) => expect(row).toBe(budget.rows[index]));
      expect([budget.data_version, history.data_version]).toEqual([7, 7]);
    } finally {
      db.close();
    }
  });

  it('rebuilds only the copies not exact at the version read, and none when all are', async () => {
    const { file } = await ledgerWithPendingRows();
    const db = new Database(file);
    try {
      const exact = new RecordingCopy();
      const behind = new RecordingCopy();
      const rows = new SqlitePendingRows(db, [exact, behind]);
      rows.sync(1);
      exact.rebuilt(2);
      rows.sync(2);
      expect([exact.clears, behind.clears]).toEqual([1, 2]);
      expect(behind.rows).toHaveLength(3);
      expect(behind.data_version).toBe(2);
      rows.sync(2);
      expect([exact.clears, behind.clears]).toEqual([1, 2]);
    } finally {
      db.close();
    }
  });
});
