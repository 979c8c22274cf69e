/**
 * The shared store: PostgreSQL through node-postgres (a pool of connections, named prepared
 * statements, and arrays through `unnest` so that a batch is one statement, not one per row). Several
 * instances may use one database at once: every write is one transaction, an idempotency key is
 * claimed under the keys' primary key (in the group commit's one statement when every key is new; else
 * with `ON CONFLICT DO NOTHING` and the winner read back, see appendAlone), and the schema's constraints and
 * triggers refuse any block that does not extend the chain (see schema.ts). Amounts travel as decimal
 * text in both directions, so no JavaScript number ever holds one.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import type { Block, BlockHeader } from '../../domain/block.js';
import type { FailureCode, Metadata, Transaction, TransactionStatus, TransactionType } from '../../domain/transaction.js';
import type { Candle, CandleInterval } from '../../domain/market/candles.js';
import type {
  AppendResult,
  BalanceChange,
  BalanceSnapshot,
  PricedBalances,
  BlockCommit,
  IdempotencyRecord,
  LedgerStore,
  PendingAppend,
  PendingPosting,
  HistoryEntry,
  StatsSnapshot,
  StoredBlockHeader,
  StoredEvent,
} from '../../service/ledger-store.js';
import { TRANSACTIONS_BY_HASH_MAX } from '../../service/ledger-store.js';
import { collectEvents } from '../event-rows.js';
import { guardWrite, isSystemFault, StorageOpenError, translateFault, type StorageHealthReporter } from '../storage-faults.js';
import { decodeVolumes, encodeVolumes, swapVolume } from '../volume-totals.js';
import { connectionSettings, eventChannel, STATEMENT_TIMEOUT_MS, type PostgresConnection } from './connection.js';
import { BatchedRead } from '../batched-read.js';
import { CoalescedRead } from '../coalesced-read.js';
import {
  blockSettlement, coverageOf, coverageParameters, debitSums, FAILURE_BUDGET_SQL, judgeLocked, keepFloors, type FailureBudgetStatement,
} from './postgres-failure-budget.js';
import { SequencedPendingDebits, type PendingDelta } from '../../failure-budget/pending-debits.js';
import { assertOutcomeErrors, assertPostingsMatch, outcomeRuns, settledByPostings } from '../block-postings.js';
import type { DebitSum } from '../../failure-budget/failure-budget-policy.js';
import { PostgresWebhookStore } from './postgres-webhook-store.js';
import { assert } from '../../domain/shared/errors.js';
import { POOL_ACCOUNT_SQL } from '../system-accounts-sql.js';
import { LOCK_CLASS, MIGRATIONS, OUTCOME_STATUS_SQL } from './schema.js';
import { inTransaction, watchCheckedOut } from './transaction.js';
import type { HistoryNode, NodeKey } from '../../domain/shared/history-tree.js';
import { bytesToHex, hexToBytes } from '../../domain/shared/hex.js';
import { historyNodesToWrite, historySiblingKeys, type HistoryLeaf } from '../../service/history-writer.js';

export type TransactionRow = {
  seq?: string;
  tx_hash: string;
  from_id: string;
  to_id: string;
  amount: string;
  token: string;
  type: string;
  metadata: string;
  nonce: string;
  timestamp: string;
  status: string;
  block_number: string | null;
  block_hash: string | null;
  position: number | null;
  error: string | null;
  min_receive: string | null;
  amount_out: string | null;
  token_out: string | null;
};

export type BlockRow = {
  number: string;
  hash: string;
  parent_hash: string;
  timestamp: string;
  transactions_count: number;
  transactions_root: string;
  total_transactions: string;
  total_users: string;
  transfer_volume_totals: string;
  native_price: string | null;
  swap_volume_usd: string;
};

type CandleRow = { interval: string; start: string; open: string; high: string; low: string; close: string; volume_usd: string };

type IdempotencyRow = { caller: string; key: string; request_hash: string; tx_hash: string; timestamp: string };

export type PostgresStoreOptions = PostgresConnection & {
  /** Connections in the pool at the most. */
  pool_size_max?: number;
  logger?: Logger;
  health?: StorageHealthReporter | null;
};

/**
 * PostgreSQL's classes for a server that cannot take the work now — 53 (insufficient resources: disk
 * full, out of memory, too many connections), 08 (connection exceptions), 57P01–57P03 (shutting down,
 * starting up), 57P05 and 25P03 (a session ended for staying idle, see SEALER_LEASE_TIMEOUT_MS), 25006
 * (a read-only standby after a failover) — and a connection that broke, could not be made, or did not
 * answer within DATABASE_QUERY_TIMEOUT_MS.
 */
export function isPostgresStorageFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (/^(53|08)/.test(code) || ['57P01', '57P02', '57P03', '57P05', '25P03', '25006', '58030'].includes(code))) return true;
  if (isSystemFault(error)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|connection error|Connection refused|Query read timeout/i.test(message);
}

const POOL_SIZE_MAX_DEFAULT = 10;
/** A write that lost a deadlock or serialization race is tried again this many times at the most. */
const WRITE_ATTEMPTS_MAX = 3;
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/**
 * A transaction's columns, read as `t` (the row written when it was accepted), `o` (its outcome, none
 * while pending) and `b` (its block); OUTCOME_JOINS joins the last two. The status follows from the
 * outcome: none, pending; an error, failed; otherwise confirmed (schema.ts, version 11).
 */
const TRANSACTION_COLUMNS = `t.tx_hash, t.from_id, t.to_id, t.amount::text AS amount, t.token, t.type, t.metadata, t.nonce,
  t.timestamp::text AS timestamp, ${OUTCOME_STATUS_SQL} AS status, o.block_number::text AS block_number, b.hash AS block_hash, o.position, o.error,
  t.min_receive::text AS min_receive, o.amount_out::text AS amount_out, t.token_out`;
const OUTCOME_JOINS = 'LEFT JOIN transaction_outcomes o ON o.seq = t.seq LEFT JOIN blocks b ON b.number = o.block_number';
/** Block columns, read as `b`; ORDER BY must name `b.number`, not the text alias of the same name. */
const BLOCK_HEADER_COLUMNS = 'b.number::text AS number, b.hash, b.parent_hash, b.timestamp::text AS timestamp, b.transactions_count, b.transactions_root, b.native_price';
const STORED_BLOCK_COLUMNS = `${BLOCK_HEADER_COLUMNS}, b.total_transactions::text AS total_transactions, b.total_users::text AS total_users, b.transfer_volume_totals,
  b.swap_volume_usd::text AS swap_volume_usd`;
const IDEMPOTENCY_COLUMNS = 'caller, key, request_hash, tx_hash, timestamp::text AS timestamp';
/** "Before no position": above every seq the ledger will ever number. */
const SEQ_END = Number.MAX_SAFE_INTEGER;
/**
 * An account's transactions before a position, on one side: `from_id = account AND seq < before`,
 * written as a range of the side's index, (account, before) down to (account, -∞). The equality form
 * let the planner take the primary key backwards and filter by account when one account sends (or
 * receives) most of the ledger: the column's statistics then say "every row matches", so an account
 * with no transaction on that side read the whole table (19 ms a query alone, a p50 of 354 ms under
 * 64 connections, at 100k transactions of mints from one issuer). Only the side's own index orders
 * the range by (account, seq), so no plan, custom or generic, can take another path.
 */
const accountRange = (side: 'from_id' | 'to_id', account: string, before: string) => `(${side}, seq) < (${account}, ${before}) AND ${side} >= ${account}`;
/** Accounts whose newest transaction one read asks for at the most (a turn's history requests). */
const NEWEST_ACCOUNT_SEQ_KEYS_MAX = 500;
/** A group commit's rows ($1–$9, $11, $12), pending, numbered from the event sequences taken by a `counter` CTE. */
const INSERT_PENDING = `INSERT INTO transactions (tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, event_seq, min_receive, token_out)
       SELECT tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, counter.before + arrival, min_receive, token_out
       FROM counter CROSS JOIN unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $11::bigint[], $12::text[])
         WITH ORDINALITY AS t(tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, min_receive, token_out, arrival)
       ORDER BY arrival`;

/** The rows an `inserted` CTE returned, queued for the sealer (a pending transaction is one in the queue). */
const QUEUE_INSERTED = 'INSERT INTO pending_transactions (seq) SELECT seq FROM inserted ORDER BY seq RETURNING 1';

/**
 * The end of a sealing statement whose CTE `s` holds the outcomes (seq, position, error, amount_out)
 * into block $1: takes their rows off the pending queue and writes the outcomes of those it took;
 * its row is the count written. The outcome comes out of the DELETE's RETURNING (a column of its USING),
 * not from a join of the two CTEs: CTE scans have no statistics, and that join was planned as a nested
 * loop, quadratic in the block (10,000 swaps took 5–6 s to seal).
 */
