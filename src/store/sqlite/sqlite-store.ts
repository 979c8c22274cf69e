/**
 * The embedded store: SQLite through better-sqlite3, in WAL mode with synchronous=FULL so that a
 * committed write survives a crash of the process or the machine. Every method runs one prepared
 * statement or one transaction; the service batches (group commit) so one fsync serves many requests.
 * Write transactions begin IMMEDIATE: they take the write lock before their first read, so that two
 * connections writing at once (two handles, each on a thread of its own: thread/) wait for each other
 * under busy_timeout instead of one failing with SQLITE_BUSY when its read snapshot is overtaken.
 *
 * Appends are the exception to *how* (not whether) they are made durable: better-sqlite3 is
 * synchronous, so with synchronous=FULL the fsync of every group commit would stop the event loop.
 * An append is committed with synchronous=NORMAL (SQLite writes the WAL frames without syncing), then
 * the WAL file is fsynced through libuv's thread pool, and only after that does `appendPending`
 * resolve, so a caller still gets its 202 only once the transaction is on disk, while the event loop
 * keeps serving requests during the fsync. Everything else (blocks, settings) commits with FULL.
 *
 * Checkpoints (copying the WAL back into the database file) run on a worker thread of their own, not in
 * the commit that takes the WAL past its threshold, as SQLite would by default: wal-checkpointer.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from './sqlite-driver.js';
import type { Logger } from 'pino';
import type { Block, BlockHeader } from '../../domain/block.js';
import type { Metadata, Transaction, TransactionType, FailureCode, TransactionStatus } from '../../domain/transaction.js';
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
  TransactionOutcome,
} from '../../service/ledger-store.js';
import { TRANSACTIONS_BY_HASH_MAX } from '../../service/ledger-store.js';
import { assertOutcomeErrors, assertPostingsMatch, outcomeRuns, settledByPostings, type OutcomeRun } from '../block-postings.js';
import { collectEvents, type EventRows } from '../event-rows.js';
import { guardWrite, isSystemFault, StorageOpenError, type StorageHealthReporter } from '../storage-faults.js';
import { decodeVolumes, encodeVolumes, swapVolume } from '../volume-totals.js';
import { MIGRATIONS } from './schema.js';
import { SqliteFailureBudget, type SqliteBudgetPass } from './sqlite-failure-budget.js';
import { DEFAULT_HASH_MERGE_LIMITS, SqliteHashIndex, type HashMergeLimits } from './sqlite-hash-index.js';
import { newestOf, SqlitePendingHistory, type PendingHistoryRow } from './sqlite-pending-history.js';
import { SqlitePendingRows } from './sqlite-pending-rows.js';
import { SqliteWebhookStore } from './sqlite-webhook-store.js';
import { DEFAULT_WAL_CHECKPOINT_LIMITS, WalCheckpointer, type WalCheckpointLimits, type WalCheckpointStats } from './wal-checkpointer.js';
import { assert, StorageUnavailableError } from '../../domain/shared/errors.js';
import { POOL_ACCOUNT_SQL } from '../system-accounts-sql.js';
import { CoalescedRead } from '../coalesced-read.js';
import type { HistoryNode, NodeKey } from '../../domain/shared/history-tree.js';
import { historyNodesToWrite, historySiblingKeys, type HistoryLeaf } from '../../service/history-writer.js';

export type TransactionRow = {
  seq?: bigint;
  tx_hash: string;
  from_id: string;
  to_id: string;
  amount: bigint;
  token: string;
  type: string;
  metadata: string;
  nonce: string;
  timestamp: bigint;
  status: string;
  block_number: bigint | null;
  block_hash: string | null;
  position: bigint | null;
  error: string | null;
  min_receive: bigint | null;
  amount_out: bigint | null;
  token_out: string | null;
};

export type BlockRow = {
  number: number;
  hash: string;
  parent_hash: string;
  timestamp: number;
  transactions_count: number;
  transactions_root: string;
  total_transactions: number;
  total_users: number;
  transfer_volume_totals: string;
  native_price: string | null;
  swap_volume_usd: string;
};

/** seq, tx_hash, from_id, to_id, amount, token, type, timestamp, min_receive: see SQL.pendingPostings. */
type PendingPostingRow = [bigint, string, string, string, bigint, string, string, bigint, bigint | null];

type IdempotencyRow = { caller: string; key: string; request_hash: string; tx_hash: string; timestamp: number };

const TRANSACTION_COLUMNS = `t.tx_hash, t.from_id, t.to_id, t.amount, t.token, t.type, t.metadata, t.nonce, t.timestamp,
  t.status, t.block_number, b.hash AS block_hash, t.position, t.error, t.min_receive, t.amount_out, t.token_out`;
const PENDING_COLUMNS = `t.seq, t.tx_hash, t.from_id, t.to_id, t.amount, t.token, t.type, t.metadata, t.nonce, t.timestamp,
  t.status, NULL AS block_number, NULL AS block_hash, NULL AS position, NULL AS error, t.min_receive, NULL AS amount_out, t.token_out`;
const BLOCK_HEADER_COLUMNS = 'number, hash, parent_hash, timestamp, transactions_count, transactions_root, native_price';
const STORED_BLOCK_COLUMNS = `${BLOCK_HEADER_COLUMNS}, total_transactions, total_users, transfer_volume_totals, swap_volume_usd`;
/** SQLite's default limit on bound parameters is 32766; stay well below it. */
const LOOKUP_CHUNK = 500;
/** "Before no position": above every seq the ledger will ever number. */
const SEQ_END = Number.MAX_SAFE_INTEGER;

type CandleRow = { interval: string; start: number; open: string; high: string; low: string; close: string; volume_usd: string };

export type SqliteStoreOptions = {
  path: string;
  health?: StorageHealthReporter | null;
  /** Told when the checkpoint worker fails or a checkpoint does. */
  logger?: Logger | null;
  /** When the WAL is checkpointed off the event loop (absent: the defaults); null leaves it to SQLite, in the commit. */
  wal_checkpoints?: WalCheckpointLimits | null;
  /** When the transaction hash's index is merged (absent: the defaults; sqlite-hash-index.ts). */
  hash_merge?: HashMergeLimits;
};

/** A stored transaction as the in-memory copies need it once its append has committed. */
type StoredRow = PendingHistoryRow & { tx_hash: string };

/** After a merge step fails for a storage fault, the pause before the next try. */
const HASH_MERGE_RETRY_MS = 1000;

/** SQLite's result codes for a storage that cannot take a write (full, read-only, I/O error, file gone). */
function isSqliteStorageFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)/.test(code)) return true;
  return isSystemFault(error);
}

