/**
 * Reads must cost the same however long the history: every read statement is an index seek (SQLite
 * "SEARCH"), never a table scan or a sort. This is how /api/stats and /api/blocks at any offset stay
 * cheap; the benchmark measures it, this test keeps it true.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SQL, SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const READS = ['getTransaction', 'balance', 'balancesOfUser', 'latestBlock', 'blockAtOrBefore', 'getBlock', 'listBlocks', 'blockTransactionHashes', 'activeUsers', 'findIdempotency', 'sealTransaction', 'sealTransactionBySeq', 'touchAccount'] as const;

describe('SQLite query plans', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-plans-'));
  const file = path.join(dir, 'ledger.db');
  const store = SqliteStore.open({ path: file });
  const db = new Database(file, { readonly: true });
  afterAll(async () => {
    db.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each(READS)('%s is an index seek', (name) => {
    const sql: string = SQL[name];
    const parameters = (sql.match(/\?/g) ?? []).map(() => 1);
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...parameters) as Array<{ detail: string }>).map((row) => row.detail);
    expect(plan.length).toBeGreaterThan(0);
    for (const step of plan) {
      expect(step, plan.join(' | ')).not.toMatch(/TEMP B-TREE/);
      expect(step, plan.join(' | ')).toMatch(/^(SEARCH|SCALAR SUBQUERY|SCAN CONSTANT ROW)/);
    }
  });

  it('takes pending transactions from the partial index of pending ones only', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL.pendingTransactions}`).all(1) as Array<{ detail: string }>).map((row) => row.detail);
    expect(plan[0]).toMatch(/USING INDEX transactions_pending/);
  });
});
