/**
 * The store interface, owned by the service layer that uses it (Formance style). The SQLite and
 * PostgreSQL stores implement it, and one contract test suite runs against every implementation.
 * All amounts are bigint base units.
 */
import type { Block, BlockHeader } from '../domain/block.js';
import type { HistoryNode, NodeKey } from '../domain/shared/history-tree.js';
import type { BalanceEntry, Posting } from '../domain/balance-book.js';
import type { FailureCode, Transaction } from '../domain/transaction.js';
import type { Candle, CandleInterval } from '../domain/market/candles.js';
import type { FailureBudgetCharge } from '../failure-budget/failure-budget-policy.js';

/** A pending transaction to append, with its optional idempotency record. */
export type PendingAppend = {
  transaction: Transaction;
  idempotency: { caller: string; key: string; request_hash: string } | null;
  /**
   * Whom an uncovered debit is charged to, and their budget per hour (src/failure-budget): checked and
   * charged inside the append's write transaction. Absent or null: no budget applies (the service always sets it).
   */
  failure_budget?: FailureBudgetCharge | null;
};

export type IdempotencyRecord = {
  caller: string;
  key: string;
  request_hash: string;
  tx_hash: string;
  timestamp: number;
};

/**
 * What happened to one append: stored, an earlier submission already holds its idempotency key, or
 * refused with nothing stored because it is an uncovered debit past its subject's failure budget.
 */
export type AppendResult = { kind: 'stored' } | { kind: 'replay'; record: IdempotencyRecord } | { kind: 'refused'; retry_after_s: number };

/** A (user, token) balance as the store writes and reads it: the balance book's entry. */
export type BalanceChange = BalanceEntry;

export type TransactionOutcome = {
  tx_hash: string;
  /** The store's row number from `pendingPostings`, when known: the store then seals the row by it, checking the hash (SQLite: of each run of consecutive rows, at its two ends). */
  seq?: number;
  position: number;
  status: 'confirmed' | 'failed';
  error: FailureCode | null;
  /** Confirmed swaps: what was paid out (null or absent otherwise). */
  amount_out_units?: bigint | null;
};

/** Running totals as of a block; each block row carries them so statistics never scan history. */
export type ChainTotals = {
  transactions: number;
  users: number;
  /** Cumulative volume of confirmed transfers, by token symbol, in base units. */
  transfer_volume_units: Record<string, bigint>;
  /** Cumulative USD value (micro-dollars) of confirmed swaps, counted on their USDG side (absent: 0, as before the market). */
  swap_volume_usd_micros?: bigint;
};

export type BlockCommit = {
  header: BlockHeader;
  totals: ChainTotals;
  outcomes: TransactionOutcome[];
  balances: BalanceChange[];
  /** Ids seen for the first time: they count towards `total_users`. */
  new_users: string[];
  /** Senders and receivers of this block's confirmed transfers, active as of the block's timestamp. */
  active_users: string[];
  /** The root of the balance commitment after this block (src/domain/shared/balance-commitment.ts); absent: none kept. */
  balance_root?: string | null;
  /** The price candles this block changes (one per interval), to be stored as they are; absent: none. */
  candles?: Candle[];
  /**
   * The transactions this block seals as `pendingPostings` read them, in position order (`postings[i]`
   * is `outcomes[i]`'s): the store takes the block's debits off the pending totals from them instead
   * of reading the sealed rows back. Absent: read back.
   */
  postings?: readonly PendingPosting[];
};

/** The balances as of one block, read in one snapshot: every stored balance, or those the blocks after a given one touched. */
export type BalanceSnapshot = { block_number: number; balances: BalanceChange[] };
/** A user's stored balances by token, and the native price the newest block carries (null: no block yet, or one from before the market). */
export type PricedBalances = { balances: Map<string, bigint>; native_price: string | null };

export type StoredBlockHeader = BlockHeader & { totals: ChainTotals };

/**
 * What sealing needs of a pending transaction, and nothing more: no metadata, nonce or status to read
 * and decode for each of a block's rows. `seq` is the store's row number, for writing the outcome back.
 */