const SEAL_OUTCOMES_OF_S = `dequeued AS (
         DELETE FROM pending_transactions p USING s WHERE p.seq = s.seq RETURNING p.seq, s.position, s.error, s.amount_out
       ),
       sealed AS (
         INSERT INTO transaction_outcomes (seq, block_number, position, error, amount_out)
         SELECT seq, $1, position, error, amount_out FROM dequeued ORDER BY seq RETURNING 1
       )
       SELECT COUNT(*)::int AS sealed FROM sealed`;

/**
 * A group commit's idempotency claims, when the group commit runs alone (appendAlone): parameters
 * $first to $first + 4 are the claims' callers, keys, request hashes, transaction hashes and timestamps.
 * Made only once the `counter` CTE has advanced (nothing is claimed when it does not), in key order as
 * SQL.claimIdempotency makes them; a plain INSERT, so a key already held fails the whole statement with
 * a unique violation on `idempotency_keys_pkey`, and nothing of it is written (isKeyHeld).
 */
function claimsAfterCounter(first: number): string {
  const [callers, keys, request_hashes, tx_hashes, timestamps] = [0, 1, 2, 3, 4].map((offset) => `$${first + offset}`);
  return `claimed AS (
         INSERT INTO idempotency_keys (caller, key, request_hash, tx_hash, timestamp, created_at)
         SELECT c.caller, c.key, c.request_hash, c.tx_hash, c.timestamp, c.timestamp
         FROM counter CROSS JOIN unnest(${callers}::text[], ${keys}::text[], ${request_hashes}::text[], ${tx_hashes}::text[], ${timestamps}::bigint[])
           WITH ORDINALITY AS c(caller, key, request_hash, tx_hash, timestamp, arrival)
         ORDER BY c.caller, c.key, c.arrival
         RETURNING 1
       ),`;
}

/**
 * A group commit's insert (INSERT_PENDING) after the counter is advanced, when `condition` holds of its
 * row; with the group's idempotency claims when `claims_first` numbers their parameters.
 */
function insertPendingWhere(condition: string, claims_first: number | null = null): string {
  return `WITH counter AS (
         UPDATE event_counter SET last_sequence = last_sequence + cardinality($1::text[]) WHERE id = 1 ${condition}
         RETURNING last_sequence - cardinality($1::text[]) AS before, pg_notify($10, last_sequence::text)
       ),
       ${claims_first === null ? '' : claimsAfterCounter(claims_first)}
       inserted AS (${INSERT_PENDING} RETURNING seq),
       queued AS (${QUEUE_INSERTED})
       SELECT (SELECT before FROM counter)::text AS before, (SELECT COUNT(*) FROM queued)::int AS inserted${claimedCount(claims_first)}`;
}

/**
 * The group commit when it debits (postgres-failure-budget.ts): as insertTransactions, but only if the
 * counter still reads $13, the sequence this instance's pending debits are exact at (nobody else has
 * written since), and the sealed balance of every account not within its floor ($14–$16, with what
 * it must cover: its pending debits with this group's; one primary-key seek each) covers it.
 * Otherwise nothing: the store judges under the lock. Returns the balances it read, in order; with the
 * group's idempotency claims ($17–$21) when `claiming`.
 */
function insertIfCoveredSql(claiming: boolean): string {
  return `WITH judged AS (
         SELECT k.ordinality, k.units AS required, COALESCE((SELECT b.units FROM balances b WHERE b.user_id = k.user_id AND b.token = k.token), 0) AS balance
         FROM unnest($14::text[], $15::text[], $16::numeric[]) WITH ORDINALITY AS k(user_id, token, units, ordinality)
       ),
       counter AS (
         UPDATE event_counter SET last_sequence = last_sequence + cardinality($1::text[]) WHERE id = 1 AND last_sequence = $13
           AND NOT EXISTS (SELECT 1 FROM judged WHERE balance < required)
         RETURNING last_sequence - cardinality($1::text[]) AS before, pg_notify($10, last_sequence::text)
       ),
       ${claiming ? claimsAfterCounter(17) : ''}
       inserted AS (${INSERT_PENDING} RETURNING seq),
       queued AS (${QUEUE_INSERTED})
       SELECT (SELECT before FROM counter)::text AS before, (SELECT COUNT(*) FROM queued)::int AS inserted,
         (SELECT COALESCE(array_agg(balance::text ORDER BY ordinality), '{}') FROM judged) AS balances${claimedCount(claiming ? 17 : null)}`;
}

/** The `claimed` column of a statement that claims (the number of keys it claimed). */
function claimedCount(claims_first: number | null): string {
  return claims_first === null ? '' : ', (SELECT COUNT(*) FROM claimed)::int AS claimed';
}

