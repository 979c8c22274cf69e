/**
 * A group commit on PostgreSQL in as few round trips as it can be: without idempotency keys and with its
 * debits covered by what the instance knows, it is one statement, which the server runs as a
 * transaction of its own (no BEGIN, no COMMIT); anything else takes an explicit transaction, and the
 * outcome is the same either way.
 */
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { Transaction } from '../../../src/domain/transaction.js';
import type { AppendResult, LedgerStore, PendingAppend } from '../../../src/service/ledger-store.js';
import { connectToSchema, createTestDatabase, type TestDatabase } from '../../support/test-database.js';
import { fundAlice, refusing, tx } from './alice-funded.js';

const keyed = (transaction: Transaction, key: string): PendingAppend => ({
  transaction, idempotency: { caller: 'client-1', key, request_hash: `0x${'ab'.repeat(32)}` }, failure_budget: null,
});
const kinds = (results: AppendResult[]) => results.map((result) => result.kind);

/** The text of every query the driver is asked to run, in order. */
function statementTexts(spy: MockInstance): string[] {
  return spy.mock.calls.map(([query]) => (typeof query === 'string' ? query : (query as { text?: string }).text ?? ''));
}

describe('a PostgreSQL group commit', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  let store: LedgerStore;
  let queries: MockInstance;

  beforeEach(async () => {
    database = await createTestDatabase('postgres');
    sql = await connectToSchema(database);
    store = await database.open();
    await fundAlice(store);
    queries = vi.spyOn(pg.Client.prototype, 'query');
  });
  afterEach(async () => {
    queries.mockRestore();
    await store.close();
    await sql.end();
    await database.drop();
  });

  const pendingHashes = async () => (await sql.query<{ tx_hash: string }>(
    "SELECT tx_hash FROM transactions t JOIN pending_transactions p ON p.seq = t.seq ORDER BY t.seq",
  )).rows.map((row) => row.tx_hash);

  it('without keys and covered, is one statement: no BEGIN and no COMMIT', async () => {
    // An instance's first debit is judged under the lock: it learns its figure of pending debits there.
    const learning = tx('alice', 10n);
    expect(kinds(await store.appendPending([refusing(learning)]))).toEqual(['stored']);
    queries.mockClear();
    const [first, second] = [tx('alice', 30n), tx('alice', 40n)];
    expect(kinds(await store.appendPending([refusing(first), refusing(second)]))).toEqual(['stored', 'stored']);
    const texts = statementTexts(queries);
    expect(texts.filter((text) => /^\s*(BEGIN|COMMIT)/.test(text))).toEqual([]);
    expect(texts.filter((text) => text.includes('INSERT INTO transactions'))).toHaveLength(1);
    expect(await pendingHashes()).toEqual([learning.tx_hash, first.tx_hash, second.tx_hash]);
  });

  it('with an idempotency key, claims it and inserts in one explicit transaction; a repeat is a replay', async () => {
    const first = tx('alice', 30n);
    expect(kinds(await store.appendPending([keyed(first, 'order-1')]))).toEqual(['stored']);
    expect(statementTexts(queries).filter((text) => /^\s*(BEGIN|COMMIT)/.test(text))).toEqual(['BEGIN', 'COMMIT']);
    expect(kinds(await store.appendPending([keyed(tx('alice', 30n), 'order-1')]))).toEqual(['replay']);
    expect(await pendingHashes()).toEqual([first.tx_hash]);
  });

  it('not covered by what the instance knows, is judged in a transaction and refused, writing nothing', async () => {
    // Alice holds 100 sealed and has 90 pending: 20 more is beyond what her balance covers.
    expect(kinds(await store.appendPending([refusing(tx('alice', 90n))]))).toEqual(['stored']);
    queries.mockClear();
    const before = await pendingHashes();
    expect(kinds(await store.appendPending([refusing(tx('alice', 20n))]))).toEqual(['refused']);
    expect(statementTexts(queries).filter((text) => /^\s*BEGIN/.test(text))).toEqual(['BEGIN']);
    expect(await pendingHashes()).toEqual(before);
  });

  it('when another writer moved the counter, writes nothing alone and takes the transaction instead', async () => {
    const other = await database.open();
    try {
      expect(kinds(await other.appendPending([refusing(tx('alice', 50n))]))).toEqual(['stored']);
      queries.mockClear();
      // This instance does not know of the other's 50: the statement alone finds the counter moved.
      expect(kinds(await store.appendPending([refusing(tx('alice', 60n))]))).toEqual(['refused']);
      expect(kinds(await store.appendPending([refusing(tx('alice', 50n))]))).toEqual(['stored']);
      expect(await pendingHashes()).toHaveLength(2);
    } finally {
      await other.close();
    }
  });
});
