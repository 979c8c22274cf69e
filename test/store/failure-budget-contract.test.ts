/**
 * The failure budget's part of the store contract (src/failure-budget), on SQLite and PostgreSQL: a
 * debit that the sealed balance less pending debits covers is never charged; an uncovered one is
 * charged to its subject for the clock hour and refused, nothing stored, past the budget; sealed
 * debits (confirmed or failed) stop being pending; two handles (two instances) share one budget.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBlock, genesisBlock, type BlockHeader } from '../../src/domain/block.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../../src/domain/transaction.js';
import type { AppendResult, BalanceChange, LedgerStore, PendingAppend, TransactionOutcome } from '../../src/service/ledger-store.js';
import { createTestDatabase, testStoreKind, type TestDatabase } from '../support/test-database.js';

/** The first second of a clock hour. */
const HOUR = 1_800_000_000;
let sequence = 0;

function tx(from: string, amount_units: bigint, options: { type?: TransactionType; to?: string; timestamp?: number } = {}): Transaction {
  sequence += 1;
  return pendingTransaction({
    from, to: options.to ?? 'bob', amount_units, token: 'TAB', type: options.type ?? 'transfer', metadata: {},
    nonce: sequence.toString(16).padStart(32, '0'), timestamp: options.timestamp ?? HOUR + 10,
  });
}

const charged = (transaction: Transaction, per_hour: number, subject = transaction.from): PendingAppend =>
  ({ transaction, idempotency: null, failure_budget: { subject, per_hour } });

const kinds = (results: AppendResult[]) => results.map((result) => result.kind);

