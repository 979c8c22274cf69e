/**
 * The store contract: what the service relies on from any LedgerStore, run against SQLite and
 * PostgreSQL (vitest projects `sqlite` and `postgres`). Where it says "refuses", the store does not
 * check in code: the database's constraints and triggers do, which is what keeps the chain whole when
 * several instances write to one database. "Two handles" are two stores open on one database, as two
 * instances would have.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UNITS_MAX } from '../../src/domain/shared/amount.js';
import { buildBlock, genesisBlock, type BlockHeader } from '../../src/domain/block.js';
import { InvariantViolation } from '../../src/domain/shared/errors.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Metadata, Transaction, TransactionType } from '../../src/domain/transaction.js';
import { TRANSACTIONS_BY_HASH_MAX, type BlockCommit, type ChainTotals, type HistoryEntry, type LedgerStore, type PendingAppend, type TransactionOutcome } from '../../src/service/ledger-store.js';
import { createTestDatabase, testStoreKind, type TestDatabase } from '../support/test-database.js';

const T0 = 1_800_000_000;
const EMPTY_TOTALS: ChainTotals = { transactions: 0, users: 0, transfer_volume_units: {} };

let sequence = 0;
function pending(overrides: { from?: string; to?: string; amount_units?: bigint; type?: TransactionType; metadata?: Metadata; token?: string } = {}): Transaction {
  sequence += 1;
  const preimage = {
    from: overrides.from ?? 'alice', to: overrides.to ?? 'bob', amount_units: overrides.amount_units ?? 5n, token: overrides.token ?? 'TAB',
    type: overrides.type ?? 'transfer', metadata: overrides.metadata ?? {}, nonce: sequence.toString(16).padStart(32, '0'), timestamp: T0 + sequence,
  };
  return pendingTransaction(preimage);
}

const plain = (transaction: Transaction): PendingAppend => ({ transaction, idempotency: null });
const keyed = (transaction: Transaction, caller: string, key: string, request_hash = 'r'.repeat(64)): PendingAppend =>
  ({ transaction, idempotency: { caller, key, request_hash } });

function genesisCommit(timestamp = T0): BlockCommit {
  return { header: genesisBlock(timestamp), totals: EMPTY_TOTALS, outcomes: [], balances: [], new_users: [], active_users: [] };
}

/** A block after `parent` that confirms `transactions` (the caller supplies the balances it wants written). */
function blockCommit(parent: BlockHeader, transactions: Transaction[], extra: Partial<BlockCommit> = {}, timestamp = parent.timestamp + 1): BlockCommit {
  const header = buildBlock(parent, transactions.map((tx) => tx.tx_hash), timestamp);
  const outcomes: TransactionOutcome[] = transactions.map((tx, position) => ({ tx_hash: tx.tx_hash, position, status: 'confirmed', error: null }));
  return { header, totals: { transactions: transactions.length, users: 0, transfer_volume_units: {} }, outcomes, balances: [], new_users: [], active_users: [], ...extra };
}

