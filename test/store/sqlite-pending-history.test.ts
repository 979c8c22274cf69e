/**
 * The pending part of an account's history on SQLite is kept in memory (sqlite-pending-history.ts): it
 * must change only when a write commits, and come back from the file at open. The store contract
 * (ledger-store-contract.test.ts) checks the pages themselves, and what another handle writes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBlock, genesisBlock } from '../../src/domain/block.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { BlockCommit, HistoryEntry } from '../../src/service/ledger-store.js';
import { newestOf } from '../../src/store/sqlite/sqlite-pending-history.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

let nonce = 0;
function transfer(from: string, to: string) {
  nonce += 1;
  const preimage = { from, to, amount_units: 1n, token: 'TAB', type: 'transfer' as const, metadata: {}, nonce: String(nonce).padStart(32, '0'), timestamp: 1_800_000_000 };
  return { transaction: pendingTransaction(preimage), idempotency: null };
}

describe("SQLite: an account's pending history in memory", () => {
  const dirs: string[] = [];
  const ledgerFile = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-pending-history-'));
    dirs.push(dir);
    return path.join(dir, 'ledger.db');
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is unchanged by an append that rolls back', async () => {
    const store = SqliteStore.open({ path: ledgerFile() });
    try {
      const kept = transfer('alice', 'bob');
      await store.appendPending([kept]);
      const first = transfer('alice', 'carol');
      // The same transaction twice in one append: its unique hash fails the second insert, and the whole append rolls back.
      await expect(store.appendPending([first, first])).rejects.toThrow();
      expect((await store.accountHistory('alice', null, 10)).map((entry) => entry.tx_hash)).toEqual([kept.transaction.tx_hash]);
      expect(await store.accountHistory('carol', null, 10)).toEqual([]);
      expect(await store.newestAccountSeq('carol', null)).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('keeps what a block left pending when the block seals a later transaction and not an earlier one', async () => {
    const store = SqliteStore.open({ path: ledgerFile() });
    try {
      const genesis = genesisBlock(1_800_000_000);
      const empty = { outcomes: [], balances: [], new_users: [], active_users: [] };
      await store.commitBlock({ header: genesis, totals: { transactions: 0, users: 0, transfer_volume_units: {} }, ...empty });
      const [older, middle, newer] = [transfer('alice', 'bob'), transfer('bob', 'alice'), transfer('alice', 'carol')];
      await store.appendPending([older, middle, newer]);
      const sealed: BlockCommit = {
        header: buildBlock(genesis, [middle.transaction.tx_hash], genesis.timestamp + 1),
        totals: { transactions: 1, users: 0, transfer_volume_units: {} },
        ...empty,
        outcomes: [{ tx_hash: middle.transaction.tx_hash, position: 0, status: 'confirmed', error: null }],
      };
      await store.commitBlock(sealed);
      const history = await store.accountHistory('alice', null, 10);
      expect(history.map((entry) => [entry.tx_hash, entry.sealed])).toEqual([
        [newer.transaction.tx_hash, false], [middle.transaction.tx_hash, true], [older.transaction.tx_hash, false],
      ]);
      expect((await store.accountHistory('bob', null, 10)).map((entry) => entry.sealed)).toEqual([true, false]);
    } finally {
      await store.close();
    }
  });

  it('comes back from the pending rows when the file is opened again', async () => {
    const file = ledgerFile();
    const store = SqliteStore.open({ path: file });
    const stored = [transfer('alice', 'bob'), transfer('bob', 'alice'), transfer('alice', 'alice')];
    await store.appendPending(stored);
    const before = await store.accountHistory('alice', null, 10);
    await store.close();
    const reopened = SqliteStore.open({ path: file });
    try {
      expect(await reopened.accountHistory('alice', null, 10)).toEqual(before);
      expect(before.map((entry) => entry.tx_hash)).toEqual(stored.map((item) => item.transaction.tx_hash).reverse());
      expect(before.every((entry) => !entry.sealed)).toBe(true);
    } finally {
      await reopened.close();
    }
  });

  it('merges two pages, each newest first, into the newest `limit` of both', () => {
    const page = fc.uniqueArray(fc.integer({ min: 1, max: 1000 }), { maxLength: 30 })
      .map((seqs) => seqs.sort((a, b) => b - a).map((seq): HistoryEntry => ({ seq, tx_hash: `0x${seq}`, sealed: seq % 2 === 0 })));
    fc.assert(fc.property(page, page, fc.integer({ min: 0, max: 70 }), (first, second, limit) => {
      const second_only = second.filter((entry) => !first.some((other) => other.seq === entry.seq));
      const expected = [...first, ...second_only].sort((a, b) => b.seq - a.seq).slice(0, limit);
      expect(newestOf(first, second_only, limit)).toEqual(expected);
    }));
  });
});