export type PendingPosting = Posting & { seq: number; tx_hash: string; timestamp: number };

/** A transaction's place in an account's history: its row number (the arrival order), its hash, and whether it is sealed (its record final). */
export type HistoryEntry = { seq: number; tx_hash: string; sealed: boolean };
/** Hashes looked up in one `transactionsByHash` at the most (a page of history has at most 101). */
export const TRANSACTIONS_BY_HASH_MAX = 1000;

export type StatsSnapshot = {
  latest: StoredBlockHeader;
  /** The newest block at or before the start of the 24-hour window, if any. */
  window_start: StoredBlockHeader | null;
  active_users_24h: number;
};

/**
 * An event of the ledger's log, derived from what a write transaction stored: a transaction's
 * `event_seq` (its `transaction.accepted`), and a block's first sequence (its transactions' outcomes in
 * position order, then its `block.sealed`). See src/events/event.ts for the order and the encoding.
 */
export type StoredEvent =
  | { sequence: number; type: 'transaction.accepted'; transaction: Transaction }
  | { sequence: number; type: 'transaction.confirmed' | 'transaction.failed'; transaction: Transaction; block_timestamp: number }
  | { sequence: number; type: 'block.sealed'; block: BlockHeader };

/** Events in one read at the most. */
export const EVENT_READ_LIMIT_MAX = 1000;

export interface LedgerStore {
  /**
   * Appends pending transactions in order, in one durable commit. A debit that its sender's sealed
   * balance less pending debits does not cover is charged to its `failure_budget`, or refused past it.
   */
  appendPending(batch: readonly PendingAppend[]): Promise<AppendResult[]>;
  findIdempotency(caller: string, key: string): Promise<IdempotencyRecord | null>;
  /** How many of `keys` (distinct, at most BATCH_TRANSACTIONS_MAX) `caller` has stored, in one query. */
  countIdempotencyKeys(caller: string, keys: readonly string[]): Promise<number>;
  /** Forgets idempotency records created before `before_s`; returns how many. */
  pruneIdempotency(before_s: number): Promise<number>;
  getTransaction(tx_hash: string): Promise<Transaction | null>;
  /**
   * The newest `limit` transactions (pending or sealed) whose `from` or `to` is `user_id`, arrived
   * before `before_seq` (null: from the newest), newest first in arrival order, each once even when
   * it is both: each as its row number, its hash and whether it is sealed. Two index seeks, whatever the
   * depth and the size of the ledger; the records themselves come from `transactionsByHash`, or from
   * serialised sealed records the caller keeps.
   */
  accountHistory(user_id: string, before_seq: number | null, limit: number): Promise<HistoryEntry[]>;
  /**
   * The row number of `user_id`'s newest transaction before `before_seq` (null: none), the first entry
   * `accountHistory` would give: two index seeks, no row read. A transaction stored later has a larger
   * row number on every store (PostgreSQL numbers rows under the event counter's lock, held to commit),
   * so a page whose newest entry is still this one and whose entries are all sealed has not changed.
   */
  newestAccountSeq(user_id: string, before_seq: number | null): Promise<number | null>;
  /** The row number of the ledger's newest transaction (null: none yet); it moves on with every transaction stored, on any instance. */
  newestSeq(): Promise<number | null>;
  /** The transactions among `tx_hashes` (at most TRANSACTIONS_BY_HASH_MAX), in one read, in no particular order; unknown ones are absent. */
  transactionsByHash(tx_hashes: readonly string[]): Promise<Transaction[]>;