export class SqliteStore implements LedgerStore {
  private readonly db: Database.Database;
  private readonly statements: ReturnType<typeof prepareStatements>;
  private readonly known_users_statements = new Map<number, Database.Statement>();
  /** The WAL file, opened once for fsync; null for an in-memory database. */
  private wal: Promise<fs.promises.FileHandle> | null;
  private readonly health: StorageHealthReporter | null;
  private readonly failure_budget: SqliteFailureBudget;
  /** Each account's pending transactions, for its history (the indexes hold sealed ones only). */
  private readonly pending_history: SqlitePendingHistory;
  /** Builds both from one scan of the pending rows, at open and after another connection's write. */
  private readonly pending_rows: SqlitePendingRows;
  /** Null for an in-memory database, or when SQLite checkpoints in the commit. */
  private readonly checkpointer: WalCheckpointer | null;
  /** The transaction hash's index: the rows after its mark in memory, merged into its table in steps. */
  private readonly hash_index: SqliteHashIndex;
  /** The next merge step, when one is due. */
  private hash_merge_timer: NodeJS.Timeout | null = null;
  /** Set when a merge step failed for something other than a storage fault (a bug, or a ledger changed by hand): merging stops. */
  private hash_merge_stopped = false;
  private readonly logger: Logger | null;
  /** See appendedEventHead. */
  private appended_head = 0;
  /**
   * The newest block's number: one read per event-loop turn however many requests ask
   * (../coalesced-read.ts). The query is a seek, but each statement outside a transaction is a read
   * transaction of its own (the WAL's index checked, a snapshot taken): a profile of cached balance
   * reads put 18 % of the service's time there, 10 µs a request.
   */
  private readonly latest_block_number = new CoalescedRead(async () => (this.statements.latestBlockNumber.get() as { number: number | null }).number);
  /**
   * The ledger's newest row number, which every account-history request reads first: shared per turn
   * in the same way (a profile of history reads put 17 % of the service's time in it, one read each).
   */
  private readonly newest_seq = new CoalescedRead(async () => this.statements.newestSeq.get() as number | null);

  private constructor(
    db: Database.Database, wal_path: string | null, health: StorageHealthReporter | null, checkpointer: WalCheckpointer | null,
    logger: Logger | null, hash_merge: HashMergeLimits,
  ) {
    this.db = db;
    this.health = health;
    this.checkpointer = checkpointer;
    this.logger = logger;
    this.statements = prepareStatements(db);
    this.failure_budget = new SqliteFailureBudget(db);
    this.pending_history = new SqlitePendingHistory(db);
    this.pending_rows = new SqlitePendingRows(db, [this.failure_budget, this.pending_history]);
    this.hash_index = new SqliteHashIndex(db, hash_merge);
    this.syncWithOtherWriters();
    this.wal = wal_path === null ? null : fs.promises.open(wal_path, 'r');
    // Observed here so a failure is not an unhandled rejection; the first append still sees it and fails.
    this.wal?.catch(() => undefined);
  }

  static open(options: SqliteStoreOptions): SqliteStore {
    let db: Database.Database | null = null;
    try {
      if (options.path !== ':memory:') fs.mkdirSync(path.dirname(options.path), { recursive: true });
      db = new Database(options.path);
      // Before anything is written: another application's database is left as it was found.
      refuseForeignDatabase(db, options.path);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      db.pragma('busy_timeout = 5000');
      migrate(db);
    } catch (error) {
      db?.close();
      throw openError(options.path, error);
    }
    const in_memory = options.path === ':memory:';
    const limits = options.wal_checkpoints === undefined ? DEFAULT_WAL_CHECKPOINT_LIMITS : options.wal_checkpoints;
    const checkpointer = in_memory || limits === null ? null : offLoopCheckpoints(db, options.path, limits, options.logger ?? null);
    // The WAL exists from the first write (the migrations) for as long as a connection is open.
    const store = new SqliteStore(db, in_memory ? null : `${options.path}-wal`, options.health ?? null, checkpointer, options.logger ?? null, options.hash_merge ?? DEFAULT_HASH_MERGE_LIMITS);
    store.scheduleHashMerge();
    return store;
  }

  /** Durable when it resolves: committed, then the WAL fsynced off the event loop (see the top of this file). */
  appendPending(batch: readonly PendingAppend[]): Promise<AppendResult[]> {
    return guardWrite('store submissions', this.health, isSqliteStorageFault, () => this.appendDurably(batch));
  }

  private async appendDurably(batch: readonly PendingAppend[]): Promise<AppendResult[]> {
    await this.checkpointer?.ready();
    this.statements.synchronousNormal.run();
    let results: AppendResult[];
    let head = this.appended_head;
    try {
      const budget = this.failure_budget.begin();
      const stored: StoredRow[] = [];
      results = this.db.transaction(() => {
        this.syncWithOtherWriters();
        const sequence = { next: this.lastEventSequence() + 1 };
        this.hash_index.assertNotStored(batch.map((item) => item.transaction.tx_hash));
        const appended = batch.map((item) => this.appendOne(item, sequence, budget, stored));
        budget.finish();
        this.statements.setEventCounter.run(sequence.next - 1);
        head = sequence.next - 1;
        return appended;
      }).immediate();
      budget.committed();
      this.pending_history.stored(stored);
      this.hash_index.stored(stored);
      this.checkpointer?.committed();
    } finally {
      this.statements.synchronousFull.run();
    }
    this.scheduleHashMerge();
    if (this.wal !== null) await (await this.wal).sync();
    // Two appends' fsyncs may resolve out of order: the head only moves forward (as on PostgreSQL).
    this.appended_head = Math.max(this.appended_head, head);
    return results;
  }

  appendedEventHead(): number {
    return this.appended_head;
  }

  /** SQLite's data_version: another connection's commit to the file changes it (this connection's do not). */
  private dataVersion(): number {
    return this.statements.dataVersion.get() as number;
  }

  /** First thing in a write transaction and before a look-up by hash: what is kept in memory of the rows, brought up to date if another connection wrote since. */
  private syncWithOtherWriters(): void {
    const data_version = this.dataVersion();
    this.pending_rows.sync(data_version);
    this.hash_index.sync(data_version);
  }

  /** Before a look-up by hash: the rows after the index's mark as another connection may have added them. */
  private syncHashes(): void {
    this.hash_index.sync(this.dataVersion());
  }

  /** Arms the next merge step of the hash index if one is due and none is armed. */
  private scheduleHashMerge(delay_ms = this.hash_index.step_interval_ms): void {
    if (this.hash_merge_timer !== null || this.hash_merge_stopped || !this.db.open || !this.hash_index.wantsStep()) return;
    this.hash_merge_timer = setTimeout(() => {
      this.hash_merge_timer = null;
      void this.runHashMergeStep();
    }, delay_ms);
    this.hash_merge_timer.unref();
  }

