/**
 * The block producer: the single writer of the chain. It seals pending transactions, in arrival
 * order, into the next block every `block_interval_ms` (at once again while a full block's worth is
 * waiting), applying them to balances and writing the block and every decision in one store
 * transaction. A broken invariant is a bug: it stops the producer instead of writing a bad block.
 * When several instances share a store, only the holder of the sealer lease runs the loop; the
 * others ask for the lease every `LEASE_RETRY_MS`.
 */
import type { Logger } from 'pino';
import { buildBlock, genesisBlock } from '../domain/block.js';
import { assert, InvariantViolation, StorageUnavailableError } from '../domain/shared/errors.js';
import { formatUnits } from '../domain/shared/amount.js';
import { AccountTokenMap } from '../domain/account-token-map.js';
import { assertSupplyConserved, BalanceBook, supplyDelta, supplyOf, type MarketTerms } from '../domain/balance-book.js';
import { isSystemAccount, POOL_ACCOUNT } from '../domain/system-accounts.js';
import { PRICE_DECIMALS } from '../domain/shared/tokens.js';
import { candleKeys, foldBlock } from '../domain/market/candles.js';
import { POOL_FEE_BPS_DEFAULT, priceOrFallback, priceTextToUnits, swapVolumeUsdMicros } from '../domain/market/pool.js';
import type { BalanceCommitment } from './balance-commitment.js';
import { unixSeconds, type Clock } from './clock.js';
import type { BlockCommit, ChainTotals, LedgerStore, PendingPosting, StoredBlockHeader, TransactionOutcome } from './ledger-store.js';
import { SoleSealerLease, type SealerLease } from './sealer-lease.js';

export type BlockProducerOptions = {
  block_interval_ms: number;
  block_txs_max: number;
  /** The pair, the pool's fee and the price while a reserve is empty; absent: TAB/USDG, 30 bps, 1 USD. */
  market?: MarketOptions;
};

export type MarketOptions = MarketTerms & { fallback_price_units: bigint };

const DEFAULT_MARKET: MarketOptions = { native: 'TAB', usdg: 'USDG', fee_bps: POOL_FEE_BPS_DEFAULT, fallback_price_units: 10n ** BigInt(PRICE_DECIMALS) };

/** What one seal did: its size, how long it took, and how many transactions ended each way. */
export type SealedBlockSummary = {
  block_number: number;
  transactions: number;
  duration_ms: number;
  /** How many transactions ended each way, e.g. { type: 'transfer', status: 'failed', error: 'insufficient_funds', count: 3 } (error 'none' when confirmed). */
  outcomes: OutcomeCount[];
};

export type OutcomeCount = { type: string; status: string; error: string; count: number };

/** Told about every block sealed (e.g. the metrics). */
export type BlockSealObserver = { blockSealed(summary: SealedBlockSummary): void };

const NO_OBSERVER: BlockSealObserver = { blockSealed: () => undefined };

/** After a store error the producer waits this long, doubling up to the cap, before trying again. */
const RETRY_DELAY_MS_MIN = 100;
const RETRY_DELAY_MS_MAX = 5000;
/** How often an instance that does not hold the sealer lease asks for it again. */
export const LEASE_RETRY_MS = 1000;

export class BlockProducer {
  private readonly store: LedgerStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly options: BlockProducerOptions;
  private readonly market: MarketOptions;
  private readonly lease: SealerLease;
  private leading = false;
  private readonly observer: BlockSealObserver;
  private readonly commitment: BalanceCommitment | null;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private running = false;
  private sealing: Promise<StoredBlockHeader | null> | null = null;
  private retry_delay_ms = RETRY_DELAY_MS_MIN;
  /** Set when an invariant broke: the producer will not seal again in this process. */
  halted: InvariantViolation | null = null;

  constructor(
    store: LedgerStore,
    clock: Clock,
    logger: Logger,
    options: BlockProducerOptions,
    collaborators: { lease?: SealerLease; observer?: BlockSealObserver; commitment?: BalanceCommitment } = {},
  ) {
    this.store = store;
    this.clock = clock;
    this.logger = logger;
    this.options = options;
    this.market = options.market ?? DEFAULT_MARKET;
    this.lease = collaborators.lease ?? new SoleSealerLease();
    this.observer = collaborators.observer ?? NO_OBSERVER;
    this.commitment = collaborators.commitment ?? null;
  }

