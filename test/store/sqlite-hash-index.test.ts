/**
 * The transaction hash's index on SQLite is written in merges (sqlite-hash-index.ts): the rows after its
 * mark are in memory, and a merge writes them into the index's table in steps. A look-up by hash must be
 * exact whatever the state: before a merge, during one, after it, after a restart half-way through one,
 * and when another connection appended or merged. The store contract (ledger-store-contract.test.ts)
 * checks the look-ups themselves on both stores.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { SqliteHashIndex, type HashMergeLimits } from '../../src/store/sqlite/sqlite-hash-index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

let nonce = 0;
function transfer(from = 'alice', to = 'bob') {
  nonce += 1;
  const preimage = { from, to, amount_units: 1n, token: 'TAB', type: 'transfer' as const, metadata: {}, nonce: String(nonce).padStart(32, '0'), timestamp: 1_800_000_000 };
  return { transaction: pendingTransaction(preimage), idempotency: null };
}

/** Merges as soon as a few rows are past the mark, in steps of a few keys. */
const SMALL: HashMergeLimits = { rows_min: 8, step_keys_max: 3, step_interval_ms: 0 };
/** Never merges in these tests. */
const NEVER: HashMergeLimits = { rows_min: 1_000_000, step_keys_max: 1000, step_interval_ms: 0 };

const UNKNOWN = `0x${'e'.repeat(64)}`;

/** The index's table and mark, read through a connection of its own. */
function indexState(file: string): { entries: number; distinct: number; through_seq: number } {
  const db = new Database(file, { readonly: true });
  try {
    return {
      entries: db.prepare('SELECT count(*) FROM transaction_hashes').pluck().get() as number,
      distinct: db.prepare('SELECT count(DISTINCT seq) FROM transaction_hashes').pluck().get() as number,
      through_seq: db.prepare('SELECT through_seq FROM transaction_hashes_merged').pluck().get() as number,
    };
  } finally {
    db.close();
  }
}

/** Lets armed merge steps run. */
const turns = async (count: number) => {
  for (let index = 0; index < count; index += 1) await new Promise((resolve) => setTimeout(resolve, 1));
};

async function expectAllFound(store: SqliteStore, hashes: readonly string[]): Promise<void> {
  for (const tx_hash of hashes) expect((await store.getTransaction(tx_hash))?.tx_hash).toBe(tx_hash);
  for (let start = 0; start < hashes.length; start += 50) {
    const chunk = hashes.slice(start, start + 50);
    // A hash asked twice is answered once.
    expect((await store.transactionsByHash([...chunk, UNKNOWN, chunk[0]!])).map((tx) => tx.tx_hash).sort()).toEqual([...chunk].sort());
  }
  expect(await store.getTransaction(UNKNOWN)).toBeNull();
}

