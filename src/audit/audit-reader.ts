/**
 * What the offline audit reads from a database, owned by the audit that uses it (each store has a
 * read-only implementation: src/store/sqlite/sqlite-audit-reader.ts, src/store/postgres/postgres-audit-reader.ts).
 * Every read is paged and ordered, so the audit's memory is bounded by a page (and the balances it
 * replays), never by the length of the chain. All reads of one reader see one snapshot of the database.
 */
import type { HistoryNode } from '../domain/shared/history-tree.js';
import type { Transaction } from '../domain/transaction.js';
import type { BalanceChange, StoredBlockHeader } from '../service/ledger-store.js';

/** An account as stored: known since its first confirmed transaction, active as of its last confirmed transfer. */
export type StoredAccount = { user_id: string; last_transfer_at: number | null };

export type BalanceKey = { user_id: string; token: string };

/**
 * A transaction in no block, with its arrival number (`seq`, as the store numbered it), and whether it is
 * in the queue the sealer takes its next block from (PostgreSQL: a row of `pending_transactions`; SQLite:
 * always, its queue being the rows without a block). One that is not would never be sealed.
 */
export type UnsealedTransaction = { seq: number; transaction: Transaction; queued: boolean };

/** Block headers read at once at the most. */
export const AUDIT_BLOCK_PAGE_MAX = 1000;
/** Rows (transactions, balances, accounts) read at once, as a rule; one block is read whole whatever its size. */
export const AUDIT_ROW_PAGE_MAX = 20_000;

export interface AuditReader {
  /** Where the database is, for messages (a file path, or a server and schema without credentials). */
  readonly location: string;
  /** A ledger-wide setting (e.g. `native_symbol`), null when unset. */
  setting(name: string): Promise<string | null>;
  latestBlock(): Promise<StoredBlockHeader | null>;
  /** Up to `limit` blocks with number ≥ `from_number`, in number order. */
  blocks(from_number: number, limit: number): Promise<StoredBlockHeader[]>;
  /**
   * Up to `limit` transactions whose block number is in `from_number`..`to_number`, ordered by block
   * number and position: every row that names one of those blocks, whatever else it says.
   */
  blockTransactions(from_number: number, to_number: number, limit: number): Promise<Transaction[]>;
  /** Up to `limit` transactions that name no block, with seq > `after_seq`, in seq (arrival) order. */
  unsealedTransactions(after_seq: number, limit: number): Promise<UnsealedTransaction[]>;
  /** Up to `limit` stored balances after `after` (null: from the first), ordered by user id, then token. */
  balances(after: BalanceKey | null, limit: number): Promise<BalanceChange[]>;
  /** The balance roots stored for blocks `from_number`..`to_number` (a database older than balance commitments has none). */
  balanceRoots(from_number: number, to_number: number): Promise<Map<number, string>>;
  /** Up to `limit` stored accounts with user id after `after` (null: from the first), in user id order. */
  accounts(after: string | null, limit: number): Promise<StoredAccount[]>;
  /** Stored history-tree nodes of `level` with index from_index..to_index (src/domain/shared/history-tree.ts). */
  historyNodes(level: number, from_index: number, to_index: number): Promise<HistoryNode[]>;
  close(): Promise<void>;
}