  latestBlock(): Promise<StoredBlockHeader | null>;
  /** The newest block's number (null before genesis): what counting blocks needs, without reading the block. */
  latestBlockNumber(): Promise<number | null>;
  /** Oldest first, in arrival order. */
  pendingTransactions(limit: number): Promise<Transaction[]>;
  /** The same transactions as `pendingTransactions`, oldest first, with only the columns sealing needs, in storage order. */
  pendingPostings(limit: number): Promise<PendingPosting[]>;
  pendingCount(): Promise<number>;
  /** Pending transactions counted up to `limit` at most: what deciding a bound needs, at a cost that a larger backlog does not raise. */
  pendingCountUpTo(limit: number): Promise<number>;
  balancesOf(keys: ReadonlyArray<{ user_id: string; token: string }>): Promise<BalanceChange[]>;
  /** Users among `user_ids` that the ledger has seen before. */
  knownUsers(user_ids: readonly string[]): Promise<Set<string>>;
  /**
   * Writes a block and everything it decides in one store transaction, its history-tree nodes included
   * (see src/service/history-writer.ts); fails if the number is taken.
   */
  commitBlock(commit: BlockCommit): Promise<void>;
  /** The stored candles of the given buckets (at most one per key; a missing bucket is absent). */
  candlesAt(keys: ReadonlyArray<{ interval: CandleInterval; start: number }>): Promise<Candle[]>;
  /** The newest `limit` candles of `interval`, oldest first: one index range, whatever the history. */
  candles(interval: CandleInterval, limit: number): Promise<Candle[]>;

  /** The stored history-tree nodes among `keys` (src/domain/shared/history-tree.ts), in one read; absent ones are left out. */
  historyNodes(keys: readonly NodeKey[]): Promise<HistoryNode[]>;
  /** How many blocks the history tree holds (0 … latest block number + 1). */
  historySize(): Promise<number>;
  /** Appends these blocks (the next ones, in order) to the history tree in one transaction: filling in a ledger that predates it. */
  appendHistory(leaves: ReadonlyArray<{ number: number; hash: string }>): Promise<void>;

  balances(user_id: string): Promise<Map<string, bigint>>;
  /** The user's balances and the newest block's native price, read together (one statement on PostgreSQL): what GET /api/balance answers from. */
  pricedBalances(user_id: string): Promise<PricedBalances>;
  /** Every stored balance and the newest block's number, in one snapshot (null before genesis). */
  balanceState(): Promise<BalanceSnapshot | null>;
  /**
   * In one snapshot: the newest block's number and the stored balance of every (user, token) that a
   * transaction sealed in a block after `after_block` names (a pair with no row is absent: zero).
   */
  balanceChangesSince(after_block: number): Promise<BalanceSnapshot>;
  /** The balance root stored for a block (null: none, e.g. a block sealed before balance commitments). */
  balanceRoot(block_number: number): Promise<string | null>;
  /** Stores `root` for a block unless one is stored; returns the stored one. */
  claimBalanceRoot(block_number: number, root: string): Promise<string>;
  getBlock(number: number): Promise<Block | null>;
  /** Blocks with number ≤ `from_number`, newest first. */
  listBlocks(from_number: number, limit: number): Promise<BlockHeader[]>;
  blockTransactionHashes(number: number): Promise<string[]>;
  statsSnapshot(window_start_s: number): Promise<StatsSnapshot | null>;

  /**
   * Up to `limit` (≤ EVENT_READ_LIMIT_MAX) events with sequence > `after`, in sequence order with no
   * gap, all from one consistent view of the store. Events are numbered in commit order by the write
   * transactions themselves (appendPending and commitBlock), so what one read sees is a prefix of the log.
   */
  readEvents(after: number, limit: number): Promise<StoredEvent[]>;
  /** The sequence of the last committed event (0 before the first). */
  eventHead(): Promise<number>;
  /**
   * The last event sequence this handle's own appends took (0 before its first), once durable: a head the
   * event hub may move to without reading it; another writer's may be newer (it tells of its own).
   */
  appendedEventHead(): number;

  /** Ledger-wide settings fixed at creation (e.g. the native symbol the hashes commit to). */
  getSetting(name: string): Promise<string | null>;
  /** Stores `value` unless the setting exists (the first claim wins, even among concurrent ones); returns the stored value. */
  claimSetting(name: string, value: string): Promise<string>;

  ping(): Promise<void>;
  close(): Promise<void>;
}
