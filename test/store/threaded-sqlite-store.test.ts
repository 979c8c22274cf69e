/**
 * The SQLite store on a thread of its own (src/store/sqlite/thread): what crosses between the threads
 * arrives as it was sent (the bulk codecs, property-based), errors keep their class, the event loop is
 * free while the thread writes, a commit whose postings the thread has let go is sent whole, and a
 * thread that dies turns every call into a storage fault rather than a hang. The store contract suites
 * run on it too (test/support/test-database.ts opens it on SQLite).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBlock, genesisBlock } from '../../src/domain/block.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import { InvariantViolation, StorageUnavailableError } from '../../src/domain/shared/errors.js';
import type { Transaction } from '../../src/domain/transaction.js';
import type { BlockCommit, PendingPosting, TransactionOutcome } from '../../src/service/ledger-store.js';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { StorageOpenError } from '../../src/store/storage-faults.js';
import { packCommit, packPostings, unpackCommit, unpackPostings } from '../../src/store/sqlite/thread/bulk-codecs.js';
import { ThreadedSqliteStore } from '../../src/store/sqlite/thread/threaded-sqlite-store.js';

const T0 = 1_800_000_000;

/** Through a real port, with the buffers moved as the store moves them. */
function sent<T>(value: T, transfer: ArrayBuffer[]): T {
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(value, transfer);
  const received = receiveMessageOnPort(port2)?.message as T;
  port1.close();
  return received;
}

const text = fc.string({ unit: 'binary', maxLength: 12 });
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const posting: fc.Arbitrary<PendingPosting> = fc.record({
  seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), tx_hash: text, from: text, to: text, amount_units: int64, token: fc.constantFrom('TAB', 'USDG'),
  type: fc.constantFrom('transfer', 'mint', 'burn', 'swap'), timestamp: fc.integer({ min: 0, max: 2 ** 40 }), min_receive_units: fc.option(int64, { nil: null }),
});
const outcome: fc.Arbitrary<TransactionOutcome> = fc.record({
  tx_hash: text, seq: fc.integer({ min: 1, max: 2 ** 40 }), position: fc.nat(), status: fc.constantFrom('confirmed', 'failed'),
  error: fc.option(fc.constantFrom('insufficient_funds', 'slippage_exceeded'), { nil: null }), amount_out_units: fc.option(int64, { nil: null }),
}, { requiredKeys: ['tx_hash', 'position', 'status', 'error'] }) as fc.Arbitrary<TransactionOutcome>;

describe('what crosses to and from the store thread', () => {
  it('gives back the postings it packs, every field', () => {
    fc.assert(fc.property(fc.array(posting, { maxLength: 40 }), fc.nat(), (postings, served_id) => {
      const packed = packPostings(postings, served_id);
      const received = sent(packed.value, packed.transfer);
      expect(received.served_id).toBe(served_id);
      expect(unpackPostings(received)).toEqual(postings);
    }));
  });

  it('gives back a commit: outcomes with and without row numbers and payouts, balances, users, its postings whole or by number', () => {
    const balance = fc.record({ user_id: text, token: fc.constantFrom('TAB', 'USDG'), units: int64 });
    fc.assert(fc.property(
      fc.array(outcome, { maxLength: 30 }), fc.array(balance, { maxLength: 30 }), fc.array(text, { maxLength: 10 }), fc.array(text, { maxLength: 10 }),
      fc.option(fc.array(posting, { maxLength: 10 }), { nil: undefined }), fc.boolean(),
      (outcomes, balances, new_users, active_users, postings, by_number) => {
        const commit: BlockCommit = {
          header: genesisBlock(T0), totals: { transactions: 0, users: 0, transfer_volume_units: { TAB: 5n } }, outcomes, balances, new_users, active_users,
          ...(postings === undefined ? {} : { postings }),
        };
        const served_id = postings !== undefined && by_number ? 7 : null;
        const packed = packCommit(commit, served_id);
        const received = sent(packed.value, packed.transfer);
        const unpacked = unpackCommit(received, (id) => (id === 7 && postings !== undefined ? postings : null));
        expect(unpacked).toEqual(commit);
      },
    ));
  });

  it('says so when the postings a commit names are no longer held, and refuses a value out of 64 bits', () => {
    const commit: BlockCommit = { header: genesisBlock(T0), totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], balances: [], new_users: [], active_users: [], postings: [] };
    const packed = packCommit(commit, 3);
    expect(unpackCommit(packed.value, () => null)).toBeNull();
    const too_large = { seq: 1, tx_hash: 'h', from: 'a', to: 'b', amount_units: 2n ** 63n, token: 'TAB', type: 'transfer', timestamp: T0, min_receive_units: null } as const;
    expect(() => packPostings([too_large], 1)).toThrow(InvariantViolation);
  });
});