  /**
   * One step of the hash index's merge, in a write transaction of its own, committed without an fsync
   * of its own: the index is derived from the rows, and the WAL keeps commits in order, so a step lost
   * with the machine is lost with every step after it, the mark included, and is written again. A
   * storage fault is reported as any write's and tried again later; anything else stops the merging
   * (the look-ups stay exact: the rows stay in memory) and is logged.
   */
  private async runHashMergeStep(): Promise<void> {
    let retry_ms: number | undefined;
    try {
      await guardWrite('merge the transaction hash index', this.health, isSqliteStorageFault, async () => {
        await this.checkpointer?.ready();
        if (this.hash_merge_stopped || !this.db.open) return;
        this.statements.synchronousNormal.run();
        try {
          const settle = this.db.transaction(() => {
            this.syncWithOtherWriters();
            return this.hash_index.wantsStep() ? this.hash_index.mergeStep() : () => undefined;
          }).immediate();
          settle();
        } finally {
          this.statements.synchronousFull.run();
        }
        this.checkpointer?.committed();
      });
    } catch (error) {
      if (error instanceof StorageUnavailableError) {
        this.logger?.warn({ err: error }, 'the transaction hash index could not be merged now; trying again');
        retry_ms = HASH_MERGE_RETRY_MS;
      } else {
        this.hash_merge_stopped = true;
        this.logger?.error({ err: error }, 'the transaction hash index cannot be merged: merging stopped, look-ups by hash stay exact');
      }
    }
    this.scheduleHashMerge(retry_ms);
  }

  private lastEventSequence(): number {
    return Number(this.statements.eventHead.pluck().get() as bigint);
  }

  /** Stores one item (and adds it to `stored`); a stored transaction takes `sequence.next` as the sequence of its accepted event. */
  private appendOne(item: PendingAppend, sequence: { next: number }, budget: SqliteBudgetPass, stored: StoredRow[]): AppendResult {
    const tx = item.transaction;
    if (item.idempotency !== null) {
      const claim = this.statements.claimIdempotency.run(
        item.idempotency.caller, item.idempotency.key, item.idempotency.request_hash, tx.tx_hash, tx.timestamp, tx.timestamp,
      );
      if (claim.changes === 0) {
        const row = this.statements.findIdempotency.get(item.idempotency.caller, item.idempotency.key) as IdempotencyRow;
        return { kind: 'replay', record: row };
      }
    }
    const refused = budget.admit(item);
    if (refused !== null) return refused;
    const inserted = this.statements.insertTransaction.run(
      tx.tx_hash, tx.from, tx.to, tx.amount_units, tx.token, tx.type, JSON.stringify(tx.metadata), tx.nonce, tx.timestamp, sequence.next,
      tx.min_receive_units, tx.token_out,
    );
    stored.push({ seq: Number(inserted.lastInsertRowid), from: tx.from, to: tx.to, tx_hash: tx.tx_hash });
    sequence.next += 1;
    return { kind: 'stored' };
  }

  async findIdempotency(caller: string, key: string): Promise<IdempotencyRecord | null> {
    return (this.statements.findIdempotency.get(caller, key) as IdempotencyRow | undefined) ?? null;
  }

  async countIdempotencyKeys(caller: string, keys: readonly string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return (this.statements.countIdempotencyKeys.get(caller, JSON.stringify(keys)) as { stored: number }).stored;
  }

  async pruneIdempotency(before_s: number): Promise<number> {
    return this.statements.pruneIdempotency.run(before_s).changes;
  }

  async getTransaction(tx_hash: string): Promise<Transaction | null> {
    this.syncHashes();
    const seq = this.hash_index.seqOf(tx_hash);
    if (seq === null) return null;
    const row = this.statements.getTransaction.get(seq, tx_hash) as TransactionRow | undefined;
    assert(row !== undefined, `the hash index names row ${seq} for transaction ${tx_hash}`);
    return toTransaction(row);
  }

  async accountHistory(user_id: string, before_seq: number | null, limit: number): Promise<HistoryEntry[]> {
    const before = before_seq ?? SEQ_END;
    this.pending_rows.sync(this.dataVersion());
    const pending = this.pending_history.page(user_id, before_seq, limit)
      .map((seq): HistoryEntry => ({ seq, tx_hash: this.statements.hashAtSeq.get(seq) as string, sealed: false }));
    const rows = this.statements.accountHistory.all(user_id, before, user_id, before, limit) as Array<[number, string]>;
    return newestOf(pending, rows.map(([seq, tx_hash]) => ({ seq, tx_hash, sealed: true })), limit);
  }

  async newestAccountSeq(user_id: string, before_seq: number | null): Promise<number | null> {
    const before = before_seq ?? SEQ_END;
    this.pending_rows.sync(this.dataVersion());
    const pending = this.pending_history.newest(user_id, before_seq);
    const sealed = this.statements.newestAccountSeq.get(user_id, before, user_id, before) as number;
    const newest = Math.max(pending ?? 0, sealed);
    return newest === 0 ? null : newest;
  }

  async newestSeq(): Promise<number | null> {
    return this.newest_seq.get();
  }

  async transactionsByHash(tx_hashes: readonly string[]): Promise<Transaction[]> {
    assert(tx_hashes.length <= TRANSACTIONS_BY_HASH_MAX, 'a look-up by hash is bounded');
    if (tx_hashes.length === 0) return [];
    this.syncHashes();
    // At most two statements: the rows the map names, by row number, and the others through the index table.
    const recent: number[] = [];
    const merged: string[] = [];
    for (const tx_hash of new Set(tx_hashes)) {
      const seq = this.hash_index.recentSeqOf(tx_hash);
      if (seq === undefined) merged.push(tx_hash);
      else recent.push(seq);
    }
    const rows: TransactionRow[] = [];
    if (recent.length > 0) rows.push(...(this.statements.transactionsBySeq.all(JSON.stringify(recent)) as TransactionRow[]));
    if (merged.length > 0) rows.push(...(this.statements.transactionsByMergedHash.all(JSON.stringify(merged)) as TransactionRow[]));
    return rows.map(toTransaction);
  }

  async latestBlock(): Promise<StoredBlockHeader | null> {
    const row = this.statements.latestBlock.get() as BlockRow | undefined;
    return row === undefined ? null : toStoredHeader(row);
  }

  latestBlockNumber(): Promise<number | null> {
    return this.latest_block_number.get();
  }

  async pendingTransactions(limit: number): Promise<Transaction[]> {
    return (this.statements.pendingTransactions.all(limit) as TransactionRow[]).map(toTransaction);
  }