  /**
   * Writes block 0 when the chain is empty. Instances that start together may race for it: the store
   * takes one genesis block, and the others find it when their own write is refused.
   */
  async ensureGenesis(): Promise<StoredBlockHeader> {
    const latest = await this.store.latestBlock();
    if (latest !== null) return latest;
    const header = genesisBlock(unixSeconds(this.clock), formatUnits(this.market.fallback_price_units, PRICE_DECIMALS));
    const totals: ChainTotals = { transactions: 0, users: 0, transfer_volume_units: {} };
    try {
      await this.store.commitBlock({ header, totals, outcomes: [], balances: [], new_users: [], active_users: [], candles: [] });
    } catch (error) {
      const written = await this.store.latestBlock();
      if (written === null) throw error;
      this.logger.info({ block_number: written.number, hash: written.hash }, 'another instance wrote the genesis block');
      return written;
    }
    this.logger.info({ block_number: 0, hash: header.hash }, 'genesis block written');
    return { ...header, totals };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  /** Stops the timer and waits for a turn of the loop (a seal) in progress. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.ticking !== null) await this.ticking;
    if (this.sealing !== null) await this.sealing.catch(() => null);
  }

  /** Seals until nothing is pending, or `blocks_max` blocks (used at shutdown and by tests). */
  async drain(blocks_max = Number.POSITIVE_INFINITY): Promise<void> {
    for (let sealed = 0; sealed < blocks_max && (await this.sealNext()) !== null; sealed += 1);
  }

  /** Seals one block from what is pending; null when nothing is. Never runs two seals at once. */
  async sealNext(): Promise<StoredBlockHeader | null> {
    while (this.sealing !== null) await this.sealing.catch(() => null);
    if (this.halted !== null) throw this.halted;
    this.sealing = this.seal();
    try {
      return await this.sealing;
    } finally {
      this.sealing = null;
    }
  }

  private schedule(delay_ms: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = null;
      });
    }, delay_ms);
  }

  private async tick(): Promise<void> {
    this.timer = null;
    if (!(await this.holdLease())) {
      this.schedule(LEASE_RETRY_MS);
      return;
    }
    if (!this.running) return;
    try {
      const header = await this.sealNext();
      this.retry_delay_ms = RETRY_DELAY_MS_MIN;
      const full = header !== null && header.transactions_count >= this.options.block_txs_max;
      this.schedule(full ? 0 : this.options.block_interval_ms);
    } catch (error) {
      if (error instanceof InvariantViolation) {
        this.halted = error;
        this.running = false;
        this.logger.fatal({ err: error }, 'block producer halted: an invariant broke');
        return;
      }
      // A storage fault is logged once a minute by the store's health; anything else every time.
      const level = error instanceof StorageUnavailableError ? 'debug' : 'error';
      this.logger[level]({ err: error, retry_in_ms: this.retry_delay_ms }, 'sealing failed; will retry');
      this.schedule(this.retry_delay_ms);
      this.retry_delay_ms = Math.min(this.retry_delay_ms * 2, RETRY_DELAY_MS_MAX);
    }
  }

  /** Asks for the sealer lease; a store error counts as not holding it. Logs every change of hands. */
  private async holdLease(): Promise<boolean> {
    let held = false;
    try {
      held = await this.lease.acquire();
    } catch (error) {
      this.logger.warn({ err: error, retry_in_ms: LEASE_RETRY_MS }, 'cannot ask for the sealer lease; will retry');
    }
    if (held && !this.leading) this.logger.info('sealer lease acquired: this instance seals blocks');
    if (!held && this.leading) this.logger.warn('sealer lease lost: another instance may seal blocks');
    this.leading = held;
    return held;
  }

  private async seal(): Promise<StoredBlockHeader | null> {
    const started_ms = performance.now();
    const parent = await this.store.latestBlock();
    assert(parent !== null, 'the chain has a genesis block before sealing');
    const pending = await this.store.pendingPostings(this.options.block_txs_max);
    if (pending.length === 0) return null;
    // A synchronous store (SQLite) holds the event loop for each step of a large block: let requests
    // in between. Safe: this producer is the only writer of blocks, balances and outcomes.
    await yieldToEventLoop();
    const commit = await this.decide(parent, pending);
    // The balance commitment's step: the root after this block, kept by the commitment once written.
    const prepared = this.commitment === null ? null : await this.commitment.prepare(parent.number, commit.balances);
    commit.balance_root = prepared?.balance_root ?? null;
    await yieldToEventLoop();
    // The loop seals only while holding the lease: one lost while deciding (a partition noticed by the
    // lease's heartbeat) means another instance may seal now. Explicit drains are their caller's call.
    if (this.running && !this.lease.held()) {
      this.logger.warn({ block_number: commit.header.number }, 'sealer lease lost while sealing: the block is not written');
      return null;
    }
    await this.store.commitBlock(commit);
    prepared?.written();
    const duration_ms = performance.now() - started_ms;
    this.logger.debug({ block_number: commit.header.number, transactions: pending.length, duration_ms }, 'block sealed');
    this.observer.blockSealed({ block_number: commit.header.number, transactions: pending.length, duration_ms, outcomes: countOutcomes(pending, commit.outcomes) });
    return { ...commit.header, totals: commit.totals };
  }

  /** Applies `pending` in order to the current balances and builds the block that records it all. */
  private async decide(parent: StoredBlockHeader, pending: readonly PendingPosting[]): Promise<BlockCommit> {
    const keys = this.balanceKeys(pending);
    const book = new BalanceBook(await this.store.balancesOf(keys), this.market);
    const supply_before = supplyOf(book, keys);
    const outcomes: TransactionOutcome[] = [];
    const supply_change = new Map<string, bigint>();
    const volume = { ...parent.totals.transfer_volume_units };
    let swap_volume = 0n;
    const participants = new Set<string>();
    const active_users = new Set<string>();
    pending.forEach((tx, position) => {
      const outcome = book.apply(tx);
      outcomes.push({ tx_hash: tx.tx_hash, seq: tx.seq, position, status: outcome.status, error: outcome.error, amount_out_units: outcome.amount_out_units ?? null });
      if (outcome.status !== 'confirmed') return;
      supply_change.set(tx.token, (supply_change.get(tx.token) ?? 0n) + supplyDelta(tx));
      addUser(participants, tx.from);
      addUser(participants, tx.to);
      if (tx.type === 'swap') swap_volume += swapVolumeUsdMicros(tx.token === this.market.usdg ? tx.amount_units : outcome.amount_out_units ?? 0n);
      if (tx.type !== 'transfer') return;
      volume[tx.token] = (volume[tx.token] ?? 0n) + tx.amount_units;
      addUser(active_users, tx.from);
      addUser(active_users, tx.to);
    });
    assertSupplyConserved(supply_before, supplyOf(book, keys), supply_change);
    const known = await this.store.knownUsers([...participants]);
    const new_users = [...participants].filter((user_id) => !known.has(user_id));
    const price_after = priceOrFallback({ native_units: book.get(POOL_ACCOUNT, this.market.native), usdg_units: book.get(POOL_ACCOUNT, this.market.usdg) }, this.market.fallback_price_units);
    const header = buildBlock(parent, pending.map((tx) => tx.tx_hash), unixSeconds(this.clock), formatUnits(price_after, PRICE_DECIMALS));
    assert(header.number === parent.number + 1, 'block numbers are consecutive');
    const totals: ChainTotals = {
      transactions: parent.totals.transactions + pending.length,
      users: parent.totals.users + new_users.length,
      transfer_volume_units: volume,
    };
    // Absent while 0, as the stores read it back (see ChainTotals).
    const swap_volume_total = (parent.totals.swap_volume_usd_micros ?? 0n) + swap_volume;
    if (swap_volume_total > 0n) totals.swap_volume_usd_micros = swap_volume_total;
    const price_before = parent.native_price == null ? this.market.fallback_price_units : priceTextToUnits(parent.native_price);
    const move = { timestamp: header.timestamp, price_before_units: price_before, price_after_units: price_after, volume_usd_micros: swap_volume };
    const candles = foldBlock(await this.store.candlesAt(candleKeys(header.timestamp)), move);
    return { header, totals, outcomes, balances: book.changed(), new_users, active_users: [...active_users], candles, postings: pending };
  }

  /** Every (user, token) the block may touch: both sides in its token, a swap's receiver in both, and the pool's reserves. */
  private balanceKeys(pending: readonly PendingPosting[]): Array<{ user_id: string; token: string }> {
    const keys = new AccountTokenMap<{ user_id: string; token: string }>();
    const add = (user_id: string, token: string): void => {
      if (keys.get(user_id, token) === undefined) keys.set(user_id, token, { user_id, token });
    };
    add(POOL_ACCOUNT, this.market.native);
    add(POOL_ACCOUNT, this.market.usdg);
    for (const tx of pending) {
      add(tx.from, tx.token);
      add(tx.to, tx.token);
      if (tx.type === 'swap') add(tx.to, tx.token === this.market.native ? this.market.usdg : this.market.native);
    }
    return [...keys.values()];
  }
}

/** Adds a user (not a system account) to a block's set; called per sealed transaction, so no array is built to loop over. */
function addUser(users: Set<string>, user_id: string): void {
  if (!isSystemAccount(user_id)) users.add(user_id);
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The block's outcomes counted by type, status and error: a handful of kinds, found by a scan of the
 * few counted so far (no key built per transaction: a block holds up to BLOCK_TXS_MAX of them).
 */
function countOutcomes(pending: readonly PendingPosting[], outcomes: readonly TransactionOutcome[]): OutcomeCount[] {
  const counts: OutcomeCount[] = [];
  for (let index = 0; index < outcomes.length; index += 1) {
    const outcome = outcomes[index] as TransactionOutcome;
    countOf(counts, (pending[index] as PendingPosting).type, outcome.status, outcome.error ?? 'none').count += 1;
  }
  return counts;
}

/** The entry of `counts` for this kind of outcome, added at zero if it is the first of its kind. */
function countOf(counts: OutcomeCount[], type: string, status: string, error: string): OutcomeCount {
  for (const counted of counts) if (counted.type === type && counted.status === status && counted.error === error) return counted;
  const counted = { type, status, error, count: 0 };
  counts.push(counted);
  return counted;
}
