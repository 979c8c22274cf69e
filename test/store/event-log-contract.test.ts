/**
 * The event log's store contract, on SQLite and PostgreSQL: events are numbered gap-free in commit
 * order by the writes that store them, read back in sequence order from any cursor with any limit,
 * and the same on every handle (instance) of one database.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBlock, genesisBlock, type BlockHeader } from '../../src/domain/block.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Transaction } from '../../src/domain/transaction.js';
import type { BlockCommit, ChainTotals, LedgerStore, StoredEvent, TransactionOutcome } from '../../src/service/ledger-store.js';
import { createTestDatabase, testStoreKind, type TestDatabase } from '../support/test-database.js';

const T0 = 1_800_000_000;
const TOTALS: ChainTotals = { transactions: 0, users: 0, transfer_volume_units: {} };

let nonce = 0;
function pending(from = 'alice', to = 'bob'): Transaction {
  nonce += 1;
  return pendingTransaction({
    from, to, amount_units: 5n, token: 'TAB', type: 'transfer', metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: T0 + nonce,
  });
}

function seal(parent: BlockHeader, transactions: Transaction[], failed: ReadonlySet<string> = new Set()): BlockCommit {
  const header = buildBlock(parent, transactions.map((tx) => tx.tx_hash), parent.timestamp + 1);
  const outcomes: TransactionOutcome[] = transactions.map((tx, position) => failed.has(tx.tx_hash)
    ? { tx_hash: tx.tx_hash, position, status: 'failed', error: 'insufficient_funds' }
    : { tx_hash: tx.tx_hash, position, status: 'confirmed', error: null });
  return { header, totals: TOTALS, outcomes, balances: [], new_users: [], active_users: [] };
}

/** A short name for each event: type and the hash or block number it is about. */
function label(event: StoredEvent): string {
  return event.type === 'block.sealed' ? `block.sealed #${event.block.number}` : `${event.type} ${event.transaction.tx_hash.slice(0, 10)}`;
}

async function readAll(store: LedgerStore, after: number, limit: number): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for (;;) {
    const page = await store.readEvents(after + events.length, limit);
    if (page.length === 0) return events;
    events.push(...page);
  }
}