  /** Rows as arrays (no per-row column objects), in rowid order through the pending index. */
  async pendingPostings(limit: number): Promise<PendingPosting[]> {
    const rows = this.statements.pendingPostings.all(limit) as PendingPostingRow[];
    const postings: PendingPosting[] = new Array(rows.length);
    for (let index = 0; index < rows.length; index += 1) {
      const [seq, tx_hash, from, to, amount_units, token, type, timestamp, min_receive_units] = rows[index] as PendingPostingRow;
      postings[index] = { seq: Number(seq), tx_hash, from, to, amount_units, token, type: type as TransactionType, timestamp: Number(timestamp), min_receive_units };
    }
    return postings;
  }

  async pendingCount(): Promise<number> {
    return Number((this.statements.pendingCount.get() as { count: bigint }).count);
  }

  async pendingCountUpTo(limit: number): Promise<number> {
    return Number((this.statements.pendingCountUpTo.get(limit) as { count: bigint }).count);
  }

  async balancesOf(keys: ReadonlyArray<{ user_id: string; token: string }>): Promise<BalanceChange[]> {
    const found: BalanceChange[] = [];
    for (const key of keys) {
      const row = this.statements.balance.get(key.user_id, key.token) as { units: bigint } | undefined;
      if (row !== undefined) found.push({ user_id: key.user_id, token: key.token, units: row.units });
    }
    return found;
  }

  async knownUsers(user_ids: readonly string[]): Promise<Set<string>> {
    const known = new Set<string>();
    for (let start = 0; start < user_ids.length; start += LOOKUP_CHUNK) {
      const chunk = user_ids.slice(start, start + LOOKUP_CHUNK);
      const rows = this.knownUsersStatement(chunk.length).all(...chunk) as Array<{ user_id: string }>;
      for (const row of rows) known.add(row.user_id);
    }
    return known;
  }

  /** One prepared statement per chunk size, built on first use. */
  private knownUsersStatement(size: number): Database.Statement {
    let statement = this.known_users_statements.get(size);
    if (statement === undefined) {
      statement = this.db.prepare(`SELECT user_id FROM accounts WHERE user_id IN (${Array(size).fill('?').join(',')})`);
      this.known_users_statements.set(size, statement);
    }
    return statement;
  }

  commitBlock(commit: BlockCommit): Promise<void> {
    return guardWrite('seal a block', this.health, isSqliteStorageFault, async () => {
      await this.checkpointer?.ready();
      const settle = this.db.transaction(() => this.writeBlock(commit)).immediate();
      this.checkpointer?.committed();
      settle();
      this.scheduleHashMerge();
    });
  }

  /** Writes the block; returns what to do once it has committed (take its debits off the senders' pending totals, its transactions off the pending history). */
  private writeBlock(commit: BlockCommit): () => void {
    const { header, totals } = commit;
    assert(commit.outcomes.length === header.transactions_count, 'a block seals exactly the transactions it declares');
    assertPostingsMatch(commit);
    this.syncWithOtherWriters();
    const s = this.statements;
    s.insertBlock.run(
      header.number, header.hash, header.parent_hash, header.timestamp, header.transactions_count, header.transactions_root,
      totals.transactions, totals.users, encodeVolumes(totals.transfer_volume_units),
      header.native_price ?? null, (totals.swap_volume_usd_micros ?? 0n).toString(),
    );
    this.sealOutcomes(header.number, commit.outcomes);
    for (const balance of commit.balances) s.putBalance.run(balance.user_id, balance.token, balance.units);
    for (const user_id of commit.new_users) s.insertAccount.run(user_id);
    for (const user_id of commit.active_users) s.touchAccount.run(header.timestamp, user_id);
    for (const candle of commit.candles ?? []) s.putCandle.run(...candleRow(candle));
    const settle_budget = this.failure_budget.settleBlock(header.number, settledByPostings(commit));
    const settle_history = this.pending_history.settleBlock(header.number, commit.postings ?? null);
    this.writeBalanceRoot(commit);
    // The block's events: its outcomes in position order, then its block.sealed.
    const first_sequence = this.lastEventSequence() + 1;
    s.insertBlockEvents.run(header.number, first_sequence);
    s.setEventCounter.run(first_sequence + header.transactions_count);
    this.writeHistory(header);
    return () => {
      settle_budget();
      settle_history();
    };
  }

  /**
   * Writes each outcome onto its pending row. A run of confirmed outcomes on consecutive row numbers
   * (most of a block: `pendingPostings` reads in row order, and rows are numbered in arrival order) is
   * one UPDATE over the range, its positions computed from the row numbers: per-statement overhead is
   * most of a single-row UPDATE. The run's first and last rows must hold the hashes named; rows are
   * never deleted and a row's hash never changes (the schema's triggers), so the rows in between are
   * the ones the producer read. Everything else (failed, swaps, outcomes without a row number): one
   * prepared statement per row, which checks the hash.
   *
   * A row that is not pending, or not the one named, is a bug and not a race: the block's row went in
   * first, with the newest block as its parent (the schema's triggers), so no other sealer got there.
   * Hence assertions, which stop the sealer.
   */
  private sealOutcomes(block_number: number, outcomes: readonly TransactionOutcome[]): void {
    assertOutcomeErrors(outcomes);
    const { runs, singles } = outcomeRuns(outcomes);
    for (const run of runs) this.confirmRun(block_number, run);
    for (const outcome of singles) this.sealOne(block_number, outcome);
  }

  private confirmRun(block_number: number, { first, last, length }: OutcomeRun): void {
    const s = this.statements;
    for (const end of [first, last]) {
      assert(s.hashAtSeq.get(end.seq) === end.tx_hash, `row ${end.seq} holds transaction ${end.tx_hash}`);
    }
    const first_seq = first.seq as number;
    const result = s.confirmRun.run(block_number, first_seq - first.position, first_seq, last.seq);
    assert(result.changes === length, `transactions ${first.tx_hash} to ${last.tx_hash} are all pending`);
  }

  private sealOne(block_number: number, outcome: TransactionOutcome): void {
    const s = this.statements;
    // The block's write transaction synced the hash index first.
    const seq = outcome.seq ?? this.hash_index.seqOf(outcome.tx_hash);
    assert(seq !== null, `transaction ${outcome.tx_hash} is stored`);
    const result = s.sealTransactionBySeq.run(outcome.status, block_number, outcome.position, outcome.error, outcome.amount_out_units ?? null, seq, outcome.tx_hash);
    assert(result.changes === 1, `transaction ${outcome.tx_hash} is pending`);
  }

  /** Appends one block to the history tree, inside the caller's transaction. */
  private writeHistory(leaf: HistoryLeaf): void {
    const nodes = historyNodesToWrite(leaf, this.readHistoryNodes(historySiblingKeys(leaf.number)));
    for (const node of nodes) this.statements.insertHistoryNode.run(node.level, node.index, node.hash);
  }

  private readHistoryNodes(keys: readonly NodeKey[]): HistoryNode[] {
    const found: HistoryNode[] = [];
    for (const key of keys) {
      const hash = this.statements.historyNode.pluck().get(key.level, key.index) as Uint8Array | undefined;
      if (hash !== undefined) found.push({ ...key, hash: new Uint8Array(hash) });
    }
    return found;
  }

