/**
 * The transaction hash's index on SQLite, written in merges rather than a row at a time.
 *
 * A hash is a random key. An index over every row, written on accept, put nearly every transaction of
 * a group commit on an index page of its own: at 300,000 rows 3.8 KB written a transaction in groups
 * of 2,000 and 8.8 KB in groups of 32, half of what accepting a transaction cost the store
 * (docs/performance.md, "The transaction hash's index written in merges"). Here the index is a table of
 * its own, `transaction_hashes` (the hash's first 16 hex digits and the row number), holding every row
 * up to a mark (`transaction_hashes_merged.through_seq`); the rows after the mark are found in memory,
 * a map from hash to row number built from one scan of them at open. Once `rows_min` rows are past the
 * mark, a merge writes them into the table in steps, each its own write transaction of one range of
 * prefixes, of about `step_keys_max` keys (one statement, which takes the prefixes from the rows and sorts them): a step writes one stretch of the table's leaves, and
 * a whole merge writes each leaf about once, where the accept path wrote a leaf per transaction. The
 * last step moves the mark; only once it has committed are its rows taken out of memory, so a look-up
 * finds each row in the map, in the table, or (while a merge runs) in both, never in neither.
 *
 * A hash is stored once: the store asserts it of a group commit's hashes in its write transaction
 * (`assertNotStored`), and the table's trigger refuses an entry for a second row with the same whole hash.
 *
 * Another connection's writes (SQLite's `data_version` changed): the rows after the last one seen are
 * read, and the mark again. Rows are numbered in commit order (one writer at a time) and never deleted,
 * so reading on from the last row seen is exact; an abandoned merge (the process stopped half-way) is
 * taken up again from the mark, its entries written again with `OR IGNORE`.
 */
import type Database from './sqlite-driver.js';
import { assert } from '../../domain/shared/errors.js';

export const HASH_INDEX_SQL = {
  mergedThrough: 'SELECT through_seq FROM transaction_hashes_merged WHERE id = 1',
  rowsAfter: 'SELECT seq, tx_hash FROM transactions WHERE seq > ? ORDER BY seq',
  // One seek of the table's primary key; a prefix shared by two hashes costs a second row.
  findMerged: 'SELECT h.seq FROM transaction_hashes h JOIN transactions t ON t.seq = h.seq WHERE h.prefix = ? AND t.tx_hash = ?',
  // The same for each hash of a JSON array, in one statement: the first one the table holds, if any.
  anyMerged: `SELECT t.tx_hash FROM json_each(?) j JOIN transaction_hashes h ON h.prefix = substr(j.value, 3, 16)
       JOIN transactions t ON t.seq = h.seq AND t.tx_hash = j.value LIMIT 1`,
  // A merge step: the rows of a JSON array of row numbers, their prefixes taken from the rows themselves and sorted.
  mergeRows: `INSERT OR IGNORE INTO transaction_hashes (prefix, seq)
       SELECT substr(t.tx_hash, 3, 16), t.seq FROM transactions t WHERE t.seq IN (SELECT value FROM json_each(?)) ORDER BY 1, 2`,
  setMergedThrough: 'UPDATE transaction_hashes_merged SET through_seq = max(through_seq, ?) WHERE id = 1',
} as const;

export type HashMergeLimits = {
  /** Rows past the mark before a merge starts: what the map holds at most between merges, and what a merge amortises a leaf's write over. */
  rows_min: number;
  /** Keys a step writes, about (a step is one range of prefixes): how long a step holds the writer. */
  step_keys_max: number;
  /** The pause between two steps of a merge, for the appends and blocks in between. */
  step_interval_ms: number;
};

/**
 * 50,000 rows: about 6 MB of map at the most between merges (a hash string and its row number), a merge
 * of 25 steps; at 1,000,000 rows a merge writes most of the table's ~5,500 leaves once, about 400 bytes
 * a transaction against 3,800 written on accept. Steps of 2,000 keys hold the loop for a few ms.
 */
export const DEFAULT_HASH_MERGE_LIMITS: HashMergeLimits = { rows_min: 50_000, step_keys_max: 2_000, step_interval_ms: 5 };

/** The first 16 hex digits of a `0x…` hash: the table's key, as `substr(tx_hash, 3, 16)` in SQL. */
export function hashPrefix(tx_hash: string): string {
  return tx_hash.slice(2, 18);
}

/** A merge under way: the rows past the mark up to `through_seq`, as row numbers in ranges of prefixes, written `next` on. */
type Merge = { through_seq: number; ranges: number[][]; next: number };

export class SqliteHashIndex {
  private readonly statements: { [name in keyof typeof HASH_INDEX_SQL]: Database.Statement };
  private readonly limits: HashMergeLimits;
  /** The rows after the mark: hash → row number, in row order (the map keeps insertion order). */
  private readonly recent = new Map<string, number>();
  /** The mark as this connection last read or moved it. */
  private merged_through = 0;
  /** The newest row this connection knows of. */
  private seen_through = 0;
  /** SQLite's data_version when the map was last exact (null: never built). */
  private exact_at: number | null = null;
  private merge: Merge | null = null;