describe('the SQLite store on its own thread', () => {
  const dirs: string[] = [];
  const stores: ThreadedSqliteStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  function ledgerFile(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-threaded-'));
    dirs.push(dir);
    return path.join(dir, 'ledger.db');
  }

  async function open(file = ledgerFile(), health: { failures: unknown[] } | null = null): Promise<ThreadedSqliteStore> {
    const store = await ThreadedSqliteStore.open({
      path: file, ...(health === null ? {} : { health: { writeFailed: (_operation, error) => health.failures.push(error), writeSucceeded: () => undefined } }),
    });
    stores.push(store);
    return store;
  }

  function transfer(index: number): Transaction {
    return pendingTransaction({ from: 'alice', to: `bob-${index % 50}`, amount_units: 1n, token: 'TAB', type: 'transfer', metadata: {}, nonce: index.toString(16).padStart(32, '0'), timestamp: T0 });
  }

  it('keeps an error its class across the thread: a broken invariant, and a database that is not a ledger', async () => {
    const store = await open();
    const genesis = genesisBlock(T0);
    const declared_one: BlockCommit = { header: { ...genesis, transactions_count: 1 }, totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], balances: [], new_users: [], active_users: [] };
    await expect(store.commitBlock(declared_one)).rejects.toThrow(InvariantViolation);
    expect(await store.latestBlock()).toBeNull();

    const foreign = ledgerFile();
    const db = new Database(foreign);
    db.exec('CREATE TABLE customers (id INTEGER PRIMARY KEY)');
    db.close();
    await expect(ThreadedSqliteStore.open({ path: foreign })).rejects.toThrow(StorageOpenError);
  });

  it('leaves the event loop free while the thread writes', async () => {
    const store = await open();
    const order: string[] = [];
    const appended = store.appendPending(Array.from({ length: 2000 }, (_, index) => ({ transaction: transfer(index), idempotency: null }))).then(() => order.push('appended'));
    await new Promise<void>((resolve) => setImmediate(() => { order.push('loop turned'); resolve(); }));
    await appended;
    expect(order).toEqual(['loop turned', 'appended']);
    expect(await store.pendingCount()).toBe(2000);
    expect(store.appendedEventHead()).toBe(2000);
  });

  it('seals with postings it no longer holds by sending them whole', async () => {
    const store = await open();
    await store.commitBlock({ header: genesisBlock(T0), totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], balances: [], new_users: [], active_users: [] });
    const mints = Array.from({ length: 3 }, (_, index) => pendingTransaction({ from: 'treasury', to: `user-${index}`, amount_units: 5n, token: 'TAB', type: 'mint', metadata: {}, nonce: `${index}`.padStart(32, '0'), timestamp: T0 }));
    await store.appendPending(mints.map((transaction) => ({ transaction, idempotency: null })));
    const postings = await store.pendingPostings(10);
    // The thread keeps the last few answers for their commits; these push the first one out.
    for (let index = 0; index < 6; index += 1) await store.pendingPostings(10);
    const parent = await store.latestBlock();
    const header = buildBlock(parent!, postings.map((posting) => posting.tx_hash), T0 + 1);
    const outcomes: TransactionOutcome[] = postings.map((posting, position) => ({ tx_hash: posting.tx_hash, seq: posting.seq, position, status: 'confirmed', error: null }));
    const balances = mints.map((mint) => ({ user_id: mint.to, token: 'TAB', units: 5n }));
    await store.commitBlock({ header, totals: { transactions: 3, users: 3, transfer_volume_units: {} }, outcomes, balances, new_users: [], active_users: [], postings });
    expect(await store.pendingCount()).toBe(0);
    expect((await store.getTransaction(mints[2]!.tx_hash))?.status).toBe('confirmed');
    expect(await store.balances('user-1')).toEqual(new Map([['TAB', 5n]]));
  });

  it('turns every call into a storage fault, and tells the health, once its thread is gone', async () => {
    const health = { failures: [] as unknown[] };
    const store = await open(ledgerFile(), health);
    await store.ping();
    await (store as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await expect(store.ping()).rejects.toThrow(StorageUnavailableError);
    await expect(store.appendPending([{ transaction: transfer(1), idempotency: null }])).rejects.toThrow(StorageUnavailableError);
    expect(health.failures).toHaveLength(1);
    await store.close();
  });
});