  async historyNodes(keys: readonly NodeKey[]): Promise<HistoryNode[]> {
    return this.db.transaction(() => this.readHistoryNodes(keys))();
  }

  async historySize(): Promise<number> {
    return Number(this.statements.historySize.pluck().get() as number);
  }

  async appendHistory(leaves: ReadonlyArray<HistoryLeaf>): Promise<void> {
    await guardWrite('fill in the history tree', this.health, isSqliteStorageFault, async () => {
      this.db.transaction(() => {
        for (const leaf of leaves) this.writeHistory(leaf);
      }).immediate();
    });
  }

  /** The balance commitment's step of a block: its root, when the sealer keeps one. */
  private writeBalanceRoot(commit: BlockCommit): void {
    if (commit.balance_root != null) this.statements.insertBalanceRoot.run(commit.header.number, commit.balance_root);
  }

  async balanceState(): Promise<BalanceSnapshot | null> {
    return this.db.transaction((): BalanceSnapshot | null => {
      const latest = this.statements.latestBlockNumber.get() as { number: number | null };
      if (latest.number === null) return null;
      const rows = this.statements.allBalances.all() as Array<{ user_id: string; token: string; units: bigint }>;
      return { block_number: latest.number, balances: rows.map((row) => ({ user_id: row.user_id, token: row.token, units: row.units })) };
    }).deferred();
  }

  async balanceChangesSince(after_block: number): Promise<BalanceSnapshot> {
    return this.db.transaction((): BalanceSnapshot => {
      const latest = this.statements.latestBlockNumber.get() as { number: number | null };
      const rows = this.statements.balancesTouchedSince.all(after_block, after_block, after_block, after_block) as Array<{ user_id: string; token: string; units: bigint }>;
      return { block_number: latest.number ?? -1, balances: rows.map((row) => ({ user_id: row.user_id, token: row.token, units: row.units })) };
    }).deferred();
  }

  async balanceRoot(block_number: number): Promise<string | null> {
    return (this.statements.balanceRoot.pluck().get(block_number) as string | undefined) ?? null;
  }

  async claimBalanceRoot(block_number: number, root: string): Promise<string> {
    this.statements.claimBalanceRoot.run(block_number, root);
    const stored = await this.balanceRoot(block_number);
    assert(stored !== null, `the balance root of block ${block_number} was claimed but cannot be read back`);
    return stored;
  }

  async readEvents(after: number, limit: number): Promise<StoredEvent[]> {
    // better-sqlite3 is synchronous: these statements see one state of the database.
    const s = this.statements;
    const accepted = s.acceptedEvents.all(after, limit) as Array<TransactionRow & { event_seq: bigint }>;
    const start = s.blockEventsAtOrBefore.get(after) as { number: bigint } | undefined;
    const blocks = s.blockEventsFrom.all(start === undefined ? 0 : start.number, limit + 1) as Array<BlockRow & { first_sequence: number }>;
    const first = blocks[0];
    const last = blocks.at(-1);
    const sealed = first === undefined || last === undefined
      ? []
      : s.sealedEventTransactions.all(first.number, after - first.first_sequence, last.number, limit) as TransactionRow[];
    const rows: EventRows = {
      accepted: accepted.map((row) => ({ sequence: Number(row.event_seq), transaction: toTransaction(row) })),
      blocks: blocks.map((row) => ({ first_sequence: row.first_sequence, header: toHeader(row) })),
      sealed: sealed.map(toTransaction),
    };
    return collectEvents(rows, after, limit);
  }

  async eventHead(): Promise<number> {
    return this.lastEventSequence();
  }

  async balances(user_id: string): Promise<Map<string, bigint>> {
    const rows = this.statements.balancesOfUser.all(user_id) as Array<{ token: string; units: bigint }>;
    return new Map(rows.map((row) => [row.token, row.units]));
  }

  async pricedBalances(user_id: string): Promise<PricedBalances> {
    // Both reads in one synchronous step: no block can be sealed between them.
    const rows = this.statements.balancesOfUser.all(user_id) as Array<{ token: string; units: bigint }>;
    const latest = this.statements.latestPrice.get() as { native_price: string | null } | undefined;
    return { balances: new Map(rows.map((row) => [row.token, row.units])), native_price: latest?.native_price ?? null };
  }

  async getBlock(number: number): Promise<Block | null> {
    const row = this.statements.getBlock.get(number) as BlockRow | undefined;
    if (row === undefined) return null;
    return { ...toHeader(row), transactions: await this.blockTransactionHashes(number) };
  }

  async listBlocks(from_number: number, limit: number): Promise<BlockHeader[]> {
    return (this.statements.listBlocks.all(from_number, limit) as BlockRow[]).map(toHeader);
  }

  async blockTransactionHashes(number: number): Promise<string[]> {
    return this.statements.blockTransactionHashes.pluck().all(number) as string[];
  }

  async statsSnapshot(window_start_s: number): Promise<StatsSnapshot | null> {
    const latest = this.statements.latestBlock.get() as BlockRow | undefined;
    if (latest === undefined) return null;
    const window_start = this.statements.blockAtOrBefore.get(window_start_s) as BlockRow | undefined;
    const active = this.statements.activeUsers.get(window_start_s) as { count: number };
    return {
      latest: toStoredHeader(latest),
      window_start: window_start === undefined ? null : toStoredHeader(window_start),
      active_users_24h: active.count,
    };
  }

  async candlesAt(keys: ReadonlyArray<{ interval: CandleInterval; start: number }>): Promise<Candle[]> {
    return keys.flatMap((key) => {
      const row = this.statements.candleAt.get(key.interval, key.start) as CandleRow | undefined;
      return row === undefined ? [] : [toCandle(row)];
    });
  }

  async candles(interval: CandleInterval, limit: number): Promise<Candle[]> {
    return (this.statements.candles.all(interval, limit) as CandleRow[]).map(toCandle);
  }

  async getSetting(name: string): Promise<string | null> {
    return (this.statements.getSetting.pluck().get(name) as string | undefined) ?? null;
  }

  async claimSetting(name: string, value: string): Promise<string> {
    this.statements.claimSetting.run(name, value);
    const stored = this.statements.getSetting.pluck().get(name) as string | undefined;
    assert(stored !== undefined, `setting ${name} was claimed but cannot be read back`);
    return stored;
  }

  async ping(): Promise<void> {
    this.statements.ping.get();
  }

  /** The webhook tables, on this store's connection. */
  webhooks(): SqliteWebhookStore {
    return new SqliteWebhookStore(this.db);
  }