describe(`the event log (${testStoreKind()})`, () => {
  let database: TestDatabase;
  let store: LedgerStore;
  const opened: LedgerStore[] = [];

  async function another(): Promise<LedgerStore> {
    const handle = await database.open();
    opened.push(handle);
    return handle;
  }

  beforeEach(async () => {
    database = await createTestDatabase();
    store = await another();
  });
  afterEach(async () => {
    for (const handle of opened.splice(0)) await handle.close();
    await database.drop();
  });

  it('numbers genesis, acceptances, outcomes and block.sealed gap-free, outcomes before their block.sealed', async () => {
    expect(await store.eventHead()).toBe(0);
    expect(await store.readEvents(0, 10)).toEqual([]);
    const genesis = genesisBlock(T0);
    await store.commitBlock({ header: genesis, totals: TOTALS, outcomes: [], balances: [], new_users: [], active_users: [] });
    const [a, b, c] = [pending(), pending('carol', 'dave'), pending()];
    await store.appendPending([a, b].map((transaction) => ({ transaction, idempotency: null })));
    await store.appendPending([{ transaction: c, idempotency: null }]);
    const block = seal(genesis, [a, b], new Set([b.tx_hash]));
    await store.commitBlock(block);
    expect(await store.eventHead()).toBe(7);

    const events = await store.readEvents(0, 100);
    expect(events.map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(events.map(label)).toEqual([
      'block.sealed #0',
      `transaction.accepted ${a.tx_hash.slice(0, 10)}`,
      `transaction.accepted ${b.tx_hash.slice(0, 10)}`,
      `transaction.accepted ${c.tx_hash.slice(0, 10)}`,
      `transaction.confirmed ${a.tx_hash.slice(0, 10)}`,
      `transaction.failed ${b.tx_hash.slice(0, 10)}`,
      'block.sealed #1',
    ]);
    const confirmed = events[4] as Extract<StoredEvent, { block_timestamp: number }>;
    expect(confirmed.transaction).toMatchObject({ status: 'confirmed', block_number: 1, block_hash: block.header.hash, position: 0 });
    expect(confirmed.block_timestamp).toBe(block.header.timestamp);
    // An accepted event is about the transaction as stored; what became of it later is in its own event.
    expect((events[1] as Extract<StoredEvent, { type: 'transaction.accepted' }>).transaction.tx_hash).toBe(a.tx_hash);
  });

  it('reads the same log from every cursor with every limit, and on another handle', async () => {
    let parent = genesisBlock(T0);
    await store.commitBlock({ header: parent, totals: TOTALS, outcomes: [], balances: [], new_users: [], active_users: [] });
    for (let round = 0; round < 4; round += 1) {
      const batch = Array.from({ length: 3 + round }, () => pending());
      await store.appendPending(batch.map((transaction) => ({ transaction, idempotency: null })));
      const commit = seal(parent, batch);
      await store.commitBlock(commit);
      parent = commit.header;
    }
    const whole = await store.readEvents(0, 1000);
    const head = await store.eventHead();
    expect(whole.map((event) => event.sequence)).toEqual(Array.from({ length: head }, (_, index) => index + 1));
    const other = await another();
    for (const limit of [1, 2, 3, 5, 7]) {
      for (let after = 0; after <= head; after += 1) {
        const page = await other.readEvents(after, limit);
        expect(page.map(label)).toEqual(whole.slice(after, after + limit).map(label));
      }
    }
    expect((await readAll(store, 0, 2)).map(label)).toEqual(whole.map(label));
  });

  it('gives no sequence to an idempotent replay', async () => {
    const first = pending();
    const idempotency = { caller: 'alice', key: 'k1', request_hash: 'r'.repeat(64) };
    await store.appendPending([{ transaction: first, idempotency }]);
    const results = await store.appendPending([{ transaction: pending(), idempotency }, { transaction: pending(), idempotency: null }]);
    expect(results.map((result) => result.kind)).toEqual(['replay', 'stored']);
    expect(await store.eventHead()).toBe(2);
    expect((await store.readEvents(0, 10)).map((event) => event.sequence)).toEqual([1, 2]);
  });

  it("knows the head its own appends took, committed, without reading it; not another handle's", async () => {
    expect(store.appendedEventHead()).toBe(0);
    const genesis = genesisBlock(T0);
    await store.commitBlock({ header: genesis, totals: TOTALS, outcomes: [], balances: [], new_users: [], active_users: [] });
    await store.appendPending([pending(), pending()].map((transaction) => ({ transaction, idempotency: null })));
    expect(store.appendedEventHead()).toBe(3);
    expect(await store.eventHead()).toBe(3);
    const other = await another();
    await other.appendPending([{ transaction: pending(), idempotency: null }]);
    expect(other.appendedEventHead()).toBe(4);
    expect(store.appendedEventHead()).toBe(3); // a lower bound: the other handle tells of its own
    const idempotency = { caller: 'alice', key: 'k1', request_hash: 'r'.repeat(64) };
    await store.appendPending([{ transaction: pending(), idempotency }]);
    expect(store.appendedEventHead()).toBe(5);
    await store.appendPending([{ transaction: pending(), idempotency }]); // a replay takes no sequence
    expect(store.appendedEventHead()).toBe(5);
    // Appends made at once: the head is the newest of theirs, whichever is durable last.
    await Promise.all([store.appendPending([{ transaction: pending(), idempotency: null }]), store.appendPending([{ transaction: pending(), idempotency: null }])]);
    expect(store.appendedEventHead()).toBe(7);
  });

  it('keeps the log gap-free while two handles append concurrently', async () => {
    const other = await another();
    const writes: Array<Promise<unknown>> = [];
    for (let index = 0; index < 40; index += 1) {
      const handle = index % 2 === 0 ? store : other;
      writes.push(handle.appendPending([pending(), pending()].map((transaction) => ({ transaction, idempotency: null }))));
    }
    await Promise.all(writes);
    const events = await readAll(other, 0, 7);
    expect(events.map((event) => event.sequence)).toEqual(Array.from({ length: 80 }, (_, index) => index + 1));
    expect(new Set(events.map(label)).size).toBe(80);
  });
});