/** Every statement of the store, exported so that tests can check their query plans. */
export const SQL = {
  historyNodes: `SELECT h.level, h.idx, encode(h.hash, 'hex') AS hash FROM history_nodes h
       JOIN unnest($1::int[], $2::bigint[]) AS k(level, idx) ON h.level = k.level AND h.idx = k.idx`,
  historySize: 'SELECT COALESCE(MAX(idx) + 1, 0) AS size FROM history_nodes WHERE level = 0',
  insertHistoryNodes: `INSERT INTO history_nodes (level, idx, hash)
       SELECT level, idx, decode(hash, 'hex') FROM unnest($1::int[], $2::bigint[], $3::text[]) AS n(level, idx, hash)`,
  claimIdempotency: `INSERT INTO idempotency_keys (caller, key, request_hash, tx_hash, timestamp, created_at)
       SELECT caller, key, request_hash, tx_hash, timestamp, timestamp
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS c(caller, key, request_hash, tx_hash, timestamp, arrival)
       ORDER BY caller, key, arrival
       ON CONFLICT (caller, key) DO NOTHING RETURNING tx_hash`,
  findIdempotencies: `SELECT ${IDEMPOTENCY_COLUMNS} FROM idempotency_keys
       WHERE (caller, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
  findIdempotency: `SELECT ${IDEMPOTENCY_COLUMNS} FROM idempotency_keys WHERE caller = $1 AND key = $2`,
  countIdempotencyKeys: 'SELECT count(*)::int AS stored FROM idempotency_keys WHERE caller = $1 AND key = ANY($2::text[])',
  pruneIdempotency: 'DELETE FROM idempotency_keys WHERE created_at < $1',
  // One round trip for the group commit's rows and their event sequences: the counter is advanced by
  // the number of rows (locking it until commit, so sequences stay gap-free and in commit order) and the
  // rows take the sequences after it, in arrival order. Returns the sequence before them and how many
  // were inserted (none when the counter row is missing, which the caller asserts against). Its NOTIFY
  // is that of advanceEventCounter.
  insertTransactions: insertPendingWhere(''),
  // The group commit whose debits are all within their accounts' floors (postgres-failure-budget.ts):
  // as insertTransactions, but only if the counter still reads $13 (nobody else has written since the
  // sequence this instance's pending debits are exact at); otherwise nothing, and the store judges under
  // the lock. As simple as insertTransactions on purpose: insertIfCovered costs 0.1–0.2 ms more a call.
  insertIfUnchanged: insertPendingWhere('AND last_sequence = $13'),
  // The group commit when it debits: see insertIfCoveredSql.
  insertIfCovered: insertIfCoveredSql(false),
  // The three above with the group's idempotency claims, for a keyed group commit run alone (appendAlone).
  insertTransactionsClaiming: insertPendingWhere('', 13),
  insertIfUnchangedClaiming: insertPendingWhere('AND last_sequence = $13', 14),
  insertIfCoveredClaiming: insertIfCoveredSql(true),
  getTransaction: `SELECT ${TRANSACTION_COLUMNS} FROM transactions t ${OUTCOME_JOINS} WHERE t.tx_hash = $1`,
  // One step of the primary key, from its end.
  newestSeq: 'SELECT max(seq)::text AS seq FROM transactions',
  // For each (account, before) of the batch, numbered from 1 in its order: one step of each index,
  // newest first (accountRange); GREATEST ignores a side that has none.
  newestAccountSeqs: `SELECT k.arrival::int AS arrival, GREATEST(
         (SELECT seq FROM transactions WHERE ${accountRange('from_id', 'k.user_id', 'k.before_seq')} ORDER BY from_id DESC, seq DESC LIMIT 1),
         (SELECT seq FROM transactions WHERE ${accountRange('to_id', 'k.user_id', 'k.before_seq')} ORDER BY to_id DESC, seq DESC LIMIT 1))::text AS seq
       FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS k(user_id, before_seq, arrival)`,
  transactionsByHash: `SELECT ${TRANSACTION_COLUMNS} FROM transactions t ${OUTCOME_JOINS} WHERE t.tx_hash = ANY($1::text[])`,
  // Each side is a range of its index read newest first (accountRange), `limit` rows at
  // the most; the page is the newest `limit` of those (a sort of 2 × limit rows at the most). A
  // transaction that is both (a mint to its issuer) is taken from the `from` side only.
  // Sealed: it has an outcome (OUTCOME_STATUS_SQL).
  accountHistory: `SELECT t.seq::text AS seq, t.tx_hash, o.seq IS NOT NULL AS sealed FROM (
         (SELECT seq, tx_hash FROM transactions WHERE ${accountRange('from_id', '$1', '$2')} ORDER BY from_id DESC, seq DESC LIMIT $3)
         UNION ALL
         (SELECT seq, tx_hash FROM transactions WHERE ${accountRange('to_id', '$1', '$2')} AND from_id <> to_id ORDER BY to_id DESC, seq DESC LIMIT $3)
         ORDER BY seq DESC LIMIT $3
       ) AS t LEFT JOIN transaction_outcomes o ON o.seq = t.seq ORDER BY t.seq DESC`,
  // The queue's order is the sealer's; its rows have no outcome, so o and b join nothing.
  pendingTransactions: `SELECT ${TRANSACTION_COLUMNS} FROM pending_transactions p JOIN transactions t ON t.seq = p.seq ${OUTCOME_JOINS}
       ORDER BY p.seq LIMIT $1`,
  pendingCount: 'SELECT COUNT(*)::text AS count FROM pending_transactions',
  pendingCountUpTo: 'SELECT COUNT(*)::text AS count FROM (SELECT 1 FROM pending_transactions LIMIT $1) p',
  // Sealing writes each outcome and takes its row off the queue of pending ones, in one statement whose
  // row is the count of outcomes written: a row that is not queued (sealed already, or not a
  // transaction) gets no outcome. The schema's statement triggers check the pair at set level.
  sealTransactions: `WITH s AS (
         SELECT t.seq, s.position, s.error, s.amount_out
         FROM unnest($2::text[], $3::int[], $4::text[], $5::bigint[]) AS s(tx_hash, position, error, amount_out)
         JOIN transactions t ON t.tx_hash = s.tx_hash
       ),
       ${SEAL_OUTCOMES_OF_S}`,
  // The same by row number (the primary key) when the sealer read it; the hash is still checked. One
  // unnest, no join between unnests: a join on position between unnests (no statistics) was planned
  // as a nested loop, quadratic in the block — 10,000 swaps took seconds to seal.
  sealTransactionsBySeq: `WITH s AS (
         SELECT s.seq, s.position, s.error, s.amount_out FROM unnest($2::bigint[], $3::text[], $4::int[], $5::text[], $6::bigint[]) AS s(seq, tx_hash, position, error, amount_out)
         JOIN transactions t ON t.seq = s.seq AND t.tx_hash = s.tx_hash
       ),
       ${SEAL_OUTCOMES_OF_S}`,
  // Runs of confirmed outcomes on consecutive row numbers (most of a block) by their ranges, positions
  // from the row numbers, as in the SQLite store: no hash or position per row to send and match. Each
  // run's first and last rows must hold the hashes named, checked in the same statement (nothing is
  // written otherwise); rows are never deleted and never change (the schema's triggers), so the queued
  // rows between are the ones the sealer read.
  confirmRuns: `WITH ends AS (
         SELECT count(*) AS found FROM transactions e JOIN unnest($5::bigint[], $6::text[]) AS x(seq, tx_hash) ON e.seq = x.seq AND e.tx_hash = x.tx_hash),
       dequeued AS (
         DELETE FROM pending_transactions p USING unnest($2::bigint[], $3::bigint[], $4::bigint[]) AS r(first_seq, last_seq, seq_offset)
         WHERE p.seq BETWEEN r.first_seq AND r.last_seq AND (SELECT found FROM ends) = cardinality($5::bigint[])
         RETURNING p.seq, p.seq - r.seq_offset AS position
       ),
       sealed AS (INSERT INTO transaction_outcomes (seq, block_number, position) SELECT seq, $1, position FROM dequeued ORDER BY seq RETURNING 1)
       SELECT COUNT(*)::int AS sealed FROM sealed`,
  // ORDER BY names t.seq, not the text alias of the same name.
  pendingPostings: `SELECT t.seq::text AS seq, t.tx_hash, t.from_id, t.to_id, t.amount::text AS amount, t.token, t.type, t.timestamp::text AS timestamp,
         t.min_receive::text AS min_receive FROM pending_transactions p JOIN transactions t ON t.seq = p.seq ORDER BY p.seq LIMIT $1`,
  balancesOf: `SELECT user_id, token, units::text AS units FROM balances
       WHERE (user_id, token) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
  balancesOfUser: 'SELECT token, units::text AS units FROM balances WHERE user_id = $1',
  // One row with a null token when the user has no balance; the price is the newest block's (an index seek).
  pricedBalances: `SELECT (SELECT b.native_price FROM blocks b ORDER BY b.number DESC LIMIT 1) AS native_price, u.token, u.units::text AS units
       FROM (SELECT 1) AS one LEFT JOIN balances u ON u.user_id = $1`,
  putBalances: `INSERT INTO balances (user_id, token, units) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
       ON CONFLICT (user_id, token) DO UPDATE SET units = excluded.units`,
  knownUsers: 'SELECT user_id FROM accounts WHERE user_id = ANY($1::text[])',
  insertAccounts: 'INSERT INTO accounts (user_id) SELECT * FROM unnest($1::text[])',
  touchAccounts: 'UPDATE accounts SET last_transfer_at = $1 WHERE user_id = ANY($2::text[])',
  insertBlock: `INSERT INTO blocks (number, hash, parent_hash, timestamp, transactions_count, transactions_root,
         total_transactions, total_users, transfer_volume_totals, native_price, swap_volume_usd) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
  latestBlock: `SELECT ${STORED_BLOCK_COLUMNS} FROM blocks b ORDER BY b.number DESC LIMIT 1`,
  latestBlockNumber: 'SELECT max(number)::text AS number FROM blocks',
  blockAtOrBefore: `SELECT ${STORED_BLOCK_COLUMNS} FROM blocks b WHERE b.timestamp <= $1 ORDER BY b.timestamp DESC, b.number DESC LIMIT 1`,
  getBlock: `SELECT ${STORED_BLOCK_COLUMNS} FROM blocks b WHERE b.number = $1`,
  listBlocks: `SELECT ${BLOCK_HEADER_COLUMNS} FROM blocks b WHERE b.number <= $1 ORDER BY b.number DESC LIMIT $2`,
  blockTransactionHashes: 'SELECT t.tx_hash FROM transaction_outcomes o JOIN transactions t ON t.seq = o.seq WHERE o.block_number = $1 ORDER BY o.block_number, o.position',
  activeUsers: 'SELECT COUNT(*)::text AS count FROM accounts WHERE last_transfer_at > $1',
  getSetting: 'SELECT value FROM settings WHERE name = $1',
  claimSetting: 'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING',
  // Taken last in a write transaction: the row lock orders writers until they commit, and the
  // notification reaches every listening instance at that commit.
  advanceEventCounter: `UPDATE event_counter SET last_sequence = last_sequence + $1 WHERE id = 1
       RETURNING (last_sequence - $1)::text AS before, pg_notify($2, last_sequence::text)`,
  eventHead: 'SELECT last_sequence::text AS last_sequence FROM event_counter WHERE id = 1',
  insertBlockEvents: 'INSERT INTO block_events (number, first_sequence) VALUES ($1, $2)',
  acceptedEvents: `SELECT t.event_seq::text AS event_seq, ${TRANSACTION_COLUMNS} FROM transactions t ${OUTCOME_JOINS}
       WHERE t.event_seq > $1 ORDER BY t.event_seq LIMIT $2`,
  blockEventsAtOrBefore: 'SELECT number::text AS number FROM block_events WHERE first_sequence <= $1 ORDER BY first_sequence DESC LIMIT 1',
  blockEventsFrom: `SELECT e.first_sequence::text AS first_sequence, ${BLOCK_HEADER_COLUMNS} FROM block_events e JOIN blocks b ON b.number = e.number
       WHERE e.number >= $1 ORDER BY e.number LIMIT $2`,
  // A row-value bound: the index seek starts at the cursor. (With 'block >= $1 AND (block > $1 OR
  // position > $3)' the generic plan read every row of the first block and filtered them, 0.9 ms a
  // read on a block of 8,000, and the hub reads after every group commit.)
  sealedEventTransactions: `SELECT ${TRANSACTION_COLUMNS} FROM transaction_outcomes o JOIN transactions t ON t.seq = o.seq
       LEFT JOIN blocks b ON b.number = o.block_number
       WHERE (o.block_number, o.position) > ($1, $3) AND o.block_number <= $2
       ORDER BY o.block_number, o.position LIMIT $4`,
  insertBalanceRoot: 'INSERT INTO balance_roots (number, root) VALUES ($1, $2)',
  claimBalanceRoot: 'INSERT INTO balance_roots (number, root) VALUES ($1, $2) ON CONFLICT (number) DO NOTHING',
  balanceRoot: 'SELECT root FROM balance_roots WHERE number = $1',
  allBalances: 'SELECT user_id, token, units::text AS units FROM balances WHERE units > 0',
  // The pairs the blocks after one named (an index range of transaction_outcomes_by_block), with their
  // stored balance; a swap also moves the pool's reserve of the token it pays out.
  balancesTouchedSince: `WITH sealed AS (
         SELECT t.from_id, t.to_id, t.token, t.token_out FROM transaction_outcomes o JOIN transactions t ON t.seq = o.seq WHERE o.block_number > $1
       )
       SELECT b.user_id, b.token, b.units::text AS units FROM (
         SELECT from_id AS user_id, token FROM sealed
         UNION SELECT to_id, token FROM sealed
         UNION SELECT to_id, token_out FROM sealed WHERE token_out IS NOT NULL
         UNION SELECT ${POOL_ACCOUNT_SQL}, token_out FROM sealed WHERE token_out IS NOT NULL
       ) AS touched JOIN balances b ON b.user_id = touched.user_id AND b.token = touched.token`,
  putCandles: `INSERT INTO price_candles (interval, start, open, high, low, close, volume_usd)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::numeric[], $4::numeric[], $5::numeric[], $6::numeric[], $7::numeric[])
       ON CONFLICT (interval, start) DO UPDATE SET high = excluded.high, low = excluded.low, close = excluded.close, volume_usd = excluded.volume_usd`,
  candlesAt: `SELECT interval, start::text AS start, open::text AS open, high::text AS high, low::text AS low, close::text AS close,
         volume_usd::text AS volume_usd FROM price_candles WHERE (interval, start) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
  // The newest `limit` of one interval, read backwards along the primary key, then put oldest first.
  candles: `SELECT * FROM (SELECT interval, start::text AS start, open::text AS open, high::text AS high, low::text AS low,
         close::text AS close, volume_usd::text AS volume_usd FROM price_candles WHERE interval = $1 ORDER BY start DESC LIMIT $2) c ORDER BY start`,
  ping: 'SELECT 1',
} as const;

