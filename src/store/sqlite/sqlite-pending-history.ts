/**
 * The pending part of each account's history on SQLite, kept in memory: the row numbers of each
 * account's pending transactions, nothing more (a page's hashes are read by row number, a seek each).
 *
 * An account's history is read from two places: sealed transactions from the partial indexes
 * `transactions_sealed_by_from` and `transactions_sealed_by_to`, which a block's commit writes (one
 * block's rows at a time, so each account's last page is written once a block), and pending ones from
 * here. Indexes over every row, written on accept, were half of what accepting a transaction cost
 * SQLite: each group commit wrote a page of each for every account it touched (docs/performance.md,
 * "An account's pending history in memory").
 *
 * Kept as the failure budget keeps its pending debits (sqlite-failure-budget.ts): built from the pending
 * rows at open, changed only after this connection's append or block has committed (so a rolled-back
 * write leaves it as it was, and a reader on the event loop never sees a row in both places or in
 * neither), and rebuilt when another connection has written to the file (SQLite's `data_version`, which
 * the store reads before each history read and in each write transaction; both are rebuilt from one scan,
 * sqlite-pending-rows.ts). How much it holds is what is pending, which `PENDING_MAX` bounds.
 */
import type Database from './sqlite-driver.js';
import { assert } from '../../domain/shared/errors.js';
import type { HistoryEntry } from '../../service/ledger-store.js';
import type { PendingRow, PendingRowsCopy } from './sqlite-pending-rows.js';

export const PENDING_HISTORY_SQL = {
  blockRows: 'SELECT seq, from_id, to_id FROM transactions WHERE block_number = ?',
} as const;

/** A transaction's row number and the two accounts whose history holds it. */
export type PendingHistoryRow = { seq: number; from: string; to: string };

/** Empty until the store's first sync (sqlite-pending-rows.ts) builds it from the pending rows. */
export class SqlitePendingHistory implements PendingRowsCopy {
  private readonly statements: { [name in keyof typeof PENDING_HISTORY_SQL]: Database.Statement };
  /** Each account's pending transactions, sender's or receiver's: row numbers, oldest first. */
  private readonly by_account = new Map<string, number[]>();
  /** SQLite's data_version when this was last known exact; another connection's commit changes it. */
  private exact_at: number | null = null;

  constructor(db: Database.Database) {
    this.statements = {
      blockRows: db.prepare(PENDING_HISTORY_SQL.blockRows).raw(true),
    };
  }

  clear(): void {
    this.by_account.clear();
  }

  addPendingRow(row: PendingRow): void {
    this.add(row.seq, row.from, row.to);
  }

  get data_version(): number | null {
    return this.exact_at;
  }

  rebuilt(data_version: number): void {
    this.exact_at = data_version;
  }

  /** Adds transactions this connection has stored; call once their append has committed, in row order. */
  stored(rows: readonly PendingHistoryRow[]): void {
    for (const row of rows) this.add(row.seq, row.from, row.to);
  }

  /**
   * What block `number` seals: `sealed` when the commit passed its postings, else read inside the
   * block's write transaction. Call the returned function once the block has committed, to take them off.
   */
  settleBlock(number: number, sealed: readonly PendingHistoryRow[] | null): () => void {
    const rows = sealed ?? (this.statements.blockRows.all(number) as Array<[number, string, string]>).map(([seq, from, to]) => ({ seq, from, to }));
    return () => this.remove(rows);
  }

  /** The row numbers of `user_id`'s pending transactions before `before_seq` (null: from the newest), newest first, at most `limit`. */
  page(user_id: string, before_seq: number | null, limit: number): number[] {
    const seqs = this.by_account.get(user_id);
    if (seqs === undefined) return [];
    const page: number[] = [];
    for (let index = countBefore(seqs, before_seq) - 1; index >= 0 && page.length < limit; index -= 1) page.push(seqs[index] as number);
    return page;
  }

  /** The row number of `user_id`'s newest pending transaction before `before_seq` (null: none). */
  newest(user_id: string, before_seq: number | null): number | null {
    const seqs = this.by_account.get(user_id);
    if (seqs === undefined) return null;
    const count = countBefore(seqs, before_seq);
    return count === 0 ? null : (seqs[count - 1] as number);
  }

  private add(seq: number, from: string, to: string): void {
    this.append(from, seq);
    // A mint to its issuer is in that account's history once.
    if (to !== from) this.append(to, seq);
  }

  private append(account: string, seq: number): void {
    const seqs = this.by_account.get(account);
    if (seqs === undefined) {
      this.by_account.set(account, [seq]);
      return;
    }
    assert((seqs.at(-1) as number) < seq, 'pending transactions are added in row order');
    seqs.push(seq);
  }

  /**
   * Takes sealed transactions off. A block seals the oldest pending transactions, so what an account
   * loses is the start of its list: cut off after a check of that start only (a block that sealed
   * otherwise costs a pass over the account's list).
   */
  private remove(rows: readonly PendingHistoryRow[]): void {
    const gone_by_account = new Map<string, number[]>();
    const note = (account: string, seq: number) => {
      const gone = gone_by_account.get(account);
      if (gone === undefined) gone_by_account.set(account, [seq]);
      else gone.push(seq);
    };
    for (const row of rows) {
      note(row.from, row.seq);
      if (row.to !== row.from) note(row.to, row.seq);
    }
    for (const [account, gone] of gone_by_account) {
      const seqs = this.by_account.get(account);
      // The block's write transaction synced this first, and a block seals only pending rows.
      assert(seqs !== undefined, `account ${account} had pending transactions`);
      const left = startsWith(seqs, gone) ? seqs.slice(gone.length) : withoutAll(seqs, gone);
      assert(left.length === seqs.length - gone.length, `the transactions sealed for ${account} were pending`);
      if (left.length === 0) this.by_account.delete(account);
      else this.by_account.set(account, left);
    }
  }
}

/** How many of `seqs` (ascending) are below `before_seq` (null: all of them). */
function countBefore(seqs: readonly number[], before_seq: number | null): number {
  if (before_seq === null) return seqs.length;
  let low = 0;
  let high = seqs.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((seqs[middle] as number) < before_seq) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Whether `seqs` starts with `prefix`, element for element. */
function startsWith(seqs: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > seqs.length) return false;
  for (let index = 0; index < prefix.length; index += 1) {
    if (seqs[index] !== prefix[index]) return false;
  }
  return true;
}

/** `seqs` without any of `gone`, in the same order. */
function withoutAll(seqs: readonly number[], gone: readonly number[]): number[] {
  const removed = new Set(gone);
  return seqs.filter((seq) => !removed.has(seq));
}

/** The newest `limit` of two pages, each newest first, as one page newest first. */
export function newestOf(first: readonly HistoryEntry[], second: readonly HistoryEntry[], limit: number): HistoryEntry[] {
  const page: HistoryEntry[] = [];
  let a = 0;
  let b = 0;
  while (page.length < limit && (a < first.length || b < second.length)) {
    const next_first = first[a];
    const next_second = second[b];
    if (next_second === undefined || (next_first !== undefined && next_first.seq > next_second.seq)) {
      page.push(next_first as HistoryEntry);
      a += 1;
    } else {
      page.push(next_second);
      b += 1;
    }
  }
  return page;
}