describe(`the store contract (${testStoreKind()})`, () => {
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

  describe('appending pending transactions', () => {
    it('stores them exactly and returns them oldest first', async () => {
      const metadata = { z: 1, a: { nested: ['é', null, true, 1.5] }, emoji: '🧾', big: 12345678901234 };
      const batch = [pending({ amount_units: UNITS_MAX, metadata }), pending({ amount_units: 1n, type: 'mint', token: 'USDG' }), pending()];
      expect(await store.appendPending(batch.map(plain))).toEqual([{ kind: 'stored' }, { kind: 'stored' }, { kind: 'stored' }]);
      expect(await store.appendPending([plain(pending())])).toEqual([{ kind: 'stored' }]);
      const stored = await store.getTransaction(batch[0]!.tx_hash);
      expect(stored).toEqual(batch[0]);
      expect(stored?.amount_units).toBe(UNITS_MAX);
      expect(JSON.stringify(stored?.metadata)).toBe(JSON.stringify(metadata));
      expect(await store.getTransaction(`0x${'ab'.repeat(32)}`)).toBeNull();
      expect((await store.pendingTransactions(10)).map((tx) => tx.tx_hash).slice(0, 3)).toEqual(batch.map((tx) => tx.tx_hash));
      expect(await store.pendingTransactions(2)).toHaveLength(2);
      expect(await store.pendingCount()).toBe(4);
      // Counting up to a limit: what the backlog bound needs, never more than the limit.
      expect(await store.pendingCountUpTo(3)).toBe(3);
      expect(await store.pendingCountUpTo(4)).toBe(4);
      expect(await store.pendingCountUpTo(100)).toBe(4);
    });

    it('keeps arrival order across many batches', async () => {
      const all: Transaction[] = [];
      for (let round = 0; round < 5; round += 1) {
        const batch = Array.from({ length: 40 }, () => pending());
        all.push(...batch);
        await store.appendPending(batch.map(plain));
      }
      expect((await store.pendingTransactions(1000)).map((tx) => tx.tx_hash)).toEqual(all.map((tx) => tx.tx_hash));
    });

    it('writes all of a batch or none of it', async () => {
      const duplicate = pending();
      await expect(store.appendPending([keyed(pending(), 'carol', 'k-1'), plain(duplicate), plain(duplicate)])).rejects.toThrow();
      expect(await store.pendingCount()).toBe(0);
      expect(await store.findIdempotency('carol', 'k-1')).toBeNull();
      // A transaction already pending, from an earlier commit: refused too, and nothing of the batch stored.
      await store.appendPending([plain(duplicate)]);
      await expect(store.appendPending([plain(pending()), plain(duplicate)])).rejects.toThrow();
      expect(await store.pendingCount()).toBe(1);
    });

    it('claims an idempotency key once: the earliest arrival wins, later ones get its record', async () => {
      const first = pending();
      const results = await store.appendPending([keyed(first, 'alice', 'order-1'), keyed(pending(), 'alice', 'order-1'), keyed(pending(), 'bob', 'order-1')]);
      const record = { caller: 'alice', key: 'order-1', request_hash: 'r'.repeat(64), tx_hash: first.tx_hash, timestamp: first.timestamp };
      expect(results).toEqual([{ kind: 'stored' }, { kind: 'replay', record }, { kind: 'stored' }]);
      expect(await store.appendPending([keyed(pending(), 'alice', 'order-1', 'x'.repeat(64))])).toEqual([{ kind: 'replay', record }]);
      expect(await store.findIdempotency('alice', 'order-1')).toEqual(record);
      expect(await store.findIdempotency('alice', 'order-2')).toBeNull();
      expect(await store.countIdempotencyKeys('alice', ['order-1', 'order-2'])).toBe(1);
      expect(await store.countIdempotencyKeys('bob', ['order-1'])).toBe(1);
      expect(await store.countIdempotencyKeys('carol', ['order-1'])).toBe(0);
      expect(await store.countIdempotencyKeys('alice', [])).toBe(0);
      expect(await store.pendingCount()).toBe(2);
    });

    it('gives one key to exactly one submission when two instances race for it', async () => {
      const second = await another();
      const attempts = Array.from({ length: 24 }, (_, index) => ({ handle: index % 2 === 0 ? store : second, tx: pending() }));
      const results = await Promise.all(attempts.map(({ handle, tx }) => handle.appendPending([plain(pending()), keyed(tx, 'dana', 'race'), keyed(pending(), 'dana', `solo-${tx.tx_hash}`)])));
      const winners = attempts.filter((_, index) => results[index]![1]!.kind === 'stored');
      expect(winners).toHaveLength(1);
      for (const result of results) {
        expect(result[0]).toEqual({ kind: 'stored' });
        expect(result[2]).toEqual({ kind: 'stored' });
        if (result[1]!.kind === 'replay') expect(result[1]!.record.tx_hash).toBe(winners[0]!.tx.tx_hash);
      }
      expect(await store.pendingCount()).toBe(24 * 2 + 1);
    });

    it('forgets idempotency keys older than a cut-off', async () => {
      const old = pending();
      await store.appendPending([keyed(old, 'erin', 'old')]);
      const cut_off = old.timestamp + 1;
      await store.appendPending([keyed({ ...pending(), timestamp: cut_off + 5 }, 'erin', 'new')]);
      expect(await store.pruneIdempotency(cut_off)).toBe(1);
      expect(await store.findIdempotency('erin', 'old')).toBeNull();
      expect(await store.findIdempotency('erin', 'new')).not.toBeNull();
    });
  });

  describe('committing blocks', () => {
    it('reads pending postings in arrival order with what sealing needs, and seals them by row number', async () => {
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const mint = pending({ from: 'issuer', to: 'alice', amount_units: UNITS_MAX, type: 'mint' });
      const overdraft = pending({ from: 'bob', to: 'alice', amount_units: 7n, metadata: { memo: 'x' } });
      await store.appendPending([plain(mint), plain(overdraft)]);
      const postings = await store.pendingPostings(10);
      expect(postings.map(({ seq: _seq, ...rest }) => rest)).toEqual([mint, overdraft].map((tx) => ({
        tx_hash: tx.tx_hash, from: tx.from, to: tx.to, amount_units: tx.amount_units, token: tx.token, type: tx.type, timestamp: tx.timestamp, min_receive_units: null,
      })));
      expect((postings[0] as { seq: number }).seq).toBeLessThan((postings[1] as { seq: number }).seq);
      expect(await store.pendingPostings(1)).toHaveLength(1);
      const commit = blockCommit(genesis, [mint, overdraft]);
      commit.outcomes = [
        { tx_hash: mint.tx_hash, seq: postings[0]!.seq, position: 0, status: 'confirmed', error: null },
        { tx_hash: overdraft.tx_hash, seq: postings[1]!.seq, position: 1, status: 'failed', error: 'insufficient_funds' },
      ];
      // A row number that does not hold the hash seals nothing, and the block is refused whole.
      const swapped = { ...commit, outcomes: [{ ...commit.outcomes[0]!, seq: postings[1]!.seq }, { ...commit.outcomes[1]!, seq: postings[0]!.seq }] };
      await expect(store.commitBlock(swapped)).rejects.toThrow();
      expect(await store.latestBlockNumber()).toBe(0);
      await store.commitBlock(commit);
      expect(await store.getTransaction(mint.tx_hash)).toMatchObject({ status: 'confirmed', block_number: 1, position: 0, error: null });
      expect(await store.getTransaction(overdraft.tx_hash)).toMatchObject({ status: 'failed', block_number: 1, position: 1, error: 'insufficient_funds', metadata: { memo: 'x' } });
      expect(await store.pendingPostings(10)).toEqual([]);
    });

    it('seals consecutive rows together and still refuses outcomes whose row numbers are off by one or whose errors do not match, or postings that are not the outcomes', async () => {
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const txs = Array.from({ length: 7 }, () => pending({ from: 'issuer', type: 'mint' }));
      await store.appendPending(txs.map(plain));
      const postings = await store.pendingPostings(10);
      const commit = blockCommit(genesis, txs.slice(0, 6));
      // Confirmed runs around a failed one: rows 0–1, 2 failed, rows 3–5.
      commit.outcomes = postings.slice(0, 6).map((posting, position) => position === 2
        ? { tx_hash: posting.tx_hash, seq: posting.seq, position, status: 'failed', error: 'insufficient_funds' }
        : { tx_hash: posting.tx_hash, seq: posting.seq, position, status: 'confirmed', error: null });
      // Every row number one too high, all confirmed (one run): each names the next transaction's row, the last the unsealed seventh's.
      const shifted = { ...commit, outcomes: commit.outcomes.map((outcome, index) => ({ ...outcome, seq: postings[index + 1]!.seq, status: 'confirmed' as const, error: null })) };
      await expect(store.commitBlock(shifted)).rejects.toThrow(InvariantViolation);
      // A confirmed outcome with an error (a run is sealed without its errors), and a failed one without.
      const confirmed_with_error = { ...commit, outcomes: commit.outcomes.map((outcome, index) => index === 0 ? { ...outcome, error: 'insufficient_funds' as const } : outcome) };
      await expect(store.commitBlock(confirmed_with_error)).rejects.toThrow(InvariantViolation);
      const failed_without_error = { ...commit, outcomes: commit.outcomes.map((outcome, index) => index === 2 ? { ...outcome, error: null } : outcome) };
      await expect(store.commitBlock(failed_without_error)).rejects.toThrow(InvariantViolation);
      const reversed = { ...commit, postings: postings.slice(0, 6).reverse() };
      await expect(store.commitBlock(reversed)).rejects.toThrow('a block passes its postings in position order');
      expect(await store.latestBlockNumber()).toBe(0);
      expect(await store.pendingCount()).toBe(7);
      await store.commitBlock({ ...commit, postings: postings.slice(0, 6) });
      for (const [position, tx] of txs.slice(0, 6).entries()) {
        expect(await store.getTransaction(tx.tx_hash)).toMatchObject(position === 2
          ? { status: 'failed', block_number: 1, position, error: 'insufficient_funds' }
          : { status: 'confirmed', block_number: 1, position, error: null });
      }
      expect(await store.blockTransactionHashes(1)).toEqual(txs.slice(0, 6).map((tx) => tx.tx_hash));
      expect((await store.pendingPostings(10)).map((posting) => posting.tx_hash)).toEqual([txs[6]!.tx_hash]);
    });

    it('writes a block and everything it decides in one go', async () => {
      expect(await store.latestBlockNumber()).toBeNull();
      await store.commitBlock(genesisCommit());
      const genesis = await store.latestBlock();
      expect(genesis).toMatchObject({ number: 0, transactions_count: 0, totals: EMPTY_TOTALS });
      expect(await store.latestBlockNumber()).toBe(0);
      const mint = pending({ from: 'issuer', to: 'alice', amount_units: UNITS_MAX, type: 'mint' });
      const overdraft = pending({ from: 'bob', to: 'alice', amount_units: 7n });
      await store.appendPending([plain(mint), plain(overdraft)]);
      const volume = 2n ** 60n + 3n;
      const commit = blockCommit(genesis!, [mint, overdraft], {
        totals: { transactions: 2, users: 3, transfer_volume_units: { TAB: volume, USDG: 1n } },
        balances: [{ user_id: 'alice', token: 'TAB', units: UNITS_MAX }],
        new_users: ['issuer', 'alice', 'bob'],
        active_users: ['alice'],
      });
      commit.outcomes[1] = { tx_hash: overdraft.tx_hash, position: 1, status: 'failed', error: 'insufficient_funds' };
      await store.commitBlock(commit);

      expect(await store.latestBlock()).toEqual({ ...commit.header, totals: commit.totals });
      expect(await store.latestBlockNumber()).toBe(1);
      expect(await store.getBlock(1)).toEqual({ ...commit.header, transactions: [mint.tx_hash, overdraft.tx_hash] });
      expect(await store.blockTransactionHashes(1)).toEqual([mint.tx_hash, overdraft.tx_hash]);
      expect(await store.getTransaction(mint.tx_hash)).toEqual({ ...mint, status: 'confirmed', block_number: 1, block_hash: commit.header.hash, position: 0, error: null });
      expect(await store.getTransaction(overdraft.tx_hash)).toMatchObject({ status: 'failed', error: 'insufficient_funds', position: 1 });
      expect(await store.balances('alice')).toEqual(new Map([['TAB', UNITS_MAX]]));
      expect(await store.pricedBalances('alice')).toEqual({ balances: new Map([['TAB', UNITS_MAX]]), native_price: commit.header.native_price ?? null });
      expect(await store.pricedBalances('nobody')).toEqual({ balances: new Map(), native_price: commit.header.native_price ?? null });
      expect(await store.balancesOf([{ user_id: 'alice', token: 'TAB' }, { user_id: 'alice', token: 'USDG' }, { user_id: 'nobody', token: 'TAB' }]))
        .toEqual([{ user_id: 'alice', token: 'TAB', units: UNITS_MAX }]);
      expect(await store.knownUsers(['alice', 'issuer', 'zed'])).toEqual(new Set(['alice', 'issuer']));
      expect(await store.pendingCount()).toBe(0);
      expect(await store.pendingTransactions(10)).toEqual([]);
      expect(await store.getBlock(2)).toBeNull();
    });

    it("reads a user's balances with the newest block's price: none before genesis, each block's own after it", async () => {
      expect(await store.pricedBalances('alice')).toEqual({ balances: new Map(), native_price: null });
      await store.commitBlock({ ...genesisCommit(), header: genesisBlock(T0, '2.5') });
      const genesis = (await store.latestBlock())!;
      expect(await store.pricedBalances('alice')).toEqual({ balances: new Map(), native_price: '2.5' });
      const mint = pending({ type: 'mint', from: 'issuer', to: 'alice', amount_units: 7n });
      await store.appendPending([plain(mint)]);
      const first = blockCommit(genesis, [mint], { balances: [{ user_id: 'alice', token: 'TAB', units: 7n }], new_users: ['issuer', 'alice'] });
      await store.commitBlock({ ...first, header: buildBlock(genesis, [mint.tx_hash], genesis.timestamp + 1, '3.25') });
      expect(await store.pricedBalances('alice')).toEqual({ balances: new Map([['TAB', 7n]]), native_price: '3.25' });
    });

    it('refuses a second genesis, a gap and a broken parent link', async () => {
      await store.commitBlock(genesisCommit());
      await expect(store.commitBlock(genesisCommit(T0 + 7))).rejects.toThrow();
      const genesis = (await store.latestBlock())!;
      const tx = pending();
      await store.appendPending([plain(tx)]);
      const gap = blockCommit({ ...genesis, number: 1 }, [tx]);
      await expect(store.commitBlock(gap)).rejects.toThrow();
      const orphan = blockCommit({ ...genesis, hash: `0x${'11'.repeat(32)}` }, [tx]);
      await expect(store.commitBlock(orphan)).rejects.toThrow();
      expect((await store.latestBlock())?.number).toBe(0);
      expect(await store.pendingCount()).toBe(1);
    });

    it('refuses to seal a transaction twice, or one that was never submitted, and rolls the whole block back', async () => {
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const [a, b] = [pending({ type: 'mint', from: 'issuer' }), pending({ type: 'mint', from: 'issuer' })];
      await store.appendPending([plain(a), plain(b)]);
      const first = blockCommit(genesis, [a]);
      await store.commitBlock(first);
      // A bug in the sealer, not a race (the block's row went in first): an invariant violation, which stops the sealer.
      const again = blockCommit(first.header, [b, a], { balances: [{ user_id: 'bob', token: 'TAB', units: 99n }], new_users: ['bob'] });
      await expect(store.commitBlock(again)).rejects.toThrow(InvariantViolation);
      const ghost = blockCommit(first.header, [b, pending()]);
      await expect(store.commitBlock(ghost)).rejects.toThrow(InvariantViolation);
      expect((await store.latestBlock())?.number).toBe(1);
      expect(await store.getTransaction(a.tx_hash)).toMatchObject({ status: 'confirmed', block_number: 1, position: 0 });
      expect(await store.getTransaction(b.tx_hash)).toMatchObject({ status: 'pending', block_number: null });
      expect(await store.balances('bob')).toEqual(new Map());
      expect(await store.knownUsers(['bob'])).toEqual(new Set());
    });

    it('refuses a negative balance and rolls the whole block back', async () => {
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const tx = pending();
      await store.appendPending([plain(tx)]);
      const negative = blockCommit(genesis, [tx], { balances: [{ user_id: 'alice', token: 'TAB', units: 3n }, { user_id: 'bob', token: 'TAB', units: -1n }] });
      await expect(store.commitBlock(negative)).rejects.toThrow();
      expect(await store.balances('alice')).toEqual(new Map());
      expect((await store.latestBlock())?.number).toBe(0);
      expect(await store.getTransaction(tx.tx_hash)).toMatchObject({ status: 'pending' });
    });

    it('takes exactly one of two competing blocks when two instances seal at once', async () => {
      const second = await another();
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const txs = Array.from({ length: 50 }, () => pending({ type: 'mint', from: 'issuer' }));
      await store.appendPending(txs.map(plain));
      const mine = blockCommit(genesis, txs, { balances: [{ user_id: 'bob', token: 'TAB', units: 250n }] }, genesis.timestamp + 1);
      const theirs = blockCommit(genesis, txs, { balances: [{ user_id: 'bob', token: 'TAB', units: 250n }] }, genesis.timestamp + 2);
      expect(mine.header.hash).not.toBe(theirs.header.hash);
      const outcomes = await Promise.allSettled([store.commitBlock(mine), second.commitBlock(theirs)]);
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
      const latest = (await second.latestBlock())!;
      expect(latest.number).toBe(1);
      expect([mine.header.hash, theirs.header.hash]).toContain(latest.hash);
      expect(await store.blockTransactionHashes(1)).toEqual(txs.map((tx) => tx.tx_hash));
      for (const tx of txs) expect(await second.getTransaction(tx.tx_hash)).toMatchObject({ block_hash: latest.hash });
    });
  });

  describe("reading an account's history", () => {
    const hashes = (page: HistoryEntry[]) => page.map((entry) => entry.tx_hash);

    it('gives the transactions an account sent or received, pending and sealed, newest first in arrival order, each once', async () => {
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const minted = pending({ from: 'issuer', to: 'alice', amount_units: UNITS_MAX, type: 'mint', metadata: { memo: 'welcome' } });
      const sent = pending({ from: 'alice', to: 'bob' });
      const elsewhere = pending({ from: 'carol', to: 'dave' });
      const received = pending({ from: 'bob', to: 'alice', token: 'USDG' });
      const to_self = pending({ from: 'alice', to: 'alice', type: 'mint' });
      const burned = pending({ from: 'alice', to: 'issuer', type: 'burn' });
      await store.appendPending([minted, sent, elsewhere].map(plain));
      const commit = blockCommit(genesis, [minted, sent, elsewhere]);
      commit.outcomes[1] = { tx_hash: sent.tx_hash, position: 1, status: 'failed', error: 'insufficient_funds' };
      await store.commitBlock(commit);
      await store.appendPending([plain(received)]);
      await store.appendPending([to_self, burned].map(plain));

      const history = await store.accountHistory('alice', null, 100);
      expect(hashes(history)).toEqual([burned, to_self, received, sent, minted].map((tx) => tx.tx_hash));
      expect(history.map((entry) => entry.sealed)).toEqual([false, false, false, true, true]);
      const seqs = history.map((entry) => entry.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
      expect(new Set(seqs).size).toBe(seqs.length);
      expect(hashes(await store.accountHistory('issuer', null, 100))).toEqual([burned.tx_hash, minted.tx_hash]);
      expect(hashes(await store.accountHistory('bob', null, 100))).toEqual([received.tx_hash, sent.tx_hash]);
      expect(await store.accountHistory('nobody', null, 100)).toEqual([]);
      expect(await store.accountHistory('ALICE', null, 100)).toEqual([]);
      expect(await store.newestAccountSeq('alice', null)).toBe(history[0]!.seq);
      expect(await store.newestAccountSeq('alice', history[0]!.seq)).toBe(history[1]!.seq);
      expect(await store.newestAccountSeq('bob', null)).toBe((await store.accountHistory('bob', null, 1))[0]!.seq);
      expect(await store.newestAccountSeq('issuer', history[0]!.seq)).toBe(history.at(-1)!.seq);
      expect(await store.newestAccountSeq('alice', history.at(-1)!.seq)).toBeNull();
      expect(await store.newestAccountSeq('nobody', null)).toBeNull();
      expect(await store.newestSeq()).toBe(history[0]!.seq);
      // Asked together (one read on PostgreSQL), each gets its own answer.
      const together = await Promise.all([['alice', null], ['nobody', null], ['alice', history[0]!.seq], ['issuer', null]].map(([user_id, before]) => store.newestAccountSeq(user_id as string, before as number | null)));
      expect(together).toEqual([history[0]!.seq, null, history[1]!.seq, history[0]!.seq]);

      const records = new Map((await store.transactionsByHash(hashes(history))).map((tx) => [tx.tx_hash, tx]));
      expect(records.size).toBe(5);
      expect(records.get(burned.tx_hash)).toEqual(burned);
      expect(records.get(minted.tx_hash)).toEqual({ ...minted, status: 'confirmed', block_number: 1, block_hash: commit.header.hash, position: 0, error: null });
      expect(records.get(minted.tx_hash)!.amount_units).toBe(UNITS_MAX);
      expect(records.get(sent.tx_hash)).toMatchObject({ status: 'failed', error: 'insufficient_funds', block_number: 1, position: 1 });
      for (const tx of records.values()) expect(tx).toEqual(await store.getTransaction(tx.tx_hash));
    });

    it('looks transactions up by hash in one read: unknown hashes are left out, none is given twice', async () => {
      const [first, second] = [pending({ from: 'alice', to: 'bob' }), pending({ from: 'bob', to: 'carol' })];
      await store.appendPending([first, second].map(plain));
      const found = await store.transactionsByHash([second.tx_hash, `0x${'00'.repeat(32)}`, first.tx_hash, second.tx_hash]);
      expect(found.map((tx) => tx.tx_hash).sort()).toEqual([first.tx_hash, second.tx_hash].sort());
      expect(found.find((tx) => tx.tx_hash === first.tx_hash)).toEqual(first);
      expect(await store.transactionsByHash([])).toEqual([]);
      await expect(store.transactionsByHash(Array.from({ length: TRANSACTIONS_BY_HASH_MAX + 1 }, () => first.tx_hash))).rejects.toThrow(/bounded/);
    });

    it('pages from a position: the transactions before it, at most `limit`, every one exactly once across the pages', async () => {
      expect(await store.newestSeq()).toBeNull();
      const all: Transaction[] = [];
      for (let round = 0; round < 6; round += 1) {
        const batch = Array.from({ length: 10 }, (_, index) => {
          const side = (round * 10 + index) % 3;
          return side === 0 ? pending({ from: 'erin', to: `peer${index}` }) : side === 1 ? pending({ from: `peer${index}`, to: 'erin' }) : pending({ from: 'frank', to: 'gina' });
        });
        all.push(...batch);
        await store.appendPending(batch.map(plain));
      }
      const expected = all.filter((tx) => tx.from === 'erin' || tx.to === 'erin').map((tx) => tx.tx_hash).reverse();
      const newest = await store.accountHistory('erin', null, 100);
      expect(hashes(newest)).toEqual(expected);

      const walked: string[] = [];
      let before: number | null = null;
      for (let pages = 0; pages < 20; pages += 1) {
        const page: HistoryEntry[] = await store.accountHistory('erin', before, 7);
        expect(page.length).toBeLessThanOrEqual(7);
        if (before !== null) for (const item of page) expect(item.seq).toBeLessThan(before);
        walked.push(...hashes(page));
        if (page.length < 7) break;
        before = page.at(-1)!.seq;
      }
      expect(walked).toEqual(expected);
      expect(await store.accountHistory('erin', newest.at(-1)!.seq, 10)).toEqual([]);
      for (const before of [null, newest[2]!.seq, newest.at(-1)!.seq + 1]) {
        expect(await store.newestAccountSeq('erin', before), String(before)).toBe((await store.accountHistory('erin', before, 1))[0]?.seq ?? null);
      }
      expect(hashes(await store.accountHistory('erin', newest[2]!.seq, 1))).toEqual([expected[3]]);
    });

    it('pages across sealed and pending transactions alike, and sees what another handle on the ledger stores and seals', async () => {
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const round = (count: number, offset: number) => Array.from({ length: count }, (_, index) =>
        (offset + index) % 2 === 0 ? pending({ from: 'erin', to: `peer${index}` }) : pending({ from: `peer${index}`, to: 'erin' }));
      const sealed = round(12, 0);
      await store.appendPending(sealed.map(plain));
      const first_block = blockCommit(genesis, sealed);
      await store.commitBlock(first_block);
      const waiting = round(9, 1);
      await store.appendPending(waiting.map(plain));
      // Another handle on the same ledger (SQLite: a second connection to the file) stores more.
      const other = await another();
      const from_other = round(4, 0);
      await other.appendPending(from_other.map(plain));

      const expected = [...sealed, ...waiting, ...from_other].map((tx) => tx.tx_hash).reverse();
      const walk = async (reader: LedgerStore): Promise<HistoryEntry[]> => {
        const walked: HistoryEntry[] = [];
        let before: number | null = null;
        for (let pages = 0; pages < 10; pages += 1) {
          const page: HistoryEntry[] = await reader.accountHistory('erin', before, 5);
          walked.push(...page);
          if (page.length < 5) break;
          before = page.at(-1)!.seq;
        }
        return walked;
      };
      for (const reader of [store, other]) {
        const walked = await walk(reader);
        expect(hashes(walked)).toEqual(expected);
        expect(walked.map((entry) => entry.sealed)).toEqual([...Array(13).fill(false), ...Array(12).fill(true)]);
        expect(await reader.newestAccountSeq('erin', walked[13]!.seq)).toBe(walked[14]!.seq);
        expect(await reader.newestAccountSeq('erin', walked[12]!.seq)).toBe(walked[13]!.seq);
      }

      // The other handle seals what is pending; the first sees it sealed, and then stores more itself.
      await other.commitBlock(blockCommit(first_block.header, [...waiting, ...from_other]));
      const after_seal = await store.accountHistory('erin', null, 100);
      expect(hashes(after_seal)).toEqual(expected);
      expect(after_seal.every((entry) => entry.sealed)).toBe(true);
      const last = pending({ from: 'erin', to: 'peer0' });
      await store.appendPending([plain(last)]);
      for (const reader of [store, other]) {
        const newest = await reader.accountHistory('erin', null, 2);
        expect(hashes(newest)).toEqual([last.tx_hash, expected[0]]);
        expect(newest.map((entry) => entry.sealed)).toEqual([false, true]);
      }
    });

    it('finds a transaction by hash while it is pending and once it is sealed, whichever handle stored or sealed it', async () => {
      await store.commitBlock(genesisCommit());
      const genesis = (await store.latestBlock())!;
      const mine = [pending({ from: 'erin', to: 'peer0' }), pending({ from: 'erin', to: 'peer1' })];
      await store.appendPending(mine.map(plain));
      const other = await another();
      const theirs = pending({ from: 'peer1', to: 'erin' });
      await other.appendPending([plain(theirs)]);
      const all = [...mine, theirs];
      const absent = pending({ from: 'erin', to: 'peer2' }).tx_hash;
      const statuses = async (reader: LedgerStore) => ({
        one_by_one: await Promise.all([...all.map((tx) => tx.tx_hash), absent].map(async (tx_hash) => (await reader.getTransaction(tx_hash))?.status ?? null)),
        together: new Map((await reader.transactionsByHash([absent, ...all.map((tx) => tx.tx_hash)])).map((tx) => [tx.tx_hash, tx.status])),
      });
      for (const reader of [store, other]) {
        expect(await statuses(reader)).toEqual({ one_by_one: ['pending', 'pending', 'pending', null], together: new Map(all.map((tx) => [tx.tx_hash, 'pending'])) });
      }
      // The other handle seals them all; both find them sealed, the whole transaction as stored.
      const sealing = blockCommit(genesis, all);
      await other.commitBlock(sealing);
      for (const reader of [store, other]) {
        expect(await statuses(reader)).toEqual({ one_by_one: ['confirmed', 'confirmed', 'confirmed', null], together: new Map(all.map((tx) => [tx.tx_hash, 'confirmed'])) });
        expect(await reader.getTransaction(theirs.tx_hash)).toEqual({ ...theirs, status: 'confirmed', block_number: 1, block_hash: sealing.header.hash, position: 2 });
      }
    });
  });

  describe('reading blocks and statistics', () => {
    async function chainOf(count: number): Promise<BlockHeader[]> {
      await store.commitBlock(genesisCommit());
      const headers: BlockHeader[] = [(await store.latestBlock())!];
      for (let index = 1; index <= count; index += 1) {
        const tx = pending({ type: 'mint', from: 'issuer', to: `user${index}` });
        await store.appendPending([plain(tx)]);
        const commit = blockCommit(headers.at(-1)!, [tx], {
          totals: { transactions: index, users: index, transfer_volume_units: { TAB: BigInt(index) * 10n ** 17n } },
          new_users: [`user${index}`],
          active_users: [`user${index}`],
        }, T0 + index * 3600);
        await store.commitBlock(commit);
        headers.push(commit.header);
      }
      return headers;
    }

    it('pages blocks by number range, newest first (numerically: block 10 after block 9)', async () => {
      const headers = await chainOf(12);
      expect((await store.latestBlock())?.number).toBe(12);
      expect((await store.listBlocks(12, 4)).map((block) => block.number)).toEqual([12, 11, 10, 9]);
      expect((await store.listBlocks(2, 10)).map((block) => block.number)).toEqual([2, 1, 0]);
      expect(await store.listBlocks(4, 1)).toEqual([headers[4]]);
      expect((await store.statsSnapshot(T0 + 11 * 3600 + 1))?.window_start?.number).toBe(11);
    });

    it('summarises from the latest block, the block at the start of the window and the active accounts', async () => {
      await chainOf(5);
      const snapshot = (await store.statsSnapshot(T0 + 2 * 3600))!;
      expect(snapshot.latest).toMatchObject({ number: 5, totals: { transactions: 5, users: 5, transfer_volume_units: { TAB: 5n * 10n ** 17n } } });
      expect(snapshot.window_start).toMatchObject({ number: 2, totals: { transfer_volume_units: { TAB: 2n * 10n ** 17n } } });
      expect(snapshot.active_users_24h).toBe(3);
      expect((await store.statsSnapshot(T0 - 10))?.window_start).toBeNull();
    });

    it('has no statistics before genesis', async () => {
      expect(await store.statsSnapshot(T0)).toBeNull();
      expect(await store.latestBlock()).toBeNull();
    });
  });

  describe('balance roots and balance snapshots (the balance commitment)', () => {
    const ROOT_A = `0x${'a1'.repeat(32)}`;
    const ROOT_B = `0x${'b2'.repeat(32)}`;

    it('stores the root a block commit carries, none for a commit without one, and lets the first claim win', async () => {
      expect(await store.balanceState()).toBeNull();
      await store.commitBlock({ ...genesisCommit(), balance_root: ROOT_A });
      expect(await store.balanceRoot(0)).toBe(ROOT_A);
      expect(await store.claimBalanceRoot(0, ROOT_B)).toBe(ROOT_A);
      const genesis = (await store.latestBlock())!;
      const tx = pending({ type: 'mint', from: 'treasury', to: 'alice' });
      await store.appendPending([plain(tx)]);
      await store.pendingTransactions(10);
      await store.commitBlock(blockCommit(genesis, [tx], { balances: [{ user_id: 'alice', token: 'TAB', units: 5n }] }));
      expect(await store.balanceRoot(1)).toBeNull();
      expect(await (await another()).claimBalanceRoot(1, ROOT_B)).toBe(ROOT_B);
      expect(await store.balanceRoot(1)).toBe(ROOT_B);
      expect(await store.balanceRoot(2)).toBeNull();
    });

    it('reads every non-zero balance with the newest block, and the pairs that blocks after one named', async () => {
      await store.commitBlock(genesisCommit());
      let parent = (await store.latestBlock())!;
      const mints = [pending({ type: 'mint', from: 'treasury', to: 'alice' }), pending({ type: 'mint', from: 'treasury', to: 'bob', token: 'USDG' })];
      await store.appendPending(mints.map(plain));
      await store.pendingTransactions(10);
      await store.commitBlock(blockCommit(parent, mints, { balances: [{ user_id: 'alice', token: 'TAB', units: 5n }, { user_id: 'bob', token: 'USDG', units: 5n }], balance_root: ROOT_A }));
      parent = (await store.latestBlock())!;
      const burn = pending({ type: 'burn', from: 'alice', to: 'treasury' });
      await store.appendPending([plain(burn)]);
      await store.pendingTransactions(10);
      await store.commitBlock(blockCommit(parent, [burn], { balances: [{ user_id: 'alice', token: 'TAB', units: 0n }], balance_root: ROOT_B }));
      const state = await store.balanceState();
      expect(state).toEqual({ block_number: 2, balances: [{ user_id: 'bob', token: 'USDG', units: 5n }] });
      // Block 2 named (alice, TAB) and (treasury, TAB): alice's row holds 0, treasury has none (absent).
      expect(await store.balanceChangesSince(1)).toEqual({ block_number: 2, balances: [{ user_id: 'alice', token: 'TAB', units: 0n }] });
      const since_genesis = await store.balanceChangesSince(0);
      expect(since_genesis.block_number).toBe(2);
      expect(since_genesis.balances.sort((a, b) => a.user_id.localeCompare(b.user_id))).toEqual([
        { user_id: 'alice', token: 'TAB', units: 0n }, { user_id: 'bob', token: 'USDG', units: 5n },
      ]);
      expect(await store.balanceChangesSince(2)).toEqual({ block_number: 2, balances: [] });
    });
  });

  describe('settings and health', () => {
    it('keeps the first claim of a setting, even when instances claim at once', async () => {
      const second = await another();
      expect(await store.getSetting('native_symbol')).toBeNull();
      const claims = await Promise.all([store.claimSetting('native_symbol', 'TAB'), second.claimSetting('native_symbol', 'XYZ')]);
      expect(claims[0]).toBe(claims[1]);
      expect(await store.claimSetting('native_symbol', 'OTHER')).toBe(claims[0]);
      expect(await second.getSetting('native_symbol')).toBe(claims[0]);
    });

    it('answers ping, and close is idempotent', async () => {
      await store.ping();
      const extra = await database.open();
      await extra.close();
      await extra.close();
    });
  });
});