  /** The off-loop checkpoints' counts (null: an in-memory database, or SQLite checkpoints in the commit). */
  walCheckpoints(): WalCheckpointStats | null {
    return this.checkpointer?.snapshot() ?? null;
  }

  async close(): Promise<void> {
    if (this.hash_merge_timer !== null) clearTimeout(this.hash_merge_timer);
    this.hash_merge_timer = null;
    this.hash_merge_stopped = true;
    await this.checkpointer?.close();
    const wal = this.wal;
    this.wal = null;
    if (wal !== null) await (await wal).close();
    if (this.db.open) this.db.close();
  }
}

/**
 * Hands the WAL's checkpoints to a worker: SQLite's own (in the commit) switched off, and the WAL file
 * truncated back to the checkpoints' start size whenever it starts over, so its size tells what is in use.
 */
function offLoopCheckpoints(db: Database.Database, database_path: string, limits: WalCheckpointLimits, logger: Logger | null): WalCheckpointer {
  db.pragma('wal_autocheckpoint = 0');
  db.pragma(`journal_size_limit = ${limits.start_bytes}`);
  return new WalCheckpointer(database_path, limits, logger, () => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
  });
}

/** SQLite's default: a checkpoint in the commit that takes the WAL past 1,000 pages. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

/**
 * Refuses a database that holds tables but is not a Tabula ledger: the migrations would otherwise add
 * the ledger's tables beside another application's (or fail half-way on a table of the same name),
 * after switching the file to WAL. A ledger has its migrations table and the first migration's
 * blocks; a new file has no table at all (or only an empty migrations table, from a start that
 * stopped there).
 */
function refuseForeignDatabase(db: Database.Database, file: string): void {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").pluck().all() as string[];
  if (tables.length === 0) return;
  const migrations = tables.includes('schema_migrations')
    ? (db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('schema_migrations') as string[])
    : [];
  if (migrations.includes('version') && migrations.includes('applied_at')) {
    const applied = db.prepare('SELECT count(*) FROM schema_migrations').pluck().get() as number;
    if (applied === 0 && tables.length === 1) return;
    if (tables.includes('blocks') && db.prepare('SELECT 1 FROM schema_migrations WHERE version = 1').get() !== undefined) return;
  }
  const shown = tables.slice(0, FOREIGN_TABLES_SHOWN).join(', ') + (tables.length > FOREIGN_TABLES_SHOWN ? ', …' : '');
  throw new StorageOpenError(
    `${file} is not a Tabula ledger: it holds another application's tables (${shown}); nothing was written to it. `
    + 'Point DATABASE_URL at a new file or at a ledger',
  );
}

const FOREIGN_TABLES_SHOWN = 5;

/** SQLite's result codes (and the file system's) for a file that cannot be opened or written as a database. */
const OPEN_FAULT_CODES = ['SQLITE_CANTOPEN', 'SQLITE_NOTADB', 'SQLITE_READONLY', 'SQLITE_CORRUPT', 'SQLITE_PERM', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_AUTH'];
const OPEN_SYSTEM_CODES = new Set(['EACCES', 'EPERM', 'ENOTDIR', 'EISDIR', 'ENOENT', 'EROFS', 'ENOSPC', 'EEXIST']);

/** An operator's problem with the file becomes StorageOpenError (a one-line refusal at start); anything else is a bug and passes. */
function openError(file: string, error: unknown): unknown {
  if (error instanceof StorageOpenError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !(OPEN_FAULT_CODES.some((prefix) => code.startsWith(prefix)) || OPEN_SYSTEM_CODES.has(code))) return error;
  return new StorageOpenError(`cannot open the SQLite ledger ${file}: ${(error as Error).message} (${code})`, { cause: error });
}

function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(migration.version, Math.floor(Date.now() / 1000));
    }).immediate();
  }
}

