/**
 * The audit's read-only view of an SQLite ledger file (src/audit/audit-reader.ts): a read-only
 * connection holding one read transaction, so that every page sees the same snapshot even while a
 * service keeps writing (WAL mode: the reader blocks no writer). Keyset-paged statements on the
 * store's own indexes; amounts and balances read as bigint.
 */
import Database from './sqlite-driver.js';
import type { HistoryNode } from '../../domain/shared/history-tree.js';
import type { AuditReader, BalanceKey, StoredAccount, UnsealedTransaction } from '../../audit/audit-reader.js';
import type { Transaction } from '../../domain/transaction.js';
import type { BalanceChange, StoredBlockHeader } from '../../service/ledger-store.js';
import { toStoredHeader, toTransaction, type BlockRow } from './sqlite-store.js';

const BLOCK_COLUMNS = 'number, hash, parent_hash, timestamp, transactions_count, transactions_root, total_transactions, total_users, transfer_volume_totals, native_price, swap_volume_usd';
/** Read in raw mode (arrays, no row objects: a million of them is most of an audit's garbage); see `columnsToTransaction`. */
const TRANSACTION_COLUMNS = 'seq, tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error, min_receive, amount_out, token_out';

/** Every statement of the reader, exported so that tests can check their query plans. */
export const AUDIT_SQL = {
  setting: 'SELECT value FROM settings WHERE name = ?',
  latestBlock: `SELECT ${BLOCK_COLUMNS} FROM blocks ORDER BY number DESC LIMIT 1`,
  blocks: `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE number >= ? ORDER BY number LIMIT ?`,
  historyNodes: 'SELECT level, idx, hash FROM history_nodes WHERE level = ? AND idx >= ? AND idx <= ? ORDER BY idx',
  blockTransactions: `SELECT ${TRANSACTION_COLUMNS} FROM transactions
       WHERE block_number >= ? AND block_number <= ? ORDER BY block_number, position LIMIT ?`,
  unsealedTransactions: `SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE seq > ? AND block_number IS NULL ORDER BY seq LIMIT ?`,
  firstBalances: 'SELECT user_id, token, units FROM balances ORDER BY user_id, token LIMIT ?',
  balancesAfter: 'SELECT user_id, token, units FROM balances WHERE (user_id, token) > (?, ?) ORDER BY user_id, token LIMIT ?',
  firstAccounts: 'SELECT user_id, last_transfer_at FROM accounts ORDER BY user_id LIMIT ?',
  accountsAfter: 'SELECT user_id, last_transfer_at FROM accounts WHERE user_id > ? ORDER BY user_id LIMIT ?',
} as const;

/** Read only where the table exists (a ledger older than balance commitments has none). */
const BALANCE_ROOTS_SQL = 'SELECT number, root FROM balance_roots WHERE number >= ? AND number <= ? ORDER BY number';

export class SqliteAuditReader implements AuditReader {
  readonly location: string;
  private readonly db: Database.Database;
  private readonly statements: { [name in keyof typeof AUDIT_SQL]: Database.Statement };

  private constructor(db: Database.Database, location: string) {
    this.db = db;
    this.location = location;
    this.statements = prepare(db);
  }

  /** Opens `path` read-only (it must exist) and starts the read transaction that every page reads in. */
  static open(path: string): SqliteAuditReader {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    const reader = new SqliteAuditReader(db, path);
    db.exec('BEGIN');
    // The snapshot is taken at the first read of the transaction: take it now.
    reader.statements.latestBlock.get();
    return reader;
  }

  async balanceRoots(from_number: number, to_number: number): Promise<Map<number, string>> {
    const table = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'balance_roots'").get();
    if (table === undefined) return new Map();
    const rows = this.db.prepare(BALANCE_ROOTS_SQL).all(from_number, to_number) as Array<{ number: number; root: string }>;
    return new Map(rows.map((row) => [row.number, row.root]));
  }

  async setting(name: string): Promise<string | null> {
    return (this.statements.setting.pluck().get(name) as string | undefined) ?? null;
  }

