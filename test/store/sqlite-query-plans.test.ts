/**
 * Reads must cost the same however long the history: every read statement is an index seek (SQLite
 * "SEARCH"), never a table scan or a sort. This is how /api/stats, /api/blocks at any offset and an
 * account's history at any depth stay cheap; the benchmark measures it, this test keeps it true.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { afterAll, describe, expect, it } from 'vitest';
import { SQL, SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PENDING_ROWS_SQL } from '../../src/store/sqlite/sqlite-pending-rows.js';
import { HASH_INDEX_SQL } from '../../src/store/sqlite/sqlite-hash-index.js';

const READS = ['getTransaction', 'balance', 'balancesOfUser', 'latestBlock', 'blockAtOrBefore', 'getBlock', 'listBlocks', 'blockTransactionHashes', 'activeUsers', 'findIdempotency', 'sealTransactionBySeq', 'touchAccount', 'sealedEventTransactions', 'newestAccountSeq', 'newestSeq'] as const;

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

  it('counts stored idempotency keys with one seek of the (caller, key) index per key of the list, scanning only the list', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL.countIdempotencyKeys}`).all('alice', '["a","b"]') as Array<{ detail: string }>).map((row) => row.detail);
    const shown = plan.join(' | ');
    expect(plan[0], shown).toMatch(/^SEARCH idempotency_keys USING COVERING INDEX sqlite_autoindex_idempotency_keys_\d+ \(caller=\? AND key=\?\)/);
    for (const step of plan.slice(1)) expect(step, shown).toMatch(/^(LIST SUBQUERY|SCAN json_each VIRTUAL TABLE)/);
  });

  it('reads the transactions the hash index names with one seek by row number per entry of the list, scanning only the list', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL.transactionsBySeq}`).all('[1,2]') as Array<{ detail: string }>).map((row) => row.detail);
    const shown = plan.join(' | ');
    expect(plan[0], shown).toMatch(/^SEARCH t USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    for (const step of plan.slice(1)) expect(step, shown).toMatch(/^(LIST SUBQUERY|SCAN json_each VIRTUAL TABLE|SEARCH b USING INTEGER PRIMARY KEY)/);
  });

  it('looks merged transactions up by hash with one seek of the index table and one of the row per hash of the list', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL.transactionsByMergedHash}`).all('["0x01"]') as Array<{ detail: string }>).map((row) => row.detail);
    expect(plan, plan.join(' | ')).toEqual([
      expect.stringMatching(/^SCAN j VIRTUAL TABLE/),
      expect.stringMatching(/^SEARCH h USING PRIMARY KEY \(prefix=\?\)/),
      expect.stringMatching(/^SEARCH t USING INTEGER PRIMARY KEY \(rowid=\?\)/),
      expect.stringMatching(/^SEARCH b USING INTEGER PRIMARY KEY \(rowid=\?\)/),
    ]);
  });

  it("finds a merged hash with one seek of the index table's key, and the rows after the mark from the rowid's B-tree", () => {
    const found = (db.prepare(`EXPLAIN QUERY PLAN ${HASH_INDEX_SQL.findMerged}`).all('0123456789abcdef', '0x01') as Array<{ detail: string }>).map((row) => row.detail);
    expect(found, found.join(' | ')).toEqual([
      expect.stringMatching(/^SEARCH h USING PRIMARY KEY \(prefix=\?\)/),
      expect.stringMatching(/^SEARCH t USING INTEGER PRIMARY KEY \(rowid=\?\)/),
    ]);
    const after = (db.prepare(`EXPLAIN QUERY PLAN ${HASH_INDEX_SQL.rowsAfter}`).all(1) as Array<{ detail: string }>).map((row) => row.detail);
    expect(after, after.join(' | ')).toEqual([expect.stringMatching(/^SEARCH transactions USING INTEGER PRIMARY KEY \(rowid>\?\)/)]);
  });

  it("checks a group commit's hashes with one seek of the index table per hash, and merges a step's rows by row number, sorted once", () => {
    const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('["0x01"]') as Array<{ detail: string }>).map((row) => row.detail);
    const checked = plan(HASH_INDEX_SQL.anyMerged);
    expect(checked, checked.join(' | ')).toEqual([
      expect.stringMatching(/^SCAN j VIRTUAL TABLE/),
      expect.stringMatching(/^SEARCH h USING PRIMARY KEY \(prefix=\?\)/),
      expect.stringMatching(/^SEARCH t USING INTEGER PRIMARY KEY \(rowid=\?\)/),
    ]);
    const merged = plan(HASH_INDEX_SQL.mergeRows);
    expect(merged, merged.join(' | ')).toEqual([
      expect.stringMatching(/^SEARCH t USING INTEGER PRIMARY KEY \(rowid=\?\)/),
      expect.stringMatching(/^LIST SUBQUERY/),
      expect.stringMatching(/^SCAN json_each VIRTUAL TABLE/),
      // The step's keys in the index's order, so that the inserts walk its leaves once.
      'USE TEMP B-TREE FOR ORDER BY',
    ]);
  });

  /** The covering indexes an account's sealed history is read from, the sender's side and the receiver's (its pending part is in memory). */
  const HISTORY_SEARCHES = [
    'SEARCH transactions USING COVERING INDEX transactions_sealed_by_from (from_id=? AND seq<?)',
    'SEARCH transactions USING COVERING INDEX transactions_sealed_by_to (to_id=? AND seq<?)',
  ];

  it("reads an account's sealed history from its two covering indexes, merged in order: no scan of the table, no sort", () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL.accountHistory}`).all('alice', 1000, 'alice', 1000, 21) as Array<{ detail: string }>).map((row) => row.detail);
    const shown = plan.join(' | ');
    expect(plan, shown).toContain('MERGE (UNION)');
    for (const search of HISTORY_SEARCHES) expect(plan, shown).toContain(search);
    for (const step of plan) {
      expect(step, shown).not.toMatch(/TEMP B-TREE/);
      // The only SCAN is of the merged page itself (at most `limit` rows), never of a table.
      expect(step, shown).toMatch(/^(SEARCH|CO-ROUTINE|MERGE \(UNION\)|LEFT$|RIGHT$|SCAN page$)/);
    }
  });

  it("keeps the history's index searches once statistics say one account sent every transaction (an ANALYZE of a skewed ledger)", async () => {
    // PostgreSQL's planner scanned the table for such a ledger (postgres-schema.test.ts); SQLite must not either.
    const skewed_file = path.join(dir, 'skewed.db');
    const skewed_store = SqliteStore.open({ path: skewed_file });
    await skewed_store.close();
    const skewed = new Database(skewed_file);
    try {
      skewed.exec(`WITH RECURSIVE g(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM g WHERE value < 5000)
        INSERT INTO transactions (tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status)
        SELECT printf('0x%064x', value), 'issuer', 'user-' || value, 10, 'TAB', 'mint', '{}', value, 0, 'pending' FROM g`);
      skewed.exec('ANALYZE');
      const history = (skewed.prepare(`EXPLAIN QUERY PLAN ${SQL.accountHistory}`).all('nobody', 1000, 'nobody', 1000, 21) as Array<{ detail: string }>).map((row) => row.detail);
      for (const search of HISTORY_SEARCHES) expect(history, history.join(' | ')).toContain(search);
      const newest = (skewed.prepare(`EXPLAIN QUERY PLAN ${SQL.newestAccountSeq}`).all('nobody', 1000, 'nobody', 1000) as Array<{ detail: string }>).map((row) => row.detail);
      for (const search of HISTORY_SEARCHES) expect(newest, newest.join(' | ')).toContain(search);
    } finally {
      skewed.close();
    }
  });

  it('reads sealed events from the cursor on: the index seek starts at (block, position), not at the first row of the cursor\'s block', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL.sealedEventTransactions}`).all(1, 1, 1, 1) as Array<{ detail: string }>).map((row) => row.detail);
    expect(plan[0], plan.join(' | ')).toMatch(/^SEARCH t USING INDEX transactions_by_block \(\(block_number,position\)>\(\?,\?\)/);
  });

  it('counts pending transactions up to a limit from the partial index of pending ones only, never the table', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL.pendingCountUpTo}`).all(100_001) as Array<{ detail: string }>).map((row) => row.detail);
    expect(plan, plan.join(' | ')).toContain('SCAN transactions USING COVERING INDEX transactions_pending');
  });

  it.each(['pendingTransactions', 'pendingPostings'] as const)('%s takes pending transactions from the partial index of pending ones only', (name) => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQL[name]}`).all(1) as Array<{ detail: string }>).map((row) => row.detail);
    expect(plan[0]).toMatch(/USING INDEX transactions_pending/);
  });

  it('rebuilds what is kept in memory of the pending rows from the partial index of pending ones, in row order, with no sort', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${PENDING_ROWS_SQL}`).all() as Array<{ detail: string }>).map((row) => row.detail);
    expect(plan, plan.join(' | ')).toEqual(['SCAN transactions USING INDEX transactions_pending']);
  });
});