/** Every statement of the store, exported so that tests can check their query plans. */
export const SQL = {
  claimIdempotency: `INSERT INTO idempotency_keys (caller, key, request_hash, tx_hash, timestamp, created_at)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (caller, key) DO NOTHING`,
  findIdempotency: 'SELECT caller, key, request_hash, tx_hash, timestamp FROM idempotency_keys WHERE caller = ? AND key = ?',
  countIdempotencyKeys: 'SELECT count(*) AS stored FROM idempotency_keys WHERE caller = ? AND key IN (SELECT value FROM json_each(?))',
  pruneIdempotency: 'DELETE FROM idempotency_keys WHERE created_at < ?',
  insertTransaction: `INSERT INTO transactions (tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, event_seq, min_receive, token_out)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
  // By the row number the hash index gives (sqlite-hash-index.ts), the hash checked.
  getTransaction: `SELECT ${TRANSACTION_COLUMNS} FROM transactions t LEFT JOIN blocks b ON b.number = t.block_number
       WHERE t.seq = ? AND t.tx_hash = ?`,
  // One step of each sealed side's covering index, newest first (0: neither has one; rows are numbered
  // from 1). Pending transactions are in memory (sqlite-pending-history.ts).
  newestAccountSeq: `SELECT max(coalesce((SELECT seq FROM transactions WHERE from_id = ? AND seq < ? AND block_number IS NOT NULL ORDER BY seq DESC LIMIT 1), 0),
       coalesce((SELECT seq FROM transactions WHERE to_id = ? AND seq < ? AND block_number IS NOT NULL ORDER BY seq DESC LIMIT 1), 0))`,
  // The rowid's B-tree, from its last page.
  newestSeq: 'SELECT max(seq) FROM transactions',
  // A seek by row number per entry of the JSON array: the rows the hash index's map names (sqlite-hash-index.ts).
  transactionsBySeq: `SELECT ${TRANSACTION_COLUMNS} FROM transactions t LEFT JOIN blocks b ON b.number = t.block_number
       WHERE t.seq IN (SELECT value FROM json_each(?))`,
  // A seek of the hash index's table per hash of the JSON array (each once), then of the row: the merged ones.
  transactionsByMergedHash: `SELECT ${TRANSACTION_COLUMNS} FROM json_each(?) j
       JOIN transaction_hashes h ON h.prefix = substr(j.value, 3, 16)
       JOIN transactions t ON t.seq = h.seq AND t.tx_hash = j.value LEFT JOIN blocks b ON b.number = t.block_number`,
  // An account's sealed transactions: each side is a range of its covering index read newest first; the
  // compound merges the two in order (dropping a transaction that is both, a mint to its issuer) and
  // stops after `limit`. Pending transactions are in memory (sqlite-pending-history.ts).
  accountHistory: `SELECT t.seq, t.tx_hash FROM (
         SELECT seq FROM transactions WHERE from_id = ? AND seq < ? AND block_number IS NOT NULL
         UNION
         SELECT seq FROM transactions WHERE to_id = ? AND seq < ? AND block_number IS NOT NULL
         ORDER BY seq DESC LIMIT ?
       ) AS page JOIN transactions t ON t.seq = page.seq ORDER BY page.seq DESC`,
  // Pending transactions have no block: no join.
  pendingTransactions: `SELECT ${PENDING_COLUMNS} FROM transactions t WHERE t.status = 'pending' ORDER BY t.seq LIMIT ?`,
  pendingPostings: "SELECT seq, tx_hash, from_id, to_id, amount, token, type, timestamp, min_receive FROM transactions WHERE status = 'pending' ORDER BY seq LIMIT ?",
  pendingCount: "SELECT COUNT(*) AS count FROM transactions WHERE status = 'pending'",
  pendingCountUpTo: "SELECT COUNT(*) AS count FROM (SELECT 1 FROM transactions WHERE status = 'pending' LIMIT ?)",
  confirmRun: "UPDATE transactions SET status = 'confirmed', block_number = ?, position = seq - ? WHERE seq BETWEEN ? AND ? AND status = 'pending'",
  hashAtSeq: 'SELECT tx_hash FROM transactions WHERE seq = ?',
  sealTransactionBySeq: "UPDATE transactions SET status = ?, block_number = ?, position = ?, error = ?, amount_out = ? WHERE seq = ? AND tx_hash = ? AND status = 'pending'",
  balance: 'SELECT units FROM balances WHERE user_id = ? AND token = ?',
  balancesOfUser: 'SELECT token, units FROM balances WHERE user_id = ?',
  latestPrice: 'SELECT native_price FROM blocks ORDER BY number DESC LIMIT 1',
  putBalance: 'INSERT INTO balances (user_id, token, units) VALUES (?, ?, ?) ON CONFLICT (user_id, token) DO UPDATE SET units = excluded.units',
  insertAccount: 'INSERT INTO accounts (user_id) VALUES (?)',
  touchAccount: 'UPDATE accounts SET last_transfer_at = ? WHERE user_id = ?',
  insertBlock: `INSERT INTO blocks (number, hash, parent_hash, timestamp, transactions_count, transactions_root,
         total_transactions, total_users, transfer_volume_totals, native_price, swap_volume_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  latestBlock: `SELECT ${STORED_BLOCK_COLUMNS} FROM blocks WHERE number = (SELECT MAX(number) FROM blocks)`,
  latestBlockNumber: 'SELECT MAX(number) AS number FROM blocks',
  blockAtOrBefore: `SELECT ${STORED_BLOCK_COLUMNS} FROM blocks WHERE timestamp <= ? ORDER BY timestamp DESC, number DESC LIMIT 1`,
  getBlock: `SELECT ${STORED_BLOCK_COLUMNS} FROM blocks WHERE number = ?`,
  historyNode: 'SELECT hash FROM history_nodes WHERE level = ? AND idx = ?',
  historySize: 'SELECT COALESCE(MAX(idx) + 1, 0) FROM history_nodes WHERE level = 0',
  insertHistoryNode: 'INSERT INTO history_nodes (level, idx, hash) VALUES (?, ?, ?)',
  listBlocks: `SELECT ${BLOCK_HEADER_COLUMNS} FROM blocks WHERE number <= ? ORDER BY number DESC LIMIT ?`,
  blockTransactionHashes: 'SELECT tx_hash FROM transactions WHERE block_number = ? ORDER BY position',
  activeUsers: 'SELECT COUNT(*) AS count FROM accounts WHERE last_transfer_at > ?',
  getSetting: 'SELECT value FROM settings WHERE name = ?',
  claimSetting: 'INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING',
  eventHead: 'SELECT last_sequence FROM event_counter WHERE id = 1',
  setEventCounter: 'UPDATE event_counter SET last_sequence = ? WHERE id = 1',
  insertBlockEvents: 'INSERT INTO block_events (number, first_sequence) VALUES (?, ?)',
  // Accepted events read as the pending record (their outcome, if any, is not part of them).
  acceptedEvents: `SELECT t.event_seq, ${PENDING_COLUMNS} FROM transactions t WHERE t.event_seq > ? ORDER BY t.event_seq LIMIT ?`,
  // The block whose events may hold the one after the cursor, then the blocks from it on.
  blockEventsAtOrBefore: 'SELECT number FROM block_events WHERE first_sequence <= ? ORDER BY first_sequence DESC LIMIT 1',
  blockEventsFrom: `SELECT e.first_sequence, ${BLOCK_HEADER_COLUMNS} FROM block_events e JOIN blocks USING (number)
       WHERE e.number >= ? ORDER BY e.number LIMIT ?`,
  // Outcomes of those blocks from the first one after the cursor (position > after − first_sequence in the first block).
  // A row-value bound, so that the index seek starts at the cursor instead of at the first block's first row.
  sealedEventTransactions: `SELECT ${TRANSACTION_COLUMNS} FROM transactions t LEFT JOIN blocks b ON b.number = t.block_number
       WHERE (t.block_number, t.position) > (?, ?) AND t.block_number <= ?
       ORDER BY t.block_number, t.position LIMIT ?`,
  insertBalanceRoot: 'INSERT INTO balance_roots (number, root) VALUES (?, ?)',
  claimBalanceRoot: 'INSERT INTO balance_roots (number, root) VALUES (?, ?) ON CONFLICT (number) DO NOTHING',
  balanceRoot: 'SELECT root FROM balance_roots WHERE number = ?',
  allBalances: 'SELECT user_id, token, units FROM balances WHERE units > 0',
  // The pairs the blocks after one named (an index range of transactions_by_block), with their stored balance;
  // a swap also moves the pool's reserve of the token it pays out.
  balancesTouchedSince: `SELECT b.user_id, b.token, b.units FROM (
         SELECT from_id AS user_id, token FROM transactions WHERE block_number > ?
         UNION SELECT to_id, token FROM transactions WHERE block_number > ?
         UNION SELECT to_id, token_out FROM transactions WHERE block_number > ? AND token_out IS NOT NULL
         UNION SELECT ${POOL_ACCOUNT_SQL}, token_out FROM transactions WHERE block_number > ? AND token_out IS NOT NULL
       ) AS touched JOIN balances b ON b.user_id = touched.user_id AND b.token = touched.token`,
  putCandle: `INSERT INTO price_candles (interval, start, open, high, low, close, volume_usd) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (interval, start) DO UPDATE SET high = excluded.high, low = excluded.low, close = excluded.close, volume_usd = excluded.volume_usd`,
  candleAt: 'SELECT interval, start, open, high, low, close, volume_usd FROM price_candles WHERE interval = ? AND start = ?',
  // The newest `limit` of one interval, read backwards along the primary key, then put oldest first.
  candles: `SELECT * FROM (SELECT interval, start, open, high, low, close, volume_usd FROM price_candles
       WHERE interval = ? ORDER BY start DESC LIMIT ?) ORDER BY start`,
  ping: 'SELECT 1',
  dataVersion: 'PRAGMA data_version',
  // A group commit's durability comes from its own fsync of the WAL (appendDurably), not SQLite's.
  synchronousNormal: 'PRAGMA synchronous = NORMAL',
  synchronousFull: 'PRAGMA synchronous = FULL',
} as const;

function prepareStatements(db: Database.Database) {
  return {
    claimIdempotency: db.prepare(SQL.claimIdempotency),
    findIdempotency: db.prepare(SQL.findIdempotency),
    countIdempotencyKeys: db.prepare(SQL.countIdempotencyKeys),
    pruneIdempotency: db.prepare(SQL.pruneIdempotency),
    insertTransaction: db.prepare(SQL.insertTransaction),
    getTransaction: db.prepare(SQL.getTransaction).safeIntegers(true),
    // Rows as arrays: three columns, no names to build per row; seq stays below 2^53 (assigned one by one).
    accountHistory: db.prepare(SQL.accountHistory).raw(true),
    transactionsBySeq: db.prepare(SQL.transactionsBySeq).safeIntegers(true),
    transactionsByMergedHash: db.prepare(SQL.transactionsByMergedHash).safeIntegers(true),
    newestAccountSeq: db.prepare(SQL.newestAccountSeq).pluck(),
    newestSeq: db.prepare(SQL.newestSeq).pluck(),
    pendingTransactions: db.prepare(SQL.pendingTransactions).safeIntegers(true),
    pendingPostings: db.prepare(SQL.pendingPostings).raw().safeIntegers(true),
    pendingCount: db.prepare(SQL.pendingCount).safeIntegers(true),
    pendingCountUpTo: db.prepare(SQL.pendingCountUpTo).safeIntegers(true),
    sealTransactionBySeq: db.prepare(SQL.sealTransactionBySeq),
    confirmRun: db.prepare(SQL.confirmRun),
    hashAtSeq: db.prepare(SQL.hashAtSeq).pluck(),
    balance: db.prepare(SQL.balance).safeIntegers(true),
    balancesOfUser: db.prepare(SQL.balancesOfUser).safeIntegers(true),
    latestPrice: db.prepare(SQL.latestPrice),
    putBalance: db.prepare(SQL.putBalance),
    insertAccount: db.prepare(SQL.insertAccount),
    touchAccount: db.prepare(SQL.touchAccount),
    insertBlock: db.prepare(SQL.insertBlock),
    latestBlock: db.prepare(SQL.latestBlock),
    latestBlockNumber: db.prepare(SQL.latestBlockNumber),
    blockAtOrBefore: db.prepare(SQL.blockAtOrBefore),
    getBlock: db.prepare(SQL.getBlock),
    historyNode: db.prepare(SQL.historyNode),
    historySize: db.prepare(SQL.historySize),
    insertHistoryNode: db.prepare(SQL.insertHistoryNode),
    listBlocks: db.prepare(SQL.listBlocks),
    blockTransactionHashes: db.prepare(SQL.blockTransactionHashes),
    activeUsers: db.prepare(SQL.activeUsers),
    getSetting: db.prepare(SQL.getSetting),
    claimSetting: db.prepare(SQL.claimSetting),
    eventHead: db.prepare(SQL.eventHead).safeIntegers(true),
    setEventCounter: db.prepare(SQL.setEventCounter),
    insertBlockEvents: db.prepare(SQL.insertBlockEvents),
    acceptedEvents: db.prepare(SQL.acceptedEvents).safeIntegers(true),
    blockEventsAtOrBefore: db.prepare(SQL.blockEventsAtOrBefore).safeIntegers(true),
    blockEventsFrom: db.prepare(SQL.blockEventsFrom),
    sealedEventTransactions: db.prepare(SQL.sealedEventTransactions).safeIntegers(true),
    insertBalanceRoot: db.prepare(SQL.insertBalanceRoot),
    claimBalanceRoot: db.prepare(SQL.claimBalanceRoot),
    balanceRoot: db.prepare(SQL.balanceRoot),
    allBalances: db.prepare(SQL.allBalances).safeIntegers(true),
    balancesTouchedSince: db.prepare(SQL.balancesTouchedSince).safeIntegers(true),
    ping: db.prepare(SQL.ping),
    dataVersion: db.prepare(SQL.dataVersion).pluck(true),
    // Prepared once: db.pragma() prepares its statement on every call (8 us a group commit, both flips).
    synchronousNormal: db.prepare(SQL.synchronousNormal),
    synchronousFull: db.prepare(SQL.synchronousFull),
    putCandle: db.prepare(SQL.putCandle),
    candleAt: db.prepare(SQL.candleAt),
    candles: db.prepare(SQL.candles),
  };
}

/** Also used by the audit reader of this store. */
export function toTransaction(row: TransactionRow): Transaction {
  return {
    tx_hash: row.tx_hash,
    from: row.from_id,
    to: row.to_id,
    amount_units: row.amount,
    token: row.token,
    type: row.type as TransactionType,
    metadata: JSON.parse(row.metadata) as Metadata,
    nonce: row.nonce,
    timestamp: Number(row.timestamp),
    status: row.status as TransactionStatus,
    block_number: row.block_number === null ? null : Number(row.block_number),
    block_hash: row.block_hash,
    position: row.position === null ? null : Number(row.position),
    error: row.error as FailureCode | null,
    min_receive_units: row.min_receive,
    amount_out_units: row.amount_out,
    token_out: row.token_out,
  };
}

function toHeader(row: BlockRow): BlockHeader {
  return {
    number: row.number,
    hash: row.hash,
    parent_hash: row.parent_hash,
    timestamp: row.timestamp,
    transactions_count: row.transactions_count,
    transactions_root: row.transactions_root,
    ...(row.native_price === null ? {} : { native_price: row.native_price }),
  };
}

/** Also used by the audit reader of this store. */
export function toStoredHeader(row: BlockRow): StoredBlockHeader {
  return {
    ...toHeader(row),
    totals: { transactions: row.total_transactions, users: row.total_users, transfer_volume_units: decodeVolumes(row.transfer_volume_totals), ...swapVolume(row.swap_volume_usd) },
  };
}

function toCandle(row: CandleRow): Candle {
  return {
    interval: row.interval as CandleInterval,
    start: row.start,
    open_units: BigInt(row.open),
    high_units: BigInt(row.high),
    low_units: BigInt(row.low),
    close_units: BigInt(row.close),
    volume_usd_micros: BigInt(row.volume_usd),
  };
}

function candleRow(candle: Candle): [string, number, string, string, string, string, string] {
  return [
    candle.interval, candle.start, candle.open_units.toString(), candle.high_units.toString(), candle.low_units.toString(),
    candle.close_units.toString(), candle.volume_usd_micros.toString(),
  ];
}