  async latestBlock(): Promise<StoredBlockHeader | null> {
    const row = this.statements.latestBlock.get() as BlockRow | undefined;
    return row === undefined ? null : toStoredHeader(row);
  }

  async historyNodes(level: number, from_index: number, to_index: number): Promise<HistoryNode[]> {
    const rows = this.statements.historyNodes.all(level, from_index, to_index) as Array<{ level: number; idx: number; hash: Uint8Array }>;
    return rows.map((row) => ({ level: Number(row.level), index: Number(row.idx), hash: new Uint8Array(row.hash) }));
  }

  async blocks(from_number: number, limit: number): Promise<StoredBlockHeader[]> {
    return (this.statements.blocks.all(from_number, limit) as BlockRow[]).map(toStoredHeader);
  }

  async blockTransactions(from_number: number, to_number: number, limit: number): Promise<Transaction[]> {
    const transactions: Transaction[] = [];
    for (const columns of this.statements.blockTransactions.iterate(from_number, to_number, limit)) {
      transactions.push(columnsToTransaction(columns as TransactionColumns));
    }
    return transactions;
  }

  /** Queued, every one: the sealer takes its blocks from the rows without a block, in row order (the pending index). */
  async unsealedTransactions(after_seq: number, limit: number): Promise<UnsealedTransaction[]> {
    const rows = this.statements.unsealedTransactions.all(after_seq, limit) as TransactionColumns[];
    return rows.map((columns) => ({ seq: Number(columns[0]), transaction: columnsToTransaction(columns), queued: true }));
  }

  async balances(after: BalanceKey | null, limit: number): Promise<BalanceChange[]> {
    const rows = (after === null
      ? this.statements.firstBalances.all(limit)
      : this.statements.balancesAfter.all(after.user_id, after.token, limit)) as Array<{ user_id: string; token: string; units: bigint }>;
    return rows.map((row) => ({ user_id: row.user_id, token: row.token, units: BigInt(row.units) }));
  }

  async accounts(after: string | null, limit: number): Promise<StoredAccount[]> {
    const rows = (after === null ? this.statements.firstAccounts.all(limit) : this.statements.accountsAfter.all(after, limit)) as Array<{ user_id: string; last_transfer_at: bigint | null }>;
    return rows.map((row) => ({ user_id: row.user_id, last_transfer_at: row.last_transfer_at === null ? null : Number(row.last_transfer_at) }));
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    if (this.db.inTransaction) this.db.exec('COMMIT');
    this.db.close();
  }
}

/** The columns of TRANSACTION_COLUMNS in order, integers as bigint. */
type TransactionColumns = [
  seq: bigint, tx_hash: string, from_id: string, to_id: string, amount: bigint, token: string, type: string, metadata: string,
  nonce: string, timestamp: bigint, status: string, block_number: bigint | null, position: bigint | null, error: string | null,
  min_receive: bigint | null, amount_out: bigint | null, token_out: string | null,
];

/** The same record as the store's own `toTransaction`, from a raw row. */
function columnsToTransaction(columns: TransactionColumns): Transaction {
  const [, tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error, min_receive, amount_out, token_out] = columns;
  return toTransaction({ tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, block_hash: null, position, error, min_receive, amount_out, token_out });
}

function prepare(db: Database.Database): SqliteAuditReader['statements'] {
  const integers = (sql: string) => db.prepare(sql).safeIntegers(true);
  return {
    setting: db.prepare(AUDIT_SQL.setting),
    latestBlock: db.prepare(AUDIT_SQL.latestBlock),
    blocks: db.prepare(AUDIT_SQL.blocks),
    historyNodes: db.prepare(AUDIT_SQL.historyNodes),
    blockTransactions: integers(AUDIT_SQL.blockTransactions).raw(true),
    unsealedTransactions: integers(AUDIT_SQL.unsealedTransactions).raw(true),
    firstBalances: integers(AUDIT_SQL.firstBalances),
    balancesAfter: integers(AUDIT_SQL.balancesAfter),
    firstAccounts: integers(AUDIT_SQL.firstAccounts),
    accountsAfter: integers(AUDIT_SQL.accountsAfter),
  };
}
