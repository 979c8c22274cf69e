/**
 * What the SQLite store keeps in memory of its pending rows (the failure budget's pending debits, each
 * account's pending history) is built from the rows at open and rebuilt when another connection has
 * written to the file. Both are rebuilt here from one scan of the pending rows: at 200,000 pending, two
 * scans of their own were 387 and 315 ms of a restart (docs/performance.md, "One scan of the pending
 * rows at open").
 *
 * Each copy remembers SQLite's `data_version` at which it was last exact; `sync` rebuilds the copies
 * that are behind the version read, in one pass, and marks them exact at it. The version is read before
 * the scan, so a commit by another connection in between leaves a copy newer than its mark, never
 * older: the next `sync` sees a changed version and rebuilds again.
 */
import type Database from './sqlite-driver.js';
import type { TransactionType } from '../../domain/transaction.js';

export const PENDING_ROWS_SQL = "SELECT seq, from_id, to_id, token, type, amount FROM transactions WHERE status = 'pending' ORDER BY seq";

/** A pending transaction as the copies need it, in row order. */
export type PendingRow = { seq: number; from: string; to: string; token: string; type: TransactionType; amount_units: bigint };

/** A copy kept in memory of the pending rows. */
export type PendingRowsCopy = {
  /** SQLite's data_version when this was last exact (null: never built). */
  readonly data_version: number | null;
  /** Starts a rebuild: forgets everything. */
  clear(): void;
  /** Adds one pending row; called in row order after `clear`. */
  addPendingRow(row: PendingRow): void;
  /** Ends a rebuild: exact at `data_version`. */
  rebuilt(data_version: number): void;
};

export class SqlitePendingRows {
  private readonly statement: Database.Statement;
  private readonly copies: readonly PendingRowsCopy[];

  constructor(db: Database.Database, copies: readonly PendingRowsCopy[]) {
    this.statement = db.prepare(PENDING_ROWS_SQL).raw(true).safeIntegers(true);
    this.copies = copies;
  }

  /** Rebuilds, from one scan, every copy not exact at `data_version` (SQLite's, read by the caller just before). */
  sync(data_version: number): void {
    if (!this.anyBehind(data_version)) return;
    const behind = this.copies.filter((copy) => copy.data_version !== data_version);
    for (const copy of behind) copy.clear();
    for (const [seq, from, to, token, type, amount_units] of this.statement.iterate() as IterableIterator<[bigint, string, string, string, TransactionType, bigint]>) {
      const row: PendingRow = { seq: Number(seq), from, to, token, type, amount_units };
      for (const copy of behind) copy.addPendingRow(row);
    }
    for (const copy of behind) copy.rebuilt(data_version);
  }

  /** Asked before every write transaction and history read: a loop, nothing allocated. */
  private anyBehind(data_version: number): boolean {
    for (const copy of this.copies) if (copy.data_version !== data_version) return true;
    return false;
  }
}
