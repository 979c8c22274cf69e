import { afterEach, describe, expect, it } from 'vitest';
import { OverloadedError, StorageUnavailableError } from '../../src/domain/shared/errors.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Transaction } from '../../src/domain/transaction.js';
import type { AppendResult, LedgerStore, PendingAppend } from '../../src/service/ledger-store.js';
import { SubmissionWriter } from '../../src/service/submission-writer.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

function numberedTransaction(index: number): Transaction {
  const preimage = { from: 'alice', to: 'bob', amount_units: BigInt(index + 1), token: 'TAB', type: 'transfer' as const, metadata: {}, nonce: index.toString(16).padStart(32, '0'), timestamp: 1_800_000_000 };
  return pendingTransaction(preimage);
}

/** Counts the store commits the writer makes. */
function countingStore(store: SqliteStore): { store: LedgerStore; commits: number[] } {
  const commits: number[] = [];
  const counting = Object.create(store) as LedgerStore;
  counting.appendPending = async (batch: readonly PendingAppend[]): Promise<AppendResult[]> => {
    commits.push(batch.length);
    return store.appendPending(batch);
  };
  return { store: counting, commits };
}

describe('submission writer (group commit)', () => {
  const stores: SqliteStore[] = [];
  afterEach(async () => { for (const store of stores.splice(0)) await store.close(); });
  const open = () => { const store = SqliteStore.open({ path: ':memory:' }); stores.push(store); return store; };

  it('shares one commit among the appends that arrive together, in order', async () => {
    const sqlite = open();
    const { store, commits } = countingStore(sqlite);
    const writer = new SubmissionWriter(store);
    const transactions = Array.from({ length: 50 }, (_, index) => numberedTransaction(index));
    const results = await Promise.all(transactions.map((transaction) => writer.append({ transaction, idempotency: null })));
    expect(results.every((result) => result.kind === 'stored')).toBe(true);
    expect(commits).toEqual([50]);
    const pending = await sqlite.pendingTransactions(100);
    expect(pending.map((tx) => tx.tx_hash)).toEqual(transactions.map((tx) => tx.tx_hash));
  });

  it('splits a burst into batches of at most batch_size_max', async () => {
    const { store, commits } = countingStore(open());
    const writer = new SubmissionWriter(store, { batch_size_max: 8, queue_length_max: 1000 });
    await Promise.all(Array.from({ length: 20 }, (_, index) => writer.append({ transaction: numberedTransaction(index), idempotency: null })));
    expect(commits).toEqual([8, 8, 4]);
  });

  it('never splits one appendMany between commits, and gives a larger one a commit of its own', async () => {
    const { store, commits } = countingStore(open());
    const writer = new SubmissionWriter(store, { batch_size_max: 8, queue_length_max: 1000 });
    const item = (index: number) => ({ transaction: numberedTransaction(index), idempotency: null });
    const groups = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], Array.from({ length: 12 }, (_, index) => 10 + index), [22]];
    const results = await Promise.all(groups.map((group) => writer.appendMany(group.map(item))));
    expect(results.map((group) => group.length)).toEqual([5, 5, 12, 1]);
    expect(commits).toEqual([5, 5, 12, 1]);
    expect(writer.queue_length).toBe(0);
  });

  it('refuses work beyond its queue limit with OverloadedError, and keeps what it accepted', async () => {
    const sqlite = open();
    const writer = new SubmissionWriter(sqlite, { batch_size_max: 10, queue_length_max: 5 });
    const accepted = Array.from({ length: 5 }, (_, index) => writer.append({ transaction: numberedTransaction(index), idempotency: null }));
    await expect(writer.append({ transaction: numberedTransaction(99), idempotency: null })).rejects.toBeInstanceOf(OverloadedError);
    await Promise.all(accepted);
    expect(await sqlite.pendingCount()).toBe(5);
  });

  it('rejects every waiter of a failed commit, and writes none of that batch', async () => {
    const sqlite = open();
    const writer = new SubmissionWriter(sqlite);
    const duplicate = numberedTransaction(1);
    const results = await Promise.allSettled([
      writer.append({ transaction: numberedTransaction(0), idempotency: null }),
      writer.append({ transaction: duplicate, idempotency: null }),
      writer.append({ transaction: duplicate, idempotency: null }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(await sqlite.pendingCount()).toBe(0);
  });

  /** A store whose first commit waits for `release` and then fails with `failure`; later ones are the real store's. */
  function failingOnce(store: SqliteStore, failure: Error): { store: LedgerStore; commits: number[]; release: () => void } {
    const commits: number[] = [];
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const failing = Object.create(store) as LedgerStore;
    failing.appendPending = async (batch: readonly PendingAppend[]): Promise<AppendResult[]> => {
      commits.push(batch.length);
      if (commits.length > 1) return store.appendPending(batch);
      await released;
      throw failure;
    };
    return { store: failing, commits, release };
  }

  it('refuses the appends queued behind a commit that met a storage fault with it, without a commit of their own', async () => {
    const sqlite = open();
    const fault = new StorageUnavailableError('the database stopped answering', { cause: new Error('query timeout') });
    const { store, commits, release } = failingOnce(sqlite, fault);
    const writer = new SubmissionWriter(store);
    const first = writer.append({ transaction: numberedTransaction(0), idempotency: null });
    await new Promise((resolve) => setImmediate(resolve));
    expect(commits).toEqual([1]);
    const queued = [1, 2].map((index) => writer.append({ transaction: numberedTransaction(index), idempotency: null }));
    expect(writer.queue_length).toBe(2);
    release();
    const settled = await Promise.allSettled([first, ...queued]);
    expect(settled.map((result) => (result.status === 'rejected' ? result.reason : result.value))).toEqual([fault, fault, fault]);
    expect(commits).toEqual([1]);
    expect(writer.queue_length).toBe(0);
    // The next append gets a commit of its own, as ever.
    expect((await writer.append({ transaction: numberedTransaction(3), idempotency: null })).kind).toBe('stored');
    expect(commits).toEqual([1, 1]);
    expect(await sqlite.pendingCount()).toBe(1);
  });

  it('gives the appends queued behind a commit that failed for any other reason a commit of their own', async () => {
    const sqlite = open();
    const { store, commits, release } = failingOnce(sqlite, new Error('a constraint of this batch'));
    const writer = new SubmissionWriter(store);
    const first = writer.append({ transaction: numberedTransaction(0), idempotency: null });
    await new Promise((resolve) => setImmediate(resolve));
    const queued = [1, 2].map((index) => writer.append({ transaction: numberedTransaction(index), idempotency: null }));
    release();
    await expect(first).rejects.toThrow('a constraint of this batch');
    expect((await Promise.all(queued)).map((result) => result.kind)).toEqual(['stored', 'stored']);
    expect(commits).toEqual([1, 2]);
    expect(await sqlite.pendingCount()).toBe(2);
  });

  it('drain waits for everything queued', async () => {
    const sqlite = open();
    const writer = new SubmissionWriter(sqlite, { batch_size_max: 3, queue_length_max: 100 });
    for (let index = 0; index < 10; index += 1) void writer.append({ transaction: numberedTransaction(index), idempotency: null });
    await writer.drain();
    expect(await sqlite.pendingCount()).toBe(10);
  });
});