type StatementName = keyof typeof SQL;
type Queryable = pg.Pool | pg.PoolClient;

export class PostgresStore implements LedgerStore {
  private readonly pool: pg.Pool;
  /** Where writers announce new events (see eventChannel). */
  private readonly event_channel: string;
  private readonly health: StorageHealthReporter | null;
  /** What each sender has pending, as this instance knows it (postgres-failure-budget.ts). */
  private readonly pending_debits = new SequencedPendingDebits();
  /** This instance's block being written, settled (never rejected) once it is and its change reported. */
  private block_in_flight: Promise<void> | null = null;
  /** See appendedEventHead. */
  private appended_head = 0;
  private closed = false;
  /** The newest block's number: one read per event-loop turn however many requests ask (../coalesced-read.ts). */
  /** Every history request asks for its account's newest transaction: one round trip per event-loop turn answers them all. */
  private readonly newest_account_seqs = new BatchedRead<{ user_id: string; before_seq: number }, number | null>(async (keys) => {
    const rows = (await run<{ arrival: number; seq: string | null }>(this.pool, 'newestAccountSeqs', [keys.map((key) => key.user_id), keys.map((key) => key.before_seq)])).rows;
    const seqs = new Array<number | null>(keys.length).fill(null);
    for (const row of rows) seqs[row.arrival - 1] = row.seq === null ? null : Number(row.seq);
    return seqs;
  }, NEWEST_ACCOUNT_SEQ_KEYS_MAX);

  /** Every history request asks first whether any transaction was stored since: one read per event-loop turn. */
  private readonly newest_seq = new CoalescedRead(async () => {
    const row = (await run<{ seq: string | null }>(this.pool, 'newestSeq', [])).rows[0];
    return row?.seq == null ? null : Number(row.seq);
  });

  private readonly latest_block_number = new CoalescedRead(async () => {
    const row = (await run<{ number: string | null }>(this.pool, 'latestBlockNumber', [])).rows[0];
    return row?.number == null ? null : Number(row.number);
  });

  private constructor(pool: pg.Pool, event_channel: string, health: StorageHealthReporter | null) {
    this.pool = pool;
    this.event_channel = event_channel;
    this.health = health;
  }

  /** Connects, applies the migrations this database lacks (safe when instances start together), and returns the store. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const pool = new pg.Pool({ ...connectionSettings(options), max: options.pool_size_max ?? POOL_SIZE_MAX_DEFAULT });
    // An idle connection that breaks (a restart, a network cut) must not crash the process; the pool replaces it.
    pool.on('error', (error) => options.logger?.warn({ err: error }, 'an idle PostgreSQL connection failed'));
    // A connection that breaks may emit 'error' more than once, also while checked out or inside
    // pool.query (which listens once): every client keeps a listener for good, so a broken connection
    // fails its queries (storage_unavailable) and never crashes the process.
    pool.on('connect', (client) => {
      client.on('error', (error) => options.logger?.debug({ err: error }, 'a PostgreSQL connection failed'));
    });
    try {
      await migrate(pool, options.schema);
    } catch (error) {
      await pool.end();
      if (!isPostgresStorageFault(error)) throw error;
      const where = new URL(options.url);
      const code = (error as { code?: unknown }).code;
      throw new StorageOpenError(
        `cannot reach PostgreSQL at ${where.hostname}:${where.port || '5432'} (${typeof code === 'string' ? code : String(error)}): `
        + 'check DATABASE_URL and that the server is up; the service does not start without its database',
        { cause: error },
      );
    }
    return new PostgresStore(pool, eventChannel(options.schema), options.health ?? null);
  }

  async appendPending(batch: readonly PendingAppend[]): Promise<AppendResult[]> {
    if (batch.length === 0) return [];
    const figure = { pending: this.pending_debits, ownBlock: () => this.block_in_flight };
    const claims = distinctClaims(batch);
    const alone = claims === null ? 'key held' : await this.writeStatements('store submissions', (pool) => appendAlone(pool, batch, claims, figure, this.event_channel));
    const { results, delta } = typeof alone === 'object'
      ? alone
      : await this.write('store submissions', (client) => appendBatch(client, batch, figure, this.event_channel, { covered_tried: alone === 'not covered' }));
    if (delta !== null) {
      this.pending_debits.committed(delta);
      this.appended_head = Math.max(this.appended_head, delta.after);
    }
    return results;
  }

  appendedEventHead(): number {
    return this.appended_head;
  }

  async findIdempotency(caller: string, key: string): Promise<IdempotencyRecord | null> {
    const row = (await run<IdempotencyRow>(this.pool, 'findIdempotency', [caller, key])).rows[0];
    return row === undefined ? null : toIdempotencyRecord(row);
  }

  async countIdempotencyKeys(caller: string, keys: readonly string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return (await run<{ stored: number }>(this.pool, 'countIdempotencyKeys', [caller, keys])).rows[0]?.stored ?? 0;
  }

  async pruneIdempotency(before_s: number): Promise<number> {
    return (await run(this.pool, 'pruneIdempotency', [before_s])).rowCount ?? 0;
  }

  async getTransaction(tx_hash: string): Promise<Transaction | null> {
    const row = (await run<TransactionRow>(this.pool, 'getTransaction', [tx_hash])).rows[0];
    return row === undefined ? null : toTransaction(row);
  }

  async accountHistory(user_id: string, before_seq: number | null, limit: number): Promise<HistoryEntry[]> {
    const rows = (await run<{ seq: string; tx_hash: string; sealed: boolean }>(this.pool, 'accountHistory', [user_id, before_seq ?? SEQ_END, limit])).rows;
    return rows.map((row) => ({ seq: Number(row.seq), tx_hash: row.tx_hash, sealed: row.sealed }));
  }

  newestAccountSeq(user_id: string, before_seq: number | null): Promise<number | null> {
    return this.newest_account_seqs.get({ user_id, before_seq: before_seq ?? SEQ_END });
  }

  newestSeq(): Promise<number | null> {
    return this.newest_seq.get();
  }

  async transactionsByHash(tx_hashes: readonly string[]): Promise<Transaction[]> {
    assert(tx_hashes.length <= TRANSACTIONS_BY_HASH_MAX, 'a look-up by hash is bounded');
    if (tx_hashes.length === 0) return [];
    return (await run<TransactionRow>(this.pool, 'transactionsByHash', [tx_hashes])).rows.map(toTransaction);
  }

  async latestBlock(): Promise<StoredBlockHeader | null> {
    const row = (await run<BlockRow>(this.pool, 'latestBlock', [])).rows[0];
    return row === undefined ? null : toStoredHeader(row);
  }

  latestBlockNumber(): Promise<number | null> {
    return this.latest_block_number.get();
  }

  async pendingTransactions(limit: number): Promise<Transaction[]> {
    return (await run<TransactionRow>(this.pool, 'pendingTransactions', [limit])).rows.map(toTransaction);
  }

  /** Rows as arrays, converted in one loop: see SQL.pendingPostings. */
  async pendingPostings(limit: number): Promise<PendingPosting[]> {
    const rows = (await run<string[]>(this.pool, 'pendingPostings', [limit], 'array')).rows as unknown as string[][];
    const postings: PendingPosting[] = new Array(rows.length);
    for (let index = 0; index < rows.length; index += 1) {
      const [seq, tx_hash, from, to, amount, token, type, timestamp, min_receive] = rows[index] as Array<string | null>;
      postings[index] = {
        seq: Number(seq), tx_hash: tx_hash as string, from: from as string, to: to as string, amount_units: BigInt(amount as string),
        token: token as string, type: type as TransactionType, timestamp: Number(timestamp),
        min_receive_units: min_receive == null ? null : BigInt(min_receive),
      };
    }
    return postings;
  }

