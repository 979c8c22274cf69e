/**
 * A group commit on PostgreSQL in as few round trips as it can be: with its debits covered by what the
 * instance knows and every idempotency key new, it is one statement, which the server runs as a
 * transaction of its own (no BEGIN, no COMMIT); anything else (a key held before or twice in the group,
 * a debit to judge) takes an explicit transaction, and the outcome is the same either way.
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
/** As keyed, and judged by the failure budget with none to spend (refusing). */
const keyedRefusing = (transaction: Transaction, key: string): PendingAppend => ({ ...refusing(transaction), idempotency: keyed(transaction, key).idempotency });
const kinds = (results: AppendResult[]) => results.map((result) => result.kind);

/** The text of every query the driver is asked to run, in order. */
function statementTexts(spy: MockInstance): string[] {
  return spy.mock.calls.map(([query]) => (typeof query === 'string' ? query : (query as { text?: string }).text ?? ''));
}

/** Sessions of this database waiting for a lock. */
async function lockWaits(sql: pg.Client): Promise<number> {
  const result = await sql.query<{ waiting: number }>(
    "SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
  );
  return result.rows[0]?.waiting ?? 0;
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

  const transactionStatements = () => statementTexts(queries).filter((text) => /^\s*(BEGIN|COMMIT)/.test(text));
  const heldKeys = async () => (await sql.query<{ key: string; tx_hash: string }>('SELECT key, tx_hash FROM idempotency_keys ORDER BY key')).rows;
  /**
   * The event sequences of the transactions appended since fundAlice's blocks (whose events follow its
   * mint's): one each, without a gap, the last the counter's, none taken by a statement that wrote nothing.
   */
  const expectEventsWithoutGaps = async () => {
    const sequences = (await sql.query<{ event_seq: string }>("SELECT event_seq::text FROM transactions WHERE type <> 'mint' ORDER BY seq")).rows.map((row) => Number(row.event_seq));
    const counter = (await sql.query<{ last_sequence: string }>('SELECT last_sequence::text FROM event_counter')).rows.map((row) => Number(row.last_sequence));
    expect(sequences).toEqual(sequences.map((_, index) => (sequences[0] as number) + index));
    expect(counter).toEqual([sequences.at(-1)]);
  };

  it('with idempotency keys, claims them and inserts in one statement: no BEGIN and no COMMIT; a repeat is a replay', async () => {
    const learning = tx('alice', 10n);
    expect(kinds(await store.appendPending([refusing(learning)]))).toEqual(['stored']);
    queries.mockClear();
    const [first, second] = [tx('alice', 30n), tx('alice', 20n)];
    expect(kinds(await store.appendPending([keyed(first, 'order-1'), keyed(second, 'order-2')]))).toEqual(['stored', 'stored']);
    expect(transactionStatements()).toEqual([]);
    expect(statementTexts(queries).filter((text) => text.includes('INSERT INTO transactions'))).toHaveLength(1);
    expect(await heldKeys()).toEqual([{ key: 'order-1', tx_hash: first.tx_hash }, { key: 'order-2', tx_hash: second.tx_hash }]);
    queries.mockClear();
    const [repeat] = await store.appendPending([keyed(tx('alice', 30n), 'order-1')]);
    expect(repeat?.kind === 'replay' && repeat.record.tx_hash).toBe(first.tx_hash);
    expect(await pendingHashes()).toEqual([learning.tx_hash, first.tx_hash, second.tx_hash]);
    await expectEventsWithoutGaps();
  });

  it('with a key held before, writes nothing alone: the new items are stored in a transaction, the repeat replayed, the events without a gap', async () => {
    const held = tx('alice', 10n);
    expect(kinds(await store.appendPending([keyed(held, 'order-1')]))).toEqual(['stored']);
    queries.mockClear();
    const [before, after] = [tx('alice', 20n), tx('alice', 30n)];
    const results = await store.appendPending([keyed(before, 'order-0'), keyed(tx('alice', 10n), 'order-1'), keyed(after, 'order-2')]);
    expect(kinds(results)).toEqual(['stored', 'replay', 'stored']);
    expect(results[1]?.kind === 'replay' && results[1].record.tx_hash).toBe(held.tx_hash);
    expect(transactionStatements()).toEqual(['BEGIN', 'COMMIT']);
    expect(await pendingHashes()).toEqual([held.tx_hash, before.tx_hash, after.tx_hash]);
    expect((await heldKeys()).map((row) => row.tx_hash)).toEqual([before.tx_hash, held.tx_hash, after.tx_hash]);
    await expectEventsWithoutGaps();
  });

  it('holding a key twice, takes the transaction: the earliest arrival wins it', async () => {
    const [earliest, latest] = [tx('alice', 10n), tx('alice', 20n)];
    const results = await store.appendPending([keyed(earliest, 'order-1'), keyed(latest, 'order-1')]);
    expect(kinds(results)).toEqual(['stored', 'replay']);
    expect(results[1]?.kind === 'replay' && results[1].record.tx_hash).toBe(earliest.tx_hash);
    expect(transactionStatements()).toEqual(['BEGIN', 'COMMIT']);
    expect(await pendingHashes()).toEqual([earliest.tx_hash]);
  });

  it('in a transaction, locks the event counter before it claims a key, as the one statement does: two instances racing for a key never deadlock', async () => {
    // Another writer holds the counter; the group (a key held twice) takes the transaction and waits.
    const holder = await connectToSchema(database);
    const racer = await connectToSchema(database);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT last_sequence FROM event_counter WHERE id = 1 FOR UPDATE');
      const [earliest, latest] = [tx('alice', 10n), tx('alice', 20n)];
      const appending = store.appendPending([keyed(earliest, 'order-1'), keyed(latest, 'order-1')]);
      await vi.waitFor(async () => expect(await lockWaits(sql)).toBeGreaterThanOrEqual(1), { timeout: 10_000, interval: 10 });
      // The key is not claimed while the group waits for the counter: another instance's one statement
      // (which takes the counter, then the key) could otherwise wait for the key while holding the counter.
      await racer.query('BEGIN');
      await racer.query("SET LOCAL lock_timeout = '2s'");
      const claimed = await racer.query(
        'INSERT INTO idempotency_keys (caller, key, request_hash, tx_hash, timestamp, created_at) VALUES ($1, $2, $3, $4, 0, 0) ON CONFLICT DO NOTHING',
        ['client-1', 'order-1', `0x${'cd'.repeat(32)}`, `0x${'ef'.repeat(32)}`],
      );
      expect(claimed.rowCount).toBe(1);
      await racer.query('ROLLBACK');
      await holder.query('COMMIT');
      expect(kinds(await appending)).toEqual(['stored', 'replay']);
      expect(await pendingHashes()).toEqual([earliest.tx_hash]);
    } finally {
      await racer.end();
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
  });

  it('with keys and debits covered, is one statement; not covered, claims and judges in a transaction', async () => {
    expect(kinds(await store.appendPending([refusing(tx('alice', 10n))]))).toEqual(['stored']);
    queries.mockClear();
    const covered = tx('alice', 50n);
    expect(kinds(await store.appendPending([keyedRefusing(covered, 'order-1')]))).toEqual(['stored']);
    expect(transactionStatements()).toEqual([]);
    queries.mockClear();
    // Alice holds 100 sealed and has 60 pending: 50 more is beyond her balance, 40 is not.
    const [short, fits] = [tx('alice', 50n), tx('alice', 40n)];
    expect(kinds(await store.appendPending([keyedRefusing(short, 'order-2')]))).toEqual(['refused']);
    expect(transactionStatements()).toEqual(['BEGIN', 'COMMIT']);
    expect(kinds(await store.appendPending([keyedRefusing(fits, 'order-2')]))).toEqual(['stored']);
    expect((await heldKeys()).map((row) => row.tx_hash)).toEqual([covered.tx_hash, fits.tx_hash]);
    await expectEventsWithoutGaps();
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