  constructor(db: Database.Database, limits: HashMergeLimits) {
    assert(limits.rows_min >= 1 && limits.step_keys_max >= 1 && limits.step_interval_ms >= 0, 'the hash merge has limits');
    this.limits = limits;
    this.statements = {
      mergedThrough: db.prepare(HASH_INDEX_SQL.mergedThrough).pluck(),
      rowsAfter: db.prepare(HASH_INDEX_SQL.rowsAfter).raw(true),
      findMerged: db.prepare(HASH_INDEX_SQL.findMerged).pluck(),
      anyMerged: db.prepare(HASH_INDEX_SQL.anyMerged).pluck(),
      mergeRows: db.prepare(HASH_INDEX_SQL.mergeRows),
      setMergedThrough: db.prepare(HASH_INDEX_SQL.setMergedThrough),
    };
  }

  /** Brings the map up to date with another connection's commits; `data_version` is SQLite's, read by the caller just before. */
  sync(data_version: number): void {
    if (this.exact_at === data_version) return;
    this.forgetThrough(this.statements.mergedThrough.get() as number);
    if (this.merge !== null && this.merge.through_seq <= this.merged_through) this.merge = null;
    for (const [seq, tx_hash] of this.statements.rowsAfter.iterate(this.seen_through) as IterableIterator<[number, string]>) this.add(tx_hash, seq);
    this.exact_at = data_version;
  }

  /** The row number of the transaction with this hash, or null. Sync first. */
  seqOf(tx_hash: string): number | null {
    const recent = this.recentSeqOf(tx_hash);
    if (recent !== undefined) return recent;
    return (this.statements.findMerged.get(hashPrefix(tx_hash), tx_hash) as number | undefined) ?? null;
  }

  /** The row number of the transaction with this hash if it is past the mark (in memory), else undefined: look for it in the table. Sync first. */
  recentSeqOf(tx_hash: string): number | undefined {
    return this.recent.get(tx_hash);
  }

  /**
   * Asserts that none of `tx_hashes` is stored, nor any twice among them: the map, then the table in one
   * statement. Call in the append's write transaction, synced first. A hash names a nonce drawn from the
   * CSPRNG, so a second one is a bug, never a client's mistake.
   */
  assertNotStored(tx_hashes: readonly string[]): void {
    const batch = new Set<string>();
    for (const tx_hash of tx_hashes) {
      assert(!this.recent.has(tx_hash) && !batch.has(tx_hash), `transaction ${tx_hash} is stored once`);
      batch.add(tx_hash);
    }
    const stored = this.statements.anyMerged.get(JSON.stringify(tx_hashes)) as string | undefined;
    assert(stored === undefined, `transaction ${stored} is stored once`);
  }

  /** Adds rows this connection has stored; call once their append has committed, in row order. */
  stored(rows: ReadonlyArray<{ seq: number; tx_hash: string }>): void {
    for (const row of rows) this.add(row.tx_hash, row.seq);
  }

  get step_interval_ms(): number {
    return this.limits.step_interval_ms;
  }

  /** Whether a merge step has work: one under way, or enough rows past the mark to start one. */
  wantsStep(): boolean {
    return this.merge !== null || this.recent.size >= this.limits.rows_min;
  }

  /**
   * Writes one step of the merge (starting one if none is under way) inside the caller's write
   * transaction, synced first. Returns what to do once it has committed; a rolled-back step leaves
   * the merge where it was.
   */
  mergeStep(): () => void {
    const merge = this.merge ?? this.startMerge();
    const range = merge.ranges[merge.next] as number[];
    if (range.length > 0) this.statements.mergeRows.run(JSON.stringify(range));
    const last = merge.next === merge.ranges.length - 1;
    if (last) this.statements.setMergedThrough.run(merge.through_seq);
    return () => {
      if (this.merge !== merge) return;
      merge.next += 1;
      if (!last) return;
      this.merge = null;
      this.forgetThrough(merge.through_seq);
    };
  }

  /** Takes a snapshot of the rows past the mark, split into ranges of prefixes of about `step_keys_max` keys. */
  private startMerge(): Merge {
    assert(this.recent.size > 0, 'a merge has rows to write');
    const count = Math.ceil(this.recent.size / this.limits.step_keys_max);
    const ranges: number[][] = Array.from({ length: count }, () => []);
    for (const [tx_hash, seq] of this.recent) {
      // The hash's first 8 hex digits, uniform, pick the range: ranges are in prefix order.
      const range = Math.floor((Number.parseInt(tx_hash.slice(2, 10), 16) / 2 ** 32) * count);
      (ranges[range] as number[]).push(seq);
    }
    this.merge = { through_seq: this.seen_through, ranges, next: 0 };
    return this.merge;
  }

  /** Moves the mark to `through_seq` (if ahead) and takes the rows up to it out of memory. */
  private forgetThrough(through_seq: number): void {
    if (through_seq <= this.merged_through) return;
    this.merged_through = through_seq;
    this.seen_through = Math.max(this.seen_through, through_seq);
    for (const [tx_hash, seq] of this.recent) {
      if (seq > through_seq) break;
      this.recent.delete(tx_hash);
    }
  }

  private add(tx_hash: string, seq: number): void {
    assert(seq > this.seen_through, 'rows are added in row order');
    this.recent.set(tx_hash, seq);
    this.seen_through = seq;
  }
}
