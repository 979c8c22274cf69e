/**
 * The pending part of each account's history on SQLite, kept in memory.
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
 * neither), and rebuilt when another connection has written to the file (SQLite's `data_version`, checked
 * before each read and in each write transaction). How much it holds is what is pending, which
 * `PENDING_MAX` bounds.
 */
import type Database from 'better-sqlite3';
import { assert } from '../../domain/errors.js';
import type { HistoryEntry } from '../../service/ledger-store.js';

export const PENDING_HISTORY_SQL = {
  pendingRows: "SELECT seq, tx_hash, from_id, to_id FROM transactions WHERE status = 'pending' ORDER BY seq",
  dataVersion: 'PRAGMA data_version',
} as const;

/** A pending transaction, as an account's history names it. */
export type PendingHistoryRow = { seq: number; tx_hash: string; from_id: string; to_id: string };

export class SqlitePendingHistory {
  private readonly statements: { [name in keyof typeof PENDING_HISTORY_SQL]: Database.Statement };
  /** Each account's pending transactions, sender's or receiver's, oldest first. */
  private readonly by_account = new Map<string, PendingHistoryRow[]>();
  private readonly by_hash = new Map<string, PendingHistoryRow>();
  /** SQLite's data_version when this was last known exact; another connection's commit changes it. */
  private data_version: number;

  constructor(db: Database.Database) {
    this.statements = {
      pendingRows: db.prepare(PENDING_HISTORY_SQL.pendingRows),
      dataVersion: db.prepare(PENDING_HISTORY_SQL.dataVersion).pluck(true),
    };
    this.data_version = this.rebuild();
  }

  /** Before a read, and first thing in a write transaction that appends or seals: rebuilds if another connection wrote since. */
  sync(): void {
    const version = this.statements.dataVersion.get() as number;
    if (version !== this.data_version) this.data_version = this.rebuild();
  }

  /** Adds transactions this connection has stored; call once their append has committed, in row order. */
  stored(rows: readonly PendingHistoryRow[]): void {
    for (const row of rows) this.add(row);
  }

  /**
   * Takes the transactions a block sealed off; call once the block has committed. A block seals the
   * oldest pending transactions, so what an account loses is the start of its list: cut off without a
   * look at the rest (a sealer that chose otherwise would cost a pass over the account's list).
   */
  sealed(tx_hashes: readonly string[]): void {
    const gone_by_account = new Map<string, number>();
    for (const tx_hash of tx_hashes) {
      const row = this.by_hash.get(tx_hash);
      // The block's write transaction synced this first, and a block seals only pending rows.
      assert(row !== undefined, `sealed transaction ${tx_hash} was pending`);
      this.by_hash.delete(tx_hash);
      for (const account of accountsOf(row)) gone_by_account.set(account, (gone_by_account.get(account) ?? 0) + 1);
    }
    for (const [account, gone] of gone_by_account) {
      const rows = this.by_account.get(account) as PendingHistoryRow[];
      const left = leadingGone(rows, gone, this.by_hash) ? rows.slice(gone) : rows.filter((row) => this.by_hash.has(row.tx_hash));
      if (left.length === 0) this.by_account.delete(account);
      else this.by_account.set(account, left);
    }
  }

  /** `user_id`'s pending transactions before `before_seq` (null: from the newest), newest first, at most `limit`. */
  page(user_id: string, before_seq: number | null, limit: number): HistoryEntry[] {
    const rows = this.by_account.get(user_id);
    if (rows === undefined) return [];
    const page: HistoryEntry[] = [];
    for (let index = rowsBefore(rows, before_seq) - 1; index >= 0 && page.length < limit; index -= 1) {
      const row = rows[index] as PendingHistoryRow;
      page.push({ seq: row.seq, tx_hash: row.tx_hash, sealed: false });
    }
    return page;
  }

  /** The row number of `user_id`'s newest pending transaction before `before_seq` (null: none). */
  newest(user_id: string, before_seq: number | null): number | null {
    const rows = this.by_account.get(user_id);
    if (rows === undefined) return null;
    const count = rowsBefore(rows, before_seq);
    return count === 0 ? null : (rows[count - 1] as PendingHistoryRow).seq;
  }

  /** How many pending transactions are held (what `PENDING_MAX` bounds). */
  get size(): number {
    return this.by_hash.size;
  }

  private add(row: PendingHistoryRow): void {
    this.by_hash.set(row.tx_hash, row);
    for (const account of accountsOf(row)) {
      const rows = this.by_account.get(account);
      if (rows === undefined) {
        this.by_account.set(account, [row]);
        continue;
      }
      assert((rows.at(-1) as PendingHistoryRow).seq < row.seq, 'pending transactions are added in row order');
      rows.push(row);
    }
  }

  /** Everything from the pending rows; returns the data_version it is exact at. */
  private rebuild(): number {
    this.by_account.clear();
    this.by_hash.clear();
    for (const row of this.statements.pendingRows.iterate() as IterableIterator<PendingHistoryRow>) this.add(row);
    return this.statements.dataVersion.get() as number;
  }
}

/** The accounts whose history holds `row`: its sender and its receiver, once when they are the same (a mint to its issuer). */
function accountsOf(row: PendingHistoryRow): readonly string[] {
  return row.from_id === row.to_id ? [row.from_id] : [row.from_id, row.to_id];
}

/** Whether the first `count` of `rows` are all gone from `pending`. */
function leadingGone(rows: readonly PendingHistoryRow[], count: number, pending: ReadonlyMap<string, PendingHistoryRow>): boolean {
  for (let index = 0; index < count; index += 1) {
    if (pending.has((rows[index] as PendingHistoryRow).tx_hash)) return false;
  }
  return true;
}

/** How many of `rows` (oldest first) come before `before_seq` (null: all of them). */
function rowsBefore(rows: readonly PendingHistoryRow[], before_seq: number | null): number {
  if (before_seq === null) return rows.length;
  let low = 0;
  let high = rows.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((rows[middle] as PendingHistoryRow).seq < before_seq) low = middle + 1;
    else high = middle;
  }
  return low;
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
