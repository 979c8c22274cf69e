/**
 * The failure budget's pending debits on PostgreSQL, kept in memory per instance at an event sequence
 * (postgres-failure-budget.ts): an instance far behind reads every pending row instead of the range,
 * and one whose database was put back (a restore) reads it whole again; either way it judges by what
 * the database holds, never by what it remembered.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBlock, type BlockHeader } from '../../../src/domain/block.js';
import type { AppendResult, LedgerStore } from '../../../src/service/ledger-store.js';
import { CATCH_UP_SEQUENCES_MAX } from '../../../src/store/postgres/postgres-failure-budget.js';
import { connectToSchema, createTestDatabase, type TestDatabase } from '../../support/test-database.js';
import { fundAlice, HOUR, refusing, tx } from './alice-funded.js';

const kinds = (results: AppendResult[]) => results.map((result) => result.kind);

describe('pending debits of a PostgreSQL instance', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  const opened: LedgerStore[] = [];
  let parent: BlockHeader;

  async function open(): Promise<LedgerStore> {
    const store = await database.open();
    opened.push(store);
    return store;
  }

  beforeEach(async () => {
    database = await createTestDatabase('postgres');
    sql = await connectToSchema(database);
    parent = await fundAlice(await open());
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await sql.end();
    await database.drop();
  });

  it('reads every pending row when it is further behind than CATCH_UP_SEQUENCES_MAX', async () => {
    const [first, second] = [opened[0] as LedgerStore, await open()];
    expect(kinds(await first.appendPending([refusing(tx('alice', 10n))]))).toEqual(['stored']);
    // `first` knows its figure; `second` writes 60, and then as many events as a long absence would pass.
    expect(kinds(await second.appendPending([refusing(tx('alice', 60n))]))).toEqual(['stored']);
    await sql.query('UPDATE event_counter SET last_sequence = last_sequence + $1', [CATCH_UP_SEQUENCES_MAX + 1]);
    expect(kinds(await first.appendPending([refusing(tx('alice', 31n))]))).toEqual(['refused']);
    expect(kinds(await first.appendPending([refusing(tx('alice', 30n))]))).toEqual(['stored']);
  });

  it('reads every pending row when the database is behind what it knew (put back by a restore)', async () => {
    const store = opened[0] as LedgerStore;
    const before = (await sql.query<{ last_sequence: string }>('SELECT last_sequence::text AS last_sequence FROM event_counter')).rows[0]?.last_sequence;
    const gone = tx('alice', 90n);
    expect(kinds(await store.appendPending([refusing(gone)]))).toEqual(['stored']);
    // The restore: the append is gone, and the counter is back where it was.
    // (The schema refuses both to anyone but the owner lifting its guards, as a restore replaces the tables.)
    const restored = ['transactions', 'pending_transactions', 'event_counter'];
    for (const table of restored) await sql.query(`ALTER TABLE ${table} DISABLE TRIGGER USER`);
    await sql.query('DELETE FROM pending_transactions WHERE seq = (SELECT seq FROM transactions WHERE tx_hash = $1)', [gone.tx_hash]);
    await sql.query('DELETE FROM transactions WHERE tx_hash = $1', [gone.tx_hash]);
    await sql.query('UPDATE event_counter SET last_sequence = $1', [before]);
    for (const table of restored) await sql.query(`ALTER TABLE ${table} ENABLE TRIGGER USER`);
    expect(kinds(await store.appendPending([refusing(tx('alice', 100n))]))).toEqual(['stored']);
  });

  it("never covers by an account's floor more than it has: after its own debits, their sealing, a failure and another instance's debits", async () => {
    const [store, other] = [opened[0] as LedgerStore, await open()];
    // Alice has 100: 60 is covered (and the balance read becomes her floor, 40 after it).
    const sixty = tx('alice', 60n);
    expect(kinds(await store.appendPending([refusing(sixty)]))).toEqual(['stored']);
    expect(kinds(await store.appendPending([refusing(tx('alice', 41n))]))).toEqual(['refused']);
    // Sealed: 40 left, nothing pending; the floor stays 40.
    const header = buildBlock(parent, [sixty.tx_hash], HOUR + 2);
    await store.commitBlock({
      header, totals: { transactions: 2, users: 2, transfer_volume_units: {} }, outcomes: [{ tx_hash: sixty.tx_hash, position: 0, status: 'confirmed', error: null }],
      balances: [{ user_id: 'alice', token: 'TAB', units: 40n }, { user_id: 'bob', token: 'TAB', units: 60n }], new_users: ['bob'], active_users: [],
    });
    parent = header;
    expect(kinds(await store.appendPending([refusing(tx('alice', 41n))]))).toEqual(['refused']);
    const thirty = tx('alice', 30n);
    expect(kinds(await store.appendPending([refusing(thirty)]))).toEqual(['stored']);
    // Another instance takes the last 10; the first learns of it before it covers anything more.
    expect(kinds(await other.appendPending([refusing(tx('alice', 10n))]))).toEqual(['stored']);
    expect(kinds(await store.appendPending([refusing(tx('alice', 1n))]))).toEqual(['refused']);
    // The 30 fails when sealed: 30 more is available, though the floor does not know it; the balance does.
    const failed = buildBlock(parent, [thirty.tx_hash], HOUR + 3);
    await store.commitBlock({
      header: failed, totals: { transactions: 3, users: 2, transfer_volume_units: {} }, outcomes: [{ tx_hash: thirty.tx_hash, position: 0, status: 'failed', error: 'insufficient_funds' }],
      balances: [], new_users: [], active_users: [],
    });
    expect(kinds(await store.appendPending([refusing(tx('alice', 31n))]))).toEqual(['refused']);
    expect(kinds(await store.appendPending([refusing(tx('alice', 30n))]))).toEqual(['stored']);
  });
});