  async pendingCount(): Promise<number> {
    return Number((await run<{ count: string }>(this.pool, 'pendingCount', [])).rows[0]?.count ?? 0);
  }

  async pendingCountUpTo(limit: number): Promise<number> {
    return Number((await run<{ count: string }>(this.pool, 'pendingCountUpTo', [limit])).rows[0]?.count ?? 0);
  }

  async balancesOf(keys: ReadonlyArray<{ user_id: string; token: string }>): Promise<BalanceChange[]> {
    return readBalancesOf(this.pool, keys);
  }

  async knownUsers(user_ids: readonly string[]): Promise<Set<string>> {
    if (user_ids.length === 0) return new Set();
    const rows = (await run<{ user_id: string }>(this.pool, 'knownUsers', [user_ids])).rows;
    return new Set(rows.map((row) => row.user_id));
  }

  async commitBlock(commit: BlockCommit): Promise<void> {
    const written = this.write('seal a block', (client) => writeBlock(client, commit, this.event_channel))
      .then((delta) => this.pending_debits.committed(delta));
    const settled = written.then(() => undefined, () => undefined);
    this.block_in_flight = settled;
    try {
      await written;
    } finally {
      if (this.block_in_flight === settled) this.block_in_flight = null;
    }
  }

  async candlesAt(keys: ReadonlyArray<{ interval: CandleInterval; start: number }>): Promise<Candle[]> {
    if (keys.length === 0) return [];
    const rows = (await run<CandleRow>(this.pool, 'candlesAt', [keys.map((key) => key.interval), keys.map((key) => key.start)])).rows;
    return rows.map(toCandle);
  }

  async candles(interval: CandleInterval, limit: number): Promise<Candle[]> {
    return (await run<CandleRow>(this.pool, 'candles', [interval, limit])).rows.map(toCandle);
  }

  async historyNodes(keys: readonly NodeKey[]): Promise<HistoryNode[]> {
    return readHistoryNodes(this.pool, keys);
  }

  async historySize(): Promise<number> {
    return Number((await run<{ size: string }>(this.pool, 'historySize', [])).rows[0]?.size ?? 0);
  }

  async appendHistory(leaves: ReadonlyArray<HistoryLeaf>): Promise<void> {
    await this.write('fill in the history tree', async (client) => {
      // Instances starting together fill in the same nodes: the first one wins, the others skip.
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [LOCK_CLASS.history]);
      const size = Number((await run<{ size: string }>(client, 'historySize', [])).rows[0]?.size ?? 0);
      for (const leaf of leaves) if (leaf.number >= size) await writeHistory(client, leaf);
    });
  }

  async readEvents(after: number, limit: number): Promise<StoredEvent[]> {
    // One snapshot for the four reads: writers commit in sequence order, so it holds a prefix of the log.
    const client = await this.pool.connect().catch((error: unknown) => {
      throw translateFault('read events', null, isPostgresStorageFault, error);
    });
    let broken = false;
    const unwatch = watchCheckedOut(client, () => {
      broken = true;
    });
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const accepted = (await run<TransactionRow & { event_seq: string }>(client, 'acceptedEvents', [after, limit])).rows;
      const start = (await run<{ number: string }>(client, 'blockEventsAtOrBefore', [after])).rows[0];
      const blocks = (await run<BlockRow & { first_sequence: string }>(client, 'blockEventsFrom', [start?.number ?? 0, limit + 1])).rows;
      const first = blocks[0];
      const last = blocks.at(-1);
      const sealed = first === undefined || last === undefined
        ? []
        : (await run<TransactionRow>(client, 'sealedEventTransactions', [first.number, last.number, after - Number(first.first_sequence), limit])).rows;
      await client.query('COMMIT');
      return collectEvents({
        accepted: accepted.map((row) => ({ sequence: Number(row.event_seq), transaction: toTransaction(row) })),
        blocks: blocks.map((row) => ({ first_sequence: Number(row.first_sequence), header: toHeader(row) })),
        sealed: sealed.map(toTransaction),
      }, after, limit);
    } catch (error) {
      broken = true;
      throw translateFault('read events', null, isPostgresStorageFault, error);
    } finally {
      unwatch();
      client.release(broken);
    }
  }

  async eventHead(): Promise<number> {
    return Number((await run<{ last_sequence: string }>(this.pool, 'eventHead', [])).rows[0]?.last_sequence ?? 0);
  }

  async balances(user_id: string): Promise<Map<string, bigint>> {
    const rows = (await run<{ token: string; units: string }>(this.pool, 'balancesOfUser', [user_id])).rows;
    return new Map(rows.map((row) => [row.token, BigInt(row.units)]));
  }

  async pricedBalances(user_id: string): Promise<PricedBalances> {
    const rows = (await run<{ native_price: string | null; token: string | null; units: string | null }>(this.pool, 'pricedBalances', [user_id])).rows;
    const balances = new Map<string, bigint>();
    for (const row of rows) if (row.token !== null && row.units !== null) balances.set(row.token, BigInt(row.units));
    return { balances, native_price: rows[0]?.native_price ?? null };
  }

  async balanceState(): Promise<BalanceSnapshot | null> {
    return this.readSnapshot('read the balance state', async (client) => {
      const latest = (await run<{ number: string | null }>(client, 'latestBlockNumber', [])).rows[0];
      if (latest?.number == null) return null;
      const rows = (await run<{ user_id: string; token: string; units: string }>(client, 'allBalances', [])).rows;
      return { block_number: Number(latest.number), balances: rows.map(toBalanceChange) };
    });
  }

  async balanceChangesSince(after_block: number): Promise<BalanceSnapshot> {
    return this.readSnapshot('read balance changes', async (client) => {
      const latest = (await run<{ number: string | null }>(client, 'latestBlockNumber', [])).rows[0];
      const rows = (await run<{ user_id: string; token: string; units: string }>(client, 'balancesTouchedSince', [after_block])).rows;
      return { block_number: latest?.number == null ? -1 : Number(latest.number), balances: rows.map(toBalanceChange) };
    });
  }

  async balanceRoot(block_number: number): Promise<string | null> {
    return (await run<{ root: string }>(this.pool, 'balanceRoot', [block_number])).rows[0]?.root ?? null;
  }

  async claimBalanceRoot(block_number: number, root: string): Promise<string> {
    await run(this.pool, 'claimBalanceRoot', [block_number, root]);
    const stored = await this.balanceRoot(block_number);
    assert(stored !== null, `the balance root of block ${block_number} was claimed but cannot be read back`);
    return stored;
  }

  /** Runs `work` in one read-only REPEATABLE READ transaction: every read sees one snapshot. */
  private async readSnapshot<T>(operation: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw translateFault(operation, null, isPostgresStorageFault, error);
    });
    let broken = false;
    const unwatch = watchCheckedOut(client, () => {
      broken = true;
    });
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      broken = true;
      throw translateFault(operation, null, isPostgresStorageFault, error);
    } finally {
      unwatch();
      client.release(broken);
    }
  }

  async getBlock(number: number): Promise<Block | null> {
    const row = (await run<BlockRow>(this.pool, 'getBlock', [number])).rows[0];
    if (row === undefined) return null;
    return { ...toHeader(row), transactions: await this.blockTransactionHashes(number) };
  }

  async listBlocks(from_number: number, limit: number): Promise<BlockHeader[]> {
    return (await run<BlockRow>(this.pool, 'listBlocks', [from_number, limit])).rows.map(toHeader);
  }

  async blockTransactionHashes(number: number): Promise<string[]> {
    return (await run<{ tx_hash: string }>(this.pool, 'blockTransactionHashes', [number])).rows.map((row) => row.tx_hash);
  }

  async statsSnapshot(window_start_s: number): Promise<StatsSnapshot | null> {
    const [latest, window_start, active] = await Promise.all([
      run<BlockRow>(this.pool, 'latestBlock', []),
      run<BlockRow>(this.pool, 'blockAtOrBefore', [window_start_s]),
      run<{ count: string }>(this.pool, 'activeUsers', [window_start_s]),
    ]);
    const latest_row = latest.rows[0];
    if (latest_row === undefined) return null;
    const window_row = window_start.rows[0];
    return {
      latest: toStoredHeader(latest_row),
      window_start: window_row === undefined ? null : toStoredHeader(window_row),
      active_users_24h: Number(active.rows[0]?.count ?? 0),
    };
  }

  async getSetting(name: string): Promise<string | null> {
    return (await run<{ value: string }>(this.pool, 'getSetting', [name])).rows[0]?.value ?? null;
  }

  async claimSetting(name: string, value: string): Promise<string> {
    await run(this.pool, 'claimSetting', [name, value]);
    const stored = await this.getSetting(name);
    assert(stored !== null, `setting ${name} was claimed but cannot be read back`);
    return stored;
  }

  async ping(): Promise<void> {
    await run(this.pool, 'ping', []);
  }

  /** The webhook tables, on this store's pool. */
  webhooks(): PostgresWebhookStore {
    return new PostgresWebhookStore(this.pool);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  /**
   * Runs `work` in one transaction on one connection; retries it when it lost a deadlock or
   * serialization race. A storage fault becomes StorageUnavailableError (see storage-faults.ts).
   */
  private write<T>(operation: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.withRetries(operation, () => inTransaction(this.pool, work));
  }

  /**
   * As `write`, for work each of whose statements is a transaction of its own (run on the pool, without
   * BEGIN and COMMIT: two round trips fewer) and writes either everything the work must or nothing.
   */
  private writeStatements<T>(operation: string, work: (pool: pg.Pool) => Promise<T>): Promise<T> {
    return this.withRetries(operation, () => work(this.pool));
  }

  private withRetries<T>(operation: string, attempt_once: () => Promise<T>): Promise<T> {
    return guardWrite(operation, this.health, isPostgresStorageFault, async () => {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await attempt_once();
        } catch (error) {
          if (attempt >= WRITE_ATTEMPTS_MAX || !RETRYABLE_SQLSTATES.has((error as { code?: string }).code ?? '')) throw error;
        }
      }
    });
  }
}