describe(`the failure budget in the store (${testStoreKind()})`, () => {
  let database: TestDatabase;
  let store: LedgerStore;
  let parent: BlockHeader;
  const opened: LedgerStore[] = [];

  async function another(): Promise<LedgerStore> {
    const handle = await database.open();
    opened.push(handle);
    return handle;
  }

  /** Seals `transactions` into the next block with these outcomes and new balances. */
  async function seal(transactions: Transaction[], balances: BalanceChange[], failed: ReadonlySet<Transaction> = new Set(), with_postings = false): Promise<void> {
    const header = buildBlock(parent, transactions.map((item) => item.tx_hash), parent.timestamp + 1);
    const outcomes: TransactionOutcome[] = transactions.map((item, position) => failed.has(item)
      ? { tx_hash: item.tx_hash, position, status: 'failed', error: 'insufficient_funds' }
      : { tx_hash: item.tx_hash, position, status: 'confirmed', error: null });
    // As the block producer does: the rows as pendingPostings read them, which the store then need not read back.
    const postings = with_postings ? (await store.pendingPostings(1000)).filter((posting) => transactions.some((item) => item.tx_hash === posting.tx_hash)) : undefined;
    await store.commitBlock({ header, totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes, balances, new_users: [], active_users: [], postings });
    parent = header;
  }

  /** Gives `user_id` a sealed balance by a mint. */
  async function fund(user_id: string, units: bigint): Promise<void> {
    const mint = tx('treasury', units, { type: 'mint', to: user_id });
    await store.appendPending([charged(mint, 0, 'admin')]);
    await seal([mint], [{ user_id, token: 'TAB', units }]);
  }

  beforeEach(async () => {
    database = await createTestDatabase();
    store = await another();
    parent = genesisBlock(HOUR);
    await store.commitBlock({ header: parent, totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], balances: [], new_users: [], active_users: [] });
  });
  afterEach(async () => {
    for (const handle of opened.splice(0)) await handle.close();
    await database.drop();
  });

  it('never charges a covered debit, counting pending debits, and refuses the first uncovered one at a budget of 0', async () => {
    await fund('alice', 100n);
    expect(kinds(await store.appendPending([charged(tx('alice', 40n), 0), charged(tx('alice', 60n, { type: 'burn' }), 0)]))).toEqual(['stored', 'stored']);
    const [refused] = await store.appendPending([charged(tx('alice', 1n, { timestamp: HOUR + 600 }), 0)]);
    expect(refused).toEqual({ kind: 'refused', retry_after_s: 3000 });
    expect(await store.pendingCount()).toBe(2);
  });

  it('never charges a mint', async () => {
    expect(kinds(await store.appendPending([charged(tx('treasury', 5n, { type: 'mint' }), 0)]))).toEqual(['stored']);
  });

  it('charges uncovered debits to their subject and refuses them past the budget, item by item, until the next hour', async () => {
    const first = await store.appendPending([1, 2, 3, 4, 5].map(() => charged(tx('mallory', 5n), 3)));
    expect(kinds(first)).toEqual(['stored', 'stored', 'stored', 'refused', 'refused']);
    // Another account, same subject (an admin's burns, say): the same budget.
    expect(kinds(await store.appendPending([charged(tx('carol', 5n, { type: 'burn' }), 3, 'mallory')]))).toEqual(['refused']);
    // Another subject has its own budget; the next hour, mallory has a new one.
    expect(kinds(await store.appendPending([charged(tx('trent', 5n), 3)]))).toEqual(['stored']);
    expect(kinds(await store.appendPending([charged(tx('mallory', 5n, { timestamp: HOUR + 3600 }), 3)]))).toEqual(['stored']);
    expect(await store.pendingCount()).toBe(5);
  });

  it('releases the idempotency key of a refused item: nothing of it is stored', async () => {
    const item = { ...charged(tx('mallory', 5n), 0), idempotency: { caller: 'mallory', key: 'k-1', request_hash: 'r'.repeat(64) } };
    expect(kinds(await store.appendPending([item]))).toEqual(['refused']);
    expect(await store.findIdempotency('mallory', 'k-1')).toBeNull();
    expect(await store.eventHead()).toBe(1);
  });

  it.each([
    ['read back from the sealed rows', false],
    ['taken from the postings the block passes', true],
  ])('stops counting a debit as pending once sealed, failed as well as confirmed (what a block settles %s)', async (_how, with_postings) => {
    await fund('alice', 100n);
    const too_much = tx('alice', 150n);
    expect(kinds(await store.appendPending([charged(too_much, 1)]))).toEqual(['stored']);
    // 150 pending: nothing more is covered.
    expect(kinds(await store.appendPending([charged(tx('alice', 100n), 0)]))).toEqual(['refused']);
    await seal([too_much], [], new Set([too_much]), with_postings);
    const spend = tx('alice', 100n);
    expect(kinds(await store.appendPending([charged(spend, 0)]))).toEqual(['stored']);
    await seal([spend], [{ user_id: 'alice', token: 'TAB', units: 0n }, { user_id: 'bob', token: 'TAB', units: 100n }], new Set(), with_postings);
    expect(kinds(await store.appendPending([charged(tx('alice', 1n), 0)]))).toEqual(['refused']);
  });

  it('counts what is pending whoever appended or sealed it: a handle opened later, and a handle that another one sealed under', async () => {
    await fund('alice', 100n);
    const first = tx('alice', 60n);
    expect(kinds(await store.appendPending([charged(first, 0)]))).toEqual(['stored']);
    // Opened after the append (a restart): 60 of the 100 are pending, so 60 more is not covered.
    const later = await another();
    expect(kinds(await later.appendPending([charged(tx('alice', 60n), 0)]))).toEqual(['refused']);
    expect(kinds(await later.appendPending([charged(tx('alice', 40n), 0)]))).toEqual(['stored']);
    // `store` seals the first debit; `later` learns of it from the database, not from `store`.
    await seal([first], [{ user_id: 'alice', token: 'TAB', units: 40n }, { user_id: 'bob', token: 'TAB', units: 60n }]);
    expect(kinds(await later.appendPending([charged(tx('alice', 1n), 0)]))).toEqual(['refused']);
    expect(kinds(await store.appendPending([charged(tx('alice', 1n), 0)]))).toEqual(['refused']);
  });

  it('lets two handles (two instances) together store no more uncovered debits than one budget', async () => {
    const second = await another();
    const rounds = await Promise.all([store, second, store, second].map((handle) =>
      handle.appendPending(Array.from({ length: 4 }, () => charged(tx('mallory', 5n), 5)))));
    expect(rounds.flat().filter((result) => result.kind === 'stored')).toHaveLength(5);
    expect(await store.pendingCount()).toBe(5);
  });

  it('judges racing debits from one account one after the other: one balance covers one of them', async () => {
    await fund('alice', 100n);
    const second = await another();
    const results = await Promise.all([store, second].map((handle) => handle.appendPending([charged(tx('alice', 100n), 0)])));
    expect(results.flat().map((result) => result.kind).sort()).toEqual(['refused', 'stored']);
  });

  it('judges a group commit item by item when one of its debits is not covered: the rest stored in order, one event each, the uncovered one refused and taken back', async () => {
    await fund('alice', 100n);
    const head = await store.eventHead();
    const items = [
      charged(tx('alice', 30n), 0), charged(tx('mallory', 5n), 0),
      charged(tx('treasury', 7n, { type: 'mint' }), 0, 'admin'), charged(tx('alice', 70n), 0),
    ];
    expect(kinds(await store.appendPending(items))).toEqual(['stored', 'refused', 'stored', 'stored']);
    expect(await store.eventHead()).toBe(head + 3);
    expect((await store.readEvents(head, 10)).map((event) => event.type === 'transaction.accepted' ? event.transaction.tx_hash : event.type))
      .toEqual([items[0], items[2], items[3]].map((item) => item?.transaction.tx_hash));
    // Alice's 100 are all pending now; mallory's refused 5 left nothing pending, so a funded mallory is covered.
    expect(kinds(await store.appendPending([charged(tx('alice', 1n), 0)]))).toEqual(['refused']);
    await fund('mallory', 5n);
    expect(kinds(await store.appendPending([charged(tx('mallory', 5n), 0)]))).toEqual(['stored']);
  });
});
