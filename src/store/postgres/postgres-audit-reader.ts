/**
 * The audit's read-only view of a PostgreSQL ledger (src/audit/audit-reader.ts): one connection in one
 * REPEATABLE READ READ ONLY transaction, so that every page sees the same snapshot while instances keep
 * writing. Keyset-paged statements on the schema's own indexes; amounts travel as decimal text.
 * Opening it migrates nothing: a schema without the ledger's tables fails the first read.
 */
import pg from 'pg';
import type { HistoryNode } from '../../domain/shared/history-tree.js';
import { hexToBytes } from '../../domain/shared/hex.js';
import type { AuditReader, BalanceKey, StoredAccount, UnsealedTransaction } from '../../audit/audit-reader.js';
import type { Transaction } from '../../domain/transaction.js';
import type { BalanceChange, StoredBlockHeader } from '../../service/ledger-store.js';
import { connectionSettings, type PostgresConnection } from './connection.js';
import { OUTCOME_STATUS_SQL } from './schema.js';
import { toStoredHeader, toTransaction, type BlockRow, type TransactionRow } from './postgres-store.js';

const BLOCK_COLUMNS = `number::text AS number, hash, parent_hash, timestamp::text AS timestamp, transactions_count, transactions_root,
  total_transactions::text AS total_transactions, total_users::text AS total_users, transfer_volume_totals, native_price,
  swap_volume_usd::text AS swap_volume_usd`;
const TRANSACTION_COLUMNS = `t.seq::text AS seq, t.tx_hash, t.from_id, t.to_id, t.amount::text AS amount, t.token, t.type, t.metadata, t.nonce,
  t.timestamp::text AS timestamp, ${OUTCOME_STATUS_SQL} AS status, o.block_number::text AS block_number, NULL AS block_hash, o.position, o.error,
  t.min_receive::text AS min_receive, o.amount_out::text AS amount_out, t.token_out`;

/** Every statement of the reader, exported so that tests can check their query plans. */
export const AUDIT_SQL = {
  setting: 'SELECT value FROM settings WHERE name = $1',
  latestBlock: `SELECT ${BLOCK_COLUMNS} FROM blocks ORDER BY blocks.number DESC LIMIT 1`,
  blocks: `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE blocks.number >= $1 ORDER BY blocks.number LIMIT $2`,
  historyNodes: `SELECT level, idx, encode(hash, 'hex') AS hash FROM history_nodes WHERE level = $1 AND idx >= $2 AND idx <= $3 ORDER BY idx`,
  blockTransactions: `SELECT ${TRANSACTION_COLUMNS} FROM transaction_outcomes o JOIN transactions t ON t.seq = o.seq
       WHERE o.block_number >= $1 AND o.block_number <= $2 ORDER BY o.block_number, o.position LIMIT $3`,
  // Every transaction without an outcome, queued or not: the audit reports one the sealer would never take.
  unsealedTransactions: `SELECT ${TRANSACTION_COLUMNS}, EXISTS (SELECT 1 FROM pending_transactions p WHERE p.seq = t.seq) AS queued
       FROM transactions t LEFT JOIN transaction_outcomes o ON o.seq = t.seq
       WHERE t.seq > $1 AND o.seq IS NULL ORDER BY t.seq LIMIT $2`,
  firstBalances: 'SELECT user_id, token, units::text AS units FROM balances ORDER BY user_id, token LIMIT $1',
  balancesAfter: 'SELECT user_id, token, units::text AS units FROM balances WHERE (user_id, token) > ($1, $2) ORDER BY user_id, token LIMIT $3',
  firstAccounts: 'SELECT user_id, last_transfer_at::text AS last_transfer_at FROM accounts ORDER BY user_id LIMIT $1',
  accountsAfter: 'SELECT user_id, last_transfer_at::text AS last_transfer_at FROM accounts WHERE user_id > $1 ORDER BY user_id LIMIT $2',
  // Only where the table exists: a ledger older than balance commitments has none (and a failed query would end the snapshot).
  balanceRootsTable: "SELECT to_regclass('balance_roots') IS NOT NULL AS present",
  balanceRoots: 'SELECT number::text AS number, root FROM balance_roots WHERE number >= $1 AND number <= $2 ORDER BY number',
} as const;