/**
 * A checked-out client whose connection breaks emits 'error' on itself (the pool listens only to idle
 * ones): without a listener that would crash the process. The failed query rejects anyway; the
 * listener only marks the connection broken so that it is not given back to the pool.
 */
/**
 * The sealer's statements, which on a block of 100,000 transactions take seconds: they get the
 * server's statement timeout as their deadline rather than DATABASE_QUERY_TIMEOUT_MS. A partitioned
 * sealer learns sooner from its lease that it must stop (see postgres-sealer-lease.ts).
 */
const SEALER_STATEMENTS: ReadonlySet<StatementName> = new Set<StatementName>([
  'pendingTransactions', 'pendingPostings', 'sealTransactionsBySeq', 'confirmRuns', 'balancesOf', 'knownUsers', 'insertBlock', 'sealTransactions', 'putBalances', 'insertAccounts', 'touchAccounts', 'insertBlockEvents',
  'historyNodes', 'insertHistoryNodes', 'putCandles',
  'insertBalanceRoot', 'allBalances', 'balancesTouchedSince',
]);

/** One named statement; a storage fault (the server gone, a full disk) becomes StorageUnavailableError. */
async function run<Row extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Queryable, name: StatementName, values: unknown[], row_mode?: 'array',
): Promise<pg.QueryResult<Row>> {
  try {
    const query_timeout = SEALER_STATEMENTS.has(name) ? STATEMENT_TIMEOUT_MS : undefined;
    return await db.query<Row>({
      name: `tabula_${name}`, text: SQL[name], values, ...(query_timeout === undefined ? {} : { query_timeout }), ...(row_mode === undefined ? {} : { rowMode: row_mode }),
    });
  } catch (error) {
    throw translateFault(name, null, isPostgresStorageFault, error);
  }
}

/** The failure budget's statements (postgres-failure-budget.ts), run on `client` like the store's own. */
function runIn(client: pg.PoolClient) {
  return async <Row extends pg.QueryResultRow = pg.QueryResultRow>(name: FailureBudgetStatement, values: unknown[]): Promise<pg.QueryResult<Row>> => {
    try {
      // The sealer's read of its block's debits gets the sealer's deadline (see SEALER_STATEMENTS).
      const query_timeout = name === 'blockDebits' ? STATEMENT_TIMEOUT_MS : undefined;
      return await client.query<Row>({ name: `tabula_budget_${name}`, text: FAILURE_BUDGET_SQL[name], values, ...(query_timeout === undefined ? {} : { query_timeout }) });
    } catch (error) {
      throw translateFault(name, null, isPostgresStorageFault, error);
    }
  };
}

/**
 * Claims the batch's idempotency keys (in key order; the earliest arrival wins a key that the batch
 * holds twice), reads the records that earlier submissions hold, and inserts the transactions of the
 * claims that won, in arrival order. With keys, the event counter is locked first, as a group commit's
 * one statement (appendAlone) takes it before its keys: every writer of keys then waits on the counter
 * before any key, so two instances racing for one key never deadlock.
 */
async function appendBatch(
  client: pg.PoolClient, batch: readonly PendingAppend[], figure: InstanceFigure, event_channel: string, { covered_tried }: { covered_tried: boolean },
): Promise<{ results: AppendResult[]; delta: PendingDelta | null }> {
  const claims = claimsOf(batch);
  const won = new Set<string>();
  const holders = new Map<string, IdempotencyRecord>();
  if (claims.length > 0) {
    await runIn(client)('lockEventCounter', []);
    const inserted = await run<{ tx_hash: string }>(client, 'claimIdempotency', claimParameters(claims));
    for (const row of inserted.rows) won.add(row.tx_hash);
    const lost = claims.filter((claim) => !won.has(claim.tx_hash));
    if (lost.length > 0) {
      const found = await run<IdempotencyRow>(client, 'findIdempotencies', [lost.map((claim) => claim.caller), lost.map((claim) => claim.key)]);
      for (const row of found.rows) holders.set(idempotencyId(row.caller, row.key), toIdempotencyRecord(row));
    }
  }
  const candidates = batch.filter((item) => item.idempotency === null || won.has(item.transaction.tx_hash));
  const { refusals, delta } = await insertCandidates(client, candidates, figure, event_channel, covered_tried);
  const refused_hashes = new Map([...refusals].map(([item, retry_after_s]) => [item.transaction.tx_hash, retry_after_s]));
  const results: AppendResult[] = [];
  for (const item of batch) {
    const retry_after_s = refusals.get(item);
    if (retry_after_s !== undefined) {
      results.push({ kind: 'refused', retry_after_s });
      continue;
    }
    if (item.idempotency === null || won.has(item.transaction.tx_hash)) {
      results.push({ kind: 'stored' });
      continue;
    }
    const record = holders.get(idempotencyId(item.idempotency.caller, item.idempotency.key));
    assert(record !== undefined, `idempotency key of ${item.transaction.tx_hash} was neither claimed nor found`);
    // The key's holder in this very batch was refused (and its claim released): so is its repeat.
    const holder_retry_after_s = refused_hashes.get(record.tx_hash);
    results.push(holder_retry_after_s === undefined ? { kind: 'replay', record } : { kind: 'refused', retry_after_s: holder_retry_after_s });
  }
  return { results, delta };
}

/**
 * The common group commit, alone: every debit covered by what the figure knows while nobody else wrote
 * since, and every idempotency key new. Then it is one statement (insertTransactions, insertIfUnchanged
 * or insertIfCovered, with the group's claims when it has keys), which PostgreSQL runs as a transaction
 * of its own, durable when it answers (`synchronous_commit`), so it needs no BEGIN and COMMIT: a group
 * commit is one round trip instead of three (four with keys). Having written nothing, it answers
 * 'not covered' when the batch must be judged under the counter's lock, and 'key held' when a key was
 * claimed before (a repeat, or a claim racing another instance's): appendBatch then reads its holder.
 */
async function appendAlone(
  pool: pg.Pool, batch: readonly PendingAppend[], claims: readonly Claim[], figure: InstanceFigure, event_channel: string,
): Promise<{ results: AppendResult[]; delta: PendingDelta } | 'not covered' | 'key held'> {
  const sums = debitSums(batch);
  try {
    const delta = sums.length === 0
      ? pendingDelta(await insertTransactions(pool, batch, event_channel, claims), batch.length, [])
      : await insertIfCovered(pool, batch, sums, figure, event_channel, claims);
    if (delta === null) return 'not covered';
    return { results: batch.map((): AppendResult => ({ kind: 'stored' })), delta };
  } catch (error) {
    if (claims.length > 0 && isKeyHeld(error)) return 'key held';
    throw error;
  }
}

/** An idempotency claim of a group commit: the item's key and the transaction it stores under it. */
type Claim = { caller: string; key: string; request_hash: string; tx_hash: string; timestamp: number };

/** The group's idempotency claims, in arrival order. */
function claimsOf(batch: readonly PendingAppend[]): Claim[] {
  return batch.flatMap((item) => (item.idempotency === null ? [] : [{ ...item.idempotency, tx_hash: item.transaction.tx_hash, timestamp: item.transaction.timestamp }]));
}

/** The group's claims (claimsOf); null when the group holds a key twice (the earliest arrival wins it: appendBatch's to decide). */
function distinctClaims(batch: readonly PendingAppend[]): Claim[] | null {
  const claims = claimsOf(batch);
  const ids = new Set(claims.map((claim) => idempotencyId(claim.caller, claim.key)));
  return ids.size === claims.length ? claims : null;
}

/**
 * The parameters of claims, in SQL.claimIdempotency's order, which a `…Claiming` statement
 * (claimsAfterCounter) takes after its own; none without claims.
 */
function claimParameters(claims: readonly Claim[]): unknown[] {
  if (claims.length === 0) return [];
  return [
    claims.map((claim) => claim.caller), claims.map((claim) => claim.key), claims.map((claim) => claim.request_hash),
    claims.map((claim) => claim.tx_hash), claims.map((claim) => claim.timestamp),
  ];
}