describe('SQLite: the transaction hash index written in merges', () => {
  const dirs: string[] = [];
  const ledgerFile = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-hash-index-'));
    dirs.push(dir);
    return path.join(dir, 'ledger.db');
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds every transaction by hash through appends, merge steps and restarts, and merges each row once', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.oneof(
        fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 7 }) }),
        fc.record({ kind: fc.constant('wait' as const), turns: fc.integer({ min: 1, max: 4 }) }),
        fc.record({ kind: fc.constant('reopen' as const) }),
      ), { minLength: 1, maxLength: 12 }),
      async (steps) => {
        const file = ledgerFile();
        let store = SqliteStore.open({ path: file, hash_merge: SMALL });
        const hashes: string[] = [];
        try {
          for (const step of steps) {
            if (step.kind === 'append') {
              const items = Array.from({ length: step.count }, () => transfer());
              await store.appendPending(items);
              hashes.push(...items.map((item) => item.transaction.tx_hash));
            } else if (step.kind === 'wait') {
              await turns(step.turns);
            } else {
              await store.close();
              store = SqliteStore.open({ path: file, hash_merge: SMALL });
            }
            await expectAllFound(store, hashes);
          }
          await turns(30);
          await expectAllFound(store, hashes);
          const state = indexState(file);
          // Each merged row once; what is left in memory is less than a merge's worth.
          expect(state.entries).toBe(state.distinct);
          expect(state.entries).toBeGreaterThanOrEqual(state.through_seq);
          expect(hashes.length - state.through_seq).toBeLessThan(SMALL.rows_min);
        } finally {
          await store.close();
        }
      },
    ), { numRuns: 15 });
  });

  it('refuses a hash it holds, in memory or in the index, and in the same append, writing nothing', async () => {
    const file = ledgerFile();
    const store = SqliteStore.open({ path: file, hash_merge: { rows_min: 1, step_keys_max: 10, step_interval_ms: 0 } });
    try {
      const merged = transfer();
      await store.appendPending([merged]);
      await turns(10);
      expect(indexState(file).through_seq).toBe(1);
      await expect(store.appendPending([transfer(), merged])).rejects.toThrow(/stored once/);
      const twice = transfer();
      await expect(store.appendPending([twice, twice])).rejects.toThrow(/stored once/);
      // Refused again straight after its append, before a merge step can have run: found in memory.
      const recent = transfer();
      await store.appendPending([recent]);
      await expect(store.appendPending([recent])).rejects.toThrow(/stored once/);
      expect(await store.newestSeq()).toBe(2);
      await expectAllFound(store, [merged.transaction.tx_hash, recent.transaction.tx_hash]);
      expect(await store.getTransaction(twice.transaction.tx_hash)).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('sees what another connection appended and what it merged', async () => {
    const file = ledgerFile();
    const merging = SqliteStore.open({ path: file, hash_merge: SMALL });
    const other = SqliteStore.open({ path: file, hash_merge: NEVER });
    try {
      const first = Array.from({ length: 20 }, () => transfer());
      await merging.appendPending(first);
      const hashes = first.map((item) => item.transaction.tx_hash);
      await expectAllFound(other, hashes);
      await turns(20);
      expect(indexState(file).through_seq).toBe(20);
      await expectAllFound(other, hashes);
      const second = Array.from({ length: 5 }, () => transfer());
      await other.appendPending(second);
      hashes.push(...second.map((item) => item.transaction.tx_hash));
      await expectAllFound(merging, hashes);
      await expect(merging.appendPending([second[0]!])).rejects.toThrow(/stored once/);
      await expect(other.appendPending([first[0]!])).rejects.toThrow(/stored once/);
    } finally {
      await other.close();
      await merging.close();
    }
  });

  it('takes up a merge that stopped half-way, and a step that rolled back, from where it was', async () => {
    const file = ledgerFile();
    const hashes: string[] = [];
    const filler = SqliteStore.open({ path: file, hash_merge: NEVER });
    for (let index = 0; index < 4; index += 1) {
      const items = Array.from({ length: 5 }, () => transfer());
      await filler.appendPending(items);
      hashes.push(...items.map((item) => item.transaction.tx_hash));
    }
    await filler.close();

    const db = new Database(file);
    const index = new SqliteHashIndex(db, { rows_min: 1, step_keys_max: 4, step_interval_ms: 0 });
    const data_version = () => db.pragma('data_version', { simple: true }) as number;
    const step = () => db.transaction(() => {
      index.sync(data_version());
      return index.mergeStep();
    }).immediate();
    // A step that rolls back: nothing written, the merge where it was.
    expect(() => db.transaction(() => {
      index.sync(data_version());
      index.mergeStep();
      throw new Error('rolled back');
    }).immediate()).toThrow('rolled back');
    expect(db.prepare('SELECT count(*) FROM transaction_hashes').pluck().get()).toBe(0);
    step()();
    step()();
    const written = db.prepare('SELECT count(*) FROM transaction_hashes').pluck().get() as number;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(20);
    // Found in memory or in the table while the merge is half-way.
    for (const tx_hash of hashes) expect(index.seqOf(tx_hash)).toBe(hashes.indexOf(tx_hash) + 1);
    expect(index.seqOf(UNKNOWN)).toBeNull();
    db.close();

    const store = SqliteStore.open({ path: file, hash_merge: { rows_min: 1, step_keys_max: 4, step_interval_ms: 0 } });
    try {
      await expectAllFound(store, hashes);
      await turns(20);
      expect(indexState(file)).toEqual({ entries: 20, distinct: 20, through_seq: 20 });
      await expectAllFound(store, hashes);
    } finally {
      await store.close();
    }
  });
});