export class PostgresAuditReader implements AuditReader {
  readonly location: string;
  private readonly client: pg.Client;

  private constructor(client: pg.Client, location: string) {
    this.client = client;
    this.location = location;
  }

  static async open(connection: PostgresConnection): Promise<PostgresAuditReader> {
    const client = new pg.Client(connectionSettings(connection));
    // A connection that breaks emits 'error': the query in flight fails anyway; never crash on it.
    client.on('error', () => undefined);
    await client.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    } catch (error) {
      await client.end();
      throw error;
    }
    return new PostgresAuditReader(client, describeLocation(connection));
  }

  async setting(name: string): Promise<string | null> {
    return (await this.rows<{ value: string }>('setting', [name]))[0]?.value ?? null;
  }

  async latestBlock(): Promise<StoredBlockHeader | null> {
    const row = (await this.rows<BlockRow>('latestBlock', []))[0];
    return row === undefined ? null : toStoredHeader(row);
  }

  async historyNodes(level: number, from_index: number, to_index: number): Promise<HistoryNode[]> {
    const rows = await this.rows<{ level: number; idx: string; hash: string }>('historyNodes', [level, from_index, to_index]);
    return rows.map((row) => ({ level: Number(row.level), index: Number(row.idx), hash: hexToBytes(row.hash) }));
  }

  async blocks(from_number: number, limit: number): Promise<StoredBlockHeader[]> {
    return (await this.rows<BlockRow>('blocks', [from_number, limit])).map(toStoredHeader);
  }

  async blockTransactions(from_number: number, to_number: number, limit: number): Promise<Transaction[]> {
    return (await this.rows<TransactionRow>('blockTransactions', [from_number, to_number, limit])).map(toTransaction);
  }

  async unsealedTransactions(after_seq: number, limit: number): Promise<UnsealedTransaction[]> {
    const rows = await this.rows<TransactionRow & { queued: boolean }>('unsealedTransactions', [after_seq, limit]);
    return rows.map((row) => ({ seq: Number(row.seq), transaction: toTransaction(row), queued: row.queued }));
  }

  async balances(after: BalanceKey | null, limit: number): Promise<BalanceChange[]> {
    const rows = after === null
      ? await this.rows<{ user_id: string; token: string; units: string }>('firstBalances', [limit])
      : await this.rows<{ user_id: string; token: string; units: string }>('balancesAfter', [after.user_id, after.token, limit]);
    return rows.map((row) => ({ user_id: row.user_id, token: row.token, units: BigInt(row.units) }));
  }

  async balanceRoots(from_number: number, to_number: number): Promise<Map<number, string>> {
    const [table] = await this.rows<{ present: boolean }>('balanceRootsTable', []);
    if (table?.present !== true) return new Map();
    const rows = await this.rows<{ number: string; root: string }>('balanceRoots', [from_number, to_number]);
    return new Map(rows.map((row) => [Number(row.number), row.root]));
  }

  async accounts(after: string | null, limit: number): Promise<StoredAccount[]> {
    const rows = after === null
      ? await this.rows<{ user_id: string; last_transfer_at: string | null }>('firstAccounts', [limit])
      : await this.rows<{ user_id: string; last_transfer_at: string | null }>('accountsAfter', [after, limit]);
    return rows.map((row) => ({ user_id: row.user_id, last_transfer_at: row.last_transfer_at === null ? null : Number(row.last_transfer_at) }));
  }

  async close(): Promise<void> {
    try {
      await this.client.query('COMMIT');
    } finally {
      await this.client.end();
    }
  }

  private async rows<Row extends pg.QueryResultRow>(name: keyof typeof AUDIT_SQL, values: unknown[]): Promise<Row[]> {
    return (await this.client.query<Row>({ name: `tabula_audit_${name}`, text: AUDIT_SQL[name], values })).rows;
  }
}

/** The server, database and schema, without credentials. */
function describeLocation(connection: PostgresConnection): string {
  const url = new URL(connection.url);
  return `postgres://${url.hostname}:${url.port || '5432'}${url.pathname}${connection.schema === null ? '' : ` (schema ${connection.schema})`}`;
}