/** Whether `error` is a claim's statement failing on a key already held (SQLSTATE 23505 on the keys' primary key). */
function isKeyHeld(error: unknown): boolean {
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return code === '23505' && constraint === 'idempotency_keys_pkey';
}

/**
 * Inserts `candidates` (in arrival order) but those the failure budget refuses; returns the refusals
 * and the change of what is pending that the insert makes once committed. When every debit is covered
 * and nobody else wrote since `figure`'s sequence (the common case) that is one statement, unless
 * `covered_tried` says appendAlone tried it already; otherwise the items are judged with the event
 * counter locked (postgres-failure-budget.ts) and the rest inserted.
 */
async function insertCandidates(
  client: pg.PoolClient, candidates: readonly PendingAppend[], figure: InstanceFigure, event_channel: string, covered_tried: boolean,
): Promise<{ refusals: Map<PendingAppend, number>; delta: PendingDelta | null }> {
  if (candidates.length === 0) return { refusals: new Map(), delta: null };
  const sums = debitSums(candidates);
  if (sums.length === 0) {
    const before = await insertTransactions(client, candidates, event_channel, []);
    return { refusals: new Map(), delta: pendingDelta(before, candidates.length, []) };
  }
  const delta = covered_tried ? null : await insertIfCovered(client, candidates, sums, figure, event_channel, []);
  if (delta !== null) return { refusals: new Map(), delta };
  const { refusals, head } = await judgeLocked(runIn(client), (keys) => readBalancesOf(client, keys), figure.pending, candidates);
  const stored = candidates.filter((item) => !refusals.has(item));
  if (stored.length === 0) return { refusals, delta: null };
  const before = await insertTransactions(client, stored, event_channel, []);
  assert(before === head, 'no writer takes event sequences while the counter is locked');
  return { refusals, delta: pendingDelta(before, stored.length, debitSums(stored)) };
}

/** What an instance knows of pending debits (postgres-failure-budget.ts), and its own block being written, if any. */
type InstanceFigure = { pending: SequencedPendingDebits; ownBlock(): Promise<void> | null };

/**
 * A group commit whose debits are covered by what the figure knows, when nobody else wrote since: its
 * rows inserted in one statement, and the change they make; null (nothing written) otherwise. Tried
 * again once if the figure moved meanwhile, which it does when the writer that moved the counter was
 * this instance's own block: its report is waited for (briefly) rather than the block read back under
 * the lock. With `claims`, the group's idempotency keys are claimed in the same statement.
 */
async function insertIfCovered(
  client: Queryable, candidates: readonly PendingAppend[], sums: readonly DebitSum[], figure: InstanceFigure, event_channel: string,
  claims: readonly Claim[],
): Promise<PendingDelta | null> {
  const claiming = claims.length > 0;
  for (let attempt = 1; attempt <= COVERED_INSERT_ATTEMPTS_MAX; attempt += 1) {
    const coverage = coverageOf(figure.pending, sums);
    if (coverage === null) return null;
    const row = coverage.sought.length === 0
      ? (await run<CoveredRow>(client, claiming ? 'insertIfUnchangedClaiming' : 'insertIfUnchanged', [
        ...insertParameters(candidates, event_channel), coverage.known_sequence, ...claimParameters(claims),
      ])).rows[0]
      : (await run<CoveredRow>(client, claiming ? 'insertIfCoveredClaiming' : 'insertIfCovered', [
        ...insertParameters(candidates, event_channel), ...coverageParameters(coverage), ...claimParameters(claims),
      ])).rows[0];
    assert(row !== undefined, 'an insert of a group commit answers one row');
    assertClaimed(row, claims);
    if (row.inserted === candidates.length) {
      if (coverage.sought.length > 0) keepFloors(figure.pending, coverage, row.balances);
      return pendingDelta(Number(row.before), candidates.length, sums);
    }
    assert(row.inserted === 0, 'a group commit inserts all its transactions or, when it must be judged, none');
    if (!(await figureMoved(figure, coverage.known_sequence))) return null;
  }
  return null;
}

/** Whether the figure has moved past `sequence`, waiting up to OWN_BLOCK_WAIT_MS for this instance's block in flight to be reported. */
async function figureMoved(figure: InstanceFigure, sequence: number): Promise<boolean> {
  if (figure.pending.known_sequence !== sequence) return true;
  const own_block = figure.ownBlock();
  if (own_block === null) return false;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([own_block, new Promise<void>((resolve) => { timer = setTimeout(resolve, OWN_BLOCK_WAIT_MS); })]);
  clearTimeout(timer);
  return figure.pending.known_sequence !== sequence;
}

/**
 * How long a group commit that found the counter moved waits for this instance's own block to be
 * reported: a block that moved the counter is past its last statements, so a few milliseconds; one
 * still sealing was not the writer, and the group takes the locked path.
 */
const OWN_BLOCK_WAIT_MS = 50;
const COVERED_INSERT_ATTEMPTS_MAX = 2;

/** An insert's row; `claimed` only from a statement that claims (the keys it claimed: all, or none when it inserted none). */
type InsertedRow = { before: string | null; inserted: number; claimed?: number };
/** insertIfCovered's row: also the balances it read, one per sought account. */
type CoveredRow = InsertedRow & { balances: string[] };

/** What a group commit of `count` transactions, whose debits are `debits`, that took the event sequences after `before` adds to what is pending. */
function pendingDelta(before: number, count: number, debits: readonly DebitSum[]): PendingDelta {
  return { before, after: before + count, changes: debits };
}

/** Inserts `items` as one group commit, claiming `claims` with them; returns the event sequence before them. */
async function insertTransactions(client: Queryable, items: readonly PendingAppend[], event_channel: string, claims: readonly Claim[]): Promise<number> {
  const row = claims.length === 0
    ? (await run<InsertedRow>(client, 'insertTransactions', insertParameters(items, event_channel))).rows[0]
    : (await run<InsertedRow>(client, 'insertTransactionsClaiming', [...insertParameters(items, event_channel), ...claimParameters(claims)])).rows[0];
  assert(row !== undefined && row.inserted === items.length && row.before !== null, 'every stored transaction of a group commit is one new row');
  assertClaimed(row, claims);
  return Number(row.before);
}

/** A statement that claims claimed every key of its group when it inserted, and none when it did not. */
function assertClaimed(row: InsertedRow, claims: readonly Claim[]): void {
  if (claims.length === 0) return;
  assert(row.claimed === (row.inserted === 0 ? 0 : claims.length), `a group commit claimed ${String(row.claimed)} of its ${claims.length} keys, inserting ${row.inserted}`);
}

async function readBalancesOf(db: Queryable, keys: ReadonlyArray<{ user_id: string; token: string }>): Promise<BalanceChange[]> {
  if (keys.length === 0) return [];
  const rows = (await run<{ user_id: string; token: string; units: string }>(db, 'balancesOf', [
    keys.map((key) => key.user_id), keys.map((key) => key.token),
  ])).rows;
  return rows.map((row) => ({ user_id: row.user_id, token: row.token, units: BigInt(row.units) }));
}

/** The parameters $1–$12 of insertTransactions and insertIfCovered. */
function insertParameters(items: readonly PendingAppend[], event_channel: string): unknown[] {
  const stored = items.map((item) => item.transaction);
  return [
    stored.map((tx) => tx.tx_hash), stored.map((tx) => tx.from), stored.map((tx) => tx.to), stored.map((tx) => tx.amount_units.toString()),
    stored.map((tx) => tx.token), stored.map((tx) => tx.type), stored.map((tx) => JSON.stringify(tx.metadata)), stored.map((tx) => tx.nonce),
    stored.map((tx) => tx.timestamp), event_channel,
    stored.map((tx) => tx.min_receive_units?.toString() ?? null), stored.map((tx) => tx.token_out),
  ];
}

/**
 * Writes every outcome of the block and takes its row off the pending queue; returns how many it
 * sealed. By row number when the sealer passed every one on (and the outcomes come in position order,
 * as the producer makes them): the runs of confirmed outcomes by their ranges (SQL.confirmRuns), the
 * rest (failed, swaps, lone outcomes) one per row; by hash otherwise.
 */
async function sealOutcomes(client: pg.PoolClient, commit: BlockCommit): Promise<number> {
  const { outcomes, header } = commit;
  // The stored status is the error's absence (schema.ts, version 11): a status must agree with it.
  assertOutcomeErrors(outcomes);
  const by_seq = outcomes.every((outcome, index) => outcome.seq !== undefined && outcome.position === index);
  if (!by_seq) {
    return sealedCount(await run<SealedRow>(client, 'sealTransactions', [
      header.number, outcomes.map((outcome) => outcome.tx_hash), outcomes.map((outcome) => outcome.position),
      outcomes.map((outcome) => outcome.error), outcomes.map((outcome) => outcome.amount_out_units?.toString() ?? null),
    ]));
  }
  const { runs, singles } = outcomeRuns(outcomes);
  let sealed = 0;
  if (runs.length > 0) {
    const ends = runs.flatMap((range) => [range.first, range.last]);
    sealed += sealedCount(await run<SealedRow>(client, 'confirmRuns', [
      header.number, runs.map((range) => range.first.seq), runs.map((range) => range.last.seq),
      runs.map((range) => (range.first.seq as number) - range.first.position),
      ends.map((outcome) => outcome.seq), ends.map((outcome) => outcome.tx_hash),
    ]));
  }
  if (singles.length > 0) {
    sealed += sealedCount(await run<SealedRow>(client, 'sealTransactionsBySeq', [
      header.number, singles.map((outcome) => outcome.seq), singles.map((outcome) => outcome.tx_hash), singles.map((outcome) => outcome.position),
      singles.map((outcome) => outcome.error), singles.map((outcome) => outcome.amount_out_units?.toString() ?? null),
    ]));
  }
  return sealed;
}

type SealedRow = { sealed: number };

function sealedCount(result: pg.QueryResult<SealedRow>): number {
  const row = result.rows[0];
  assert(row !== undefined, 'a sealing statement returns the count of outcomes it wrote');
  return row.sealed;
}

/** Takes `count` event sequences (after the returned one) for this transaction; see SQL.advanceEventCounter. */
async function advanceEventCounter(client: pg.PoolClient, count: number, event_channel: string): Promise<number> {
  const row = (await run<{ before: string }>(client, 'advanceEventCounter', [count, event_channel])).rows[0];
  if (row === undefined) throw new Error('the event counter row is missing');
  return Number(row.before);
}

function idempotencyId(caller: string, key: string): string {
  return `${caller}\u0000${key}`;
}

/**
 * The block, every outcome, the new balances and the accounts, in one transaction; the schema refuses
 * anything that does not extend the chain. Returns what the block takes off the pending debits.
 */
async function writeBlock(client: pg.PoolClient, commit: BlockCommit, event_channel: string): Promise<PendingDelta> {
  const { header, totals } = commit;
  assertPostingsMatch(commit);
  await run(client, 'insertBlock', [
    header.number, header.hash, header.parent_hash, header.timestamp, header.transactions_count, header.transactions_root,
    totals.transactions, totals.users, encodeVolumes(totals.transfer_volume_units),
    header.native_price ?? null, (totals.swap_volume_usd_micros ?? 0n).toString(),
  ]);
  if (commit.outcomes.length > 0) {
    // Fewer rows sealed than outcomes is a bug, not a race: the block's row went in first, with the
    // newest block as its parent, so no other sealer got there (as in the SQLite store).
    const sealed = await sealOutcomes(client, commit);
    assert(sealed === commit.outcomes.length, `block ${header.number} seals ${commit.outcomes.length} pending transactions (${sealed} found)`);
  }
  if (commit.balances.length > 0) {
    await run(client, 'putBalances', [
      commit.balances.map((balance) => balance.user_id), commit.balances.map((balance) => balance.token),
      commit.balances.map((balance) => balance.units.toString()),
    ]);
  }
  if (commit.new_users.length > 0) await run(client, 'insertAccounts', [commit.new_users]);
  if (commit.active_users.length > 0) await run(client, 'touchAccounts', [header.timestamp, commit.active_users]);
  if (commit.candles !== undefined && commit.candles.length > 0) await putCandles(client, commit.candles);
  const settled = settledByPostings(commit) ?? await blockSettlement(runIn(client), header.number);
  await writeBalanceRoot(client, commit);
  // The block's events: its outcomes in position order, then its block.sealed.
  const events = header.transactions_count + 1;
  const before = await advanceEventCounter(client, events, event_channel);
  await run(client, 'insertBlockEvents', [header.number, before + 1]);
  await writeHistory(client, header);
  return { before, after: before + events, changes: settled };
}

/** Appends one block to the history tree, inside the caller's transaction: one read, one write. */
async function writeHistory(client: pg.PoolClient, leaf: HistoryLeaf): Promise<void> {
  const nodes = historyNodesToWrite(leaf, await readHistoryNodes(client, historySiblingKeys(leaf.number)));
  await run(client, 'insertHistoryNodes', [
    nodes.map((node) => node.level), nodes.map((node) => node.index), nodes.map((node) => bytesToHex(node.hash)),
  ]);
}

async function readHistoryNodes(db: Queryable, keys: readonly NodeKey[]): Promise<HistoryNode[]> {
  if (keys.length === 0) return [];
  const rows = (await run<{ level: number; idx: string; hash: string }>(db, 'historyNodes', [
    keys.map((key) => key.level), keys.map((key) => key.index),
  ])).rows;
  return rows.map((row) => ({ level: row.level, index: Number(row.idx), hash: hexToBytes(row.hash) }));
}

/** The balance commitment's step of a block: its root, when the sealer keeps one. */
async function writeBalanceRoot(client: pg.PoolClient, commit: BlockCommit): Promise<void> {
  if (commit.balance_root != null) await run(client, 'insertBalanceRoot', [commit.header.number, commit.balance_root]);
}

/**
 * How long a migration (and an instance waiting for another's) may take: a migration that copies
 * every stored transaction (version 11) takes seconds per million, past the deadlines of requests.
 */
const MIGRATION_TIMEOUT_MS = 30 * 60_000;

/** A statement of the migrations, under MIGRATION_TIMEOUT_MS (node-postgres reads `query_timeout` per query; its types omit it). */
function migrationQuery(text: string, values: unknown[] = []): pg.QueryConfig {
  const config: pg.QueryConfig & { query_timeout: number } = { text, values, query_timeout: MIGRATION_TIMEOUT_MS };
  return config;
}

/**
 * Applies the migrations this database lacks, in one transaction under an advisory lock, so that
 * instances starting together wait for each other instead of racing to create the same tables.
 */
async function migrate(pool: pg.Pool, schema: string | null): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query(`SET LOCAL statement_timeout = ${MIGRATION_TIMEOUT_MS}`);
    await client.query(migrationQuery('SELECT pg_advisory_xact_lock($1, hashtext(COALESCE($2, current_schema())))', [LOCK_CLASS.migrations, schema]));
    if (schema !== null) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
    const applied = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((row) => row.version));
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query(migrationQuery(migration.sql));
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [migration.version, Math.floor(Date.now() / 1000)]);
    }
  });
}

/** Also used by the audit reader of this store. */
export function toTransaction(row: TransactionRow): Transaction {
  return {
    tx_hash: row.tx_hash,
    from: row.from_id,
    to: row.to_id,
    amount_units: BigInt(row.amount),
    token: row.token,
    type: row.type as TransactionType,
    metadata: JSON.parse(row.metadata) as Metadata,
    nonce: row.nonce,
    timestamp: Number(row.timestamp),
    status: row.status as TransactionStatus,
    block_number: row.block_number === null ? null : Number(row.block_number),
    block_hash: row.block_hash,
    position: row.position,
    error: row.error as FailureCode | null,
    min_receive_units: row.min_receive === null ? null : BigInt(row.min_receive),
    amount_out_units: row.amount_out === null ? null : BigInt(row.amount_out),
    token_out: row.token_out,
  };
}

function toBalanceChange(row: { user_id: string; token: string; units: string }): BalanceChange {
  return { user_id: row.user_id, token: row.token, units: BigInt(row.units) };
}

function toIdempotencyRecord(row: IdempotencyRow): IdempotencyRecord {
  return { caller: row.caller, key: row.key, request_hash: row.request_hash, tx_hash: row.tx_hash, timestamp: Number(row.timestamp) };
}

function toHeader(row: BlockRow): BlockHeader {
  return {
    number: Number(row.number),
    hash: row.hash,
    parent_hash: row.parent_hash,
    timestamp: Number(row.timestamp),
    transactions_count: row.transactions_count,
    transactions_root: row.transactions_root,
    ...(row.native_price === null ? {} : { native_price: row.native_price }),
  };
}

/** Also used by the audit reader of this store. */
export function toStoredHeader(row: BlockRow): StoredBlockHeader {
  return {
    ...toHeader(row),
    totals: { transactions: Number(row.total_transactions), users: Number(row.total_users), transfer_volume_units: decodeVolumes(row.transfer_volume_totals), ...swapVolume(row.swap_volume_usd) },
  };
}

/** The candles a block changed, in one statement. */
async function putCandles(client: pg.PoolClient, candles: readonly Candle[]): Promise<void> {
  await run(client, 'putCandles', [
    candles.map((candle) => candle.interval), candles.map((candle) => candle.start), candles.map((candle) => candle.open_units.toString()),
    candles.map((candle) => candle.high_units.toString()), candles.map((candle) => candle.low_units.toString()),
    candles.map((candle) => candle.close_units.toString()), candles.map((candle) => candle.volume_usd_micros.toString()),
  ]);
}

function toCandle(row: CandleRow): Candle {
  return {
    interval: row.interval as CandleInterval,
    start: Number(row.start),
    open_units: BigInt(row.open),
    high_units: BigInt(row.high),
    low_units: BigInt(row.low),
    close_units: BigInt(row.close),
    volume_usd_micros: BigInt(row.volume_usd),
  };
}
