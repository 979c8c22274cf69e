/**
 * The ledger's use cases: submit, look up, prove, page, and summarise. Everything here speaks domain
 * types and throws typed errors; the HTTP layer turns both into JSON and status codes.
 */
import type { Block, BlockHeader } from '../domain/block.js';
import type { InclusionProofRecord } from '../domain/shared/chain-hashes.js';
import { canonicalJson } from '../domain/shared/canonical-json.js';
import { assert, BudgetExceededError, ConflictError, LedgerError, ForbiddenError, InvalidRequestError, NotFoundError, StorageUnavailableError } from '../domain/shared/errors.js';
import { pendingTransaction, sha256, transactionsAuditPath } from '../domain/hashing.js';
import { bytesToHex } from '../domain/shared/hex.js';
import { utf8Bytes } from '../domain/shared/encoding.js';
import { parseTransactionRequest, type Transaction, type TransactionBody, type TransactionRequest } from '../domain/transaction.js';
import { parseAmount } from '../domain/shared/amount.js';
import { isSystemAccount, POOL_ACCOUNT } from '../domain/system-accounts.js';
import { usdMicros, type TokenRegistry } from '../domain/shared/tokens.js';
import type { BalanceProofJson } from '../domain/shared/balance-commitment.js';
import type { BalanceCommitment } from './balance-commitment.js';
import { CANDLE_LIMIT_MAX, type Candle, type CandleInterval } from '../domain/market/candles.js';
import { POOL_FEE_BPS_DEFAULT, poolPriceUnits, priceTextToUnits, swapAmountOut, swapFee, type Reserves } from '../domain/market/pool.js';
import { BlockHeaderCache } from './block-header-cache.js';
import { NewestStateCache } from './newest-state-cache.js';
import { unixSeconds, type Clock } from './clock.js';
import type { FailureBudgetCharge } from '../failure-budget/failure-budget-policy.js';
import type { AppendResult, HistoryEntry, IdempotencyRecord, LedgerStore, PendingAppend } from './ledger-store.js';
import { NoncePool } from './nonce-pool.js';
import type { SubmissionWriter } from './submission-writer.js';

/** Who is calling, from a verified token. */
export type Principal = { sub: string; admin: boolean };

export type SubmitReceipt = { tx_hash: string; status: 'pending'; timestamp: number };
export type SubmitResult = { receipt: SubmitReceipt; replayed: boolean };

/** One item of a batch submission: a request body and its optional idempotency key. */
export type BatchItem = { body: TransactionBody; idempotency_key: string | undefined };
/** What became of one batch item: a receipt, or the error that refused it (nothing stored for it). */
export type BatchItemOutcome = { ok: true; result: SubmitResult } | { ok: false; error: unknown };

export type Balances = { user_id: string; native_units: bigint; usdg_units: bigint; total_usd_micros: bigint };

export type BlockPage = { blocks: BlockHeader[]; total: number; limit: number; offset: number };


/**
 * A page of an account's history, newest first, as each transaction's entry (its records come from
 * `transactionsByHash`, or from serialised sealed records kept by the caller); `next_before_seq` is the
 * arrival position to read the next (older) page from, or null when there is none.
 */
export type AccountHistoryPage = { user_id: string; entries: HistoryEntry[]; next_before_seq: number | null };

export type Stats = {
  total_transactions: number;
  total_users: number;
  native_price_units: bigint;
  trading_volume_24h_micros: bigint;
  active_users_24h: number;
  latest_block_number: number;
};

/** The market as of one block: the pool's fee, its reserves and the price after that block. */
export type MarketState = { fee_bps: number; reserves: Reserves; price_units: bigint; block_number: number };

/** Reads of the market retried while blocks are sealed between them (then the last read is answered). */
const MARKET_READ_ATTEMPTS = 5;

/** A quote: what a swap of `amount_units` of `token` would receive now, its fee, and the price before and after. */
export type Quote = {
  token: string;
  amount_units: bigint;
  token_out: string;
  amount_out_units: bigint;
  fee_units: bigint;
  price_units: bigint;
  price_after_units: bigint;
};

export const IDEMPOTENCY_KEY_LENGTH_MAX = 255;
export const IDEMPOTENCY_RETENTION_S = 48 * 3600;
export const BLOCK_PAGE_LIMIT_MAX = 100;
/** Pages of blocks kept for the newest block (by limit and offset). */
export const BLOCK_PAGES_KEPT_MAX = 1_000;
export const HISTORY_PAGE_LIMIT_MAX = 100;
/** Transactions in one batch submission at the most. */
export const BATCH_TRANSACTIONS_MAX = 1000;
const WINDOW_S = 24 * 3600;
const NONCE_BYTES = 16;

export type LedgerServiceOptions = {
  /** NATIVE_PRICE_USD: the price while a pool reserve is empty, and before any block carried one. */
  native_price_units: bigint;
  /** The pool's fee, for quotes (the sealer applies the same); absent: the default. */
  pool_fee_bps?: number;
  /** FAILURE_BUDGET_PER_HOUR: uncovered debits one subject may submit per clock hour (src/failure-budget). */
  failure_budget_per_hour: number;
  /** Whether the store currently refuses writes (readiness fails while it does); absent: never. */
  storage?: { readonly failing: boolean };
  /** Proves balances against the balance root of the newest block; absent: proofs are not offered. */
  balance_commitment?: BalanceCommitment;
  /** The bound on transactions waiting to be sealed (src/backpressure); absent: none. */
  backlog?: { hasRoom(items: number): boolean; admit(items: number): void; settle(admitted: number, stored: number): void };
};

/** Balances as of a sealed block, with the proof of each against that block's balance root. */
export type ProvenBalances = { balances: Balances; proof: BalanceProofJson };

export class LedgerService {
  private readonly store: LedgerStore;
  private readonly writer: SubmissionWriter;
  private readonly tokens: TokenRegistry;
  private readonly clock: Clock;
  private readonly options: LedgerServiceOptions;
  private readonly nonces = new NoncePool(NONCE_BYTES);
  private readonly block_headers: BlockHeaderCache;
  /** Each account's balances as of the newest block they were read at (newest-state-cache.ts). */
  private readonly balances_by_user = new NewestStateCache<Balances>();
  /**
   * Each page of blocks (by limit and offset) as of the newest block it was read at: until the next
   * block every request for it gets the same object, so the route writes its JSON once.
   */
  private readonly block_pages = new NewestStateCache<BlockPage>(BLOCK_PAGES_KEPT_MAX);
  /** Each account's newest transaction (by the cursor before it) as of the ledger's newest transaction it was read at. */
  private readonly newest_account_seqs = new NewestStateCache<number | null>();
  /**
   * The last statistics, valid while neither the second nor the newest block has changed. It holds the
   * computation itself, so requests that arrive while it runs share it instead of each starting one.
   */
  private stats_memo: { now_s: number; latest_block_number: number; stats: Promise<Stats> } | null = null;

  constructor(store: LedgerStore, writer: SubmissionWriter, tokens: TokenRegistry, clock: Clock, options: LedgerServiceOptions) {
    this.store = store;
    this.writer = writer;
    this.tokens = tokens;
    this.clock = clock;
    this.options = options;
    this.block_headers = new BlockHeaderCache();
  }

  /**
   * Submits one transaction. Its idempotency key, if any, is claimed in the commit that stores it, and
   * the store answers a key already held with the record stored under it (a replay): a new key costs
   * no read of its own (a look-up outside a transaction was most of what a key added on SQLite,
   * docs/performance.md).
   */
  async submit(principal: Principal, body: TransactionBody, idempotency_key: string | undefined): Promise<SubmitResult> {
    const request = parseTransactionRequest(body, this.tokens);
    authorize(principal, request);
    const claim = idempotency_key === undefined ? null : idempotencyClaim(principal, idempotency_key, request);
    const transaction = this.createTransaction(request);
    const [result] = await this.appendOrReplay([{ transaction, idempotency: claim, failure_budget: this.chargeTo(principal) }]);
    assert(result !== undefined, 'one answer for one append');
    if (result.kind === 'replay') return replay(result.record, claim?.request_hash ?? '');
    if (result.kind === 'refused') throw new BudgetExceededError(result.retry_after_s);
    return receiptOf(transaction);
  }

  /**
   * Submits many transactions at once: each is validated, authorized and checked for idempotency on
   * its own (its key claimed in the commit, as a single submission's), and every valid one is stored
   * durably in one commit before this resolves. An invalid item gets its own error and stores nothing;
   * a store failure rejects the whole batch (nothing of it is stored).
   */
  async submitBatch(principal: Principal, items: readonly BatchItem[]): Promise<BatchItemOutcome[]> {
    assert(items.length <= BATCH_TRANSACTIONS_MAX, 'the HTTP edge limits the size of a batch');
    const outcomes: BatchItemOutcome[] = new Array(items.length);
    const appends: PendingAppend[] = [];
    const appended: Array<{ index: number; transaction: Transaction; request_hash: string }> = [];
    for (let index = 0; index < items.length; index += 1) {
      const item = items[index] as BatchItem;
      try {
        const request = parseTransactionRequest(item.body, this.tokens);
        authorize(principal, request);
        const claim = item.idempotency_key === undefined ? null : idempotencyClaim(principal, item.idempotency_key, request, 'idempotency_key');
        const transaction = this.createTransaction(request);
        appends.push({ transaction, idempotency: claim, failure_budget: this.chargeTo(principal) });
        appended.push({ index, transaction, request_hash: claim?.request_hash ?? '' });
      } catch (error) {
        // A typed error refuses this item alone; anything else is a bug and fails the batch before anything is stored.
        if (!(error instanceof LedgerError)) throw error;
        outcomes[index] = { ok: false, error };
      }
    }
    const results = await this.appendOrReplay(appends);
    results.forEach((result, position) => {
      const { index, transaction, request_hash } = appended[position] as (typeof appended)[number];
      outcomes[index] = outcomeOf(result, transaction, request_hash);
    });
    return outcomes;
  }

  /**
   * Appends `appends` in one commit, holding their places in the pending backlog (PENDING_MAX) until
   * the store has answered. Past PENDING_MAX, or while the store takes no writes, they are refused
   * whole, storing nothing — unless every one of them repeats a request already stored under its key:
   * then they are answered from what is stored (replays; not counted as the backlog's refusals).
   */
  private async appendOrReplay(appends: readonly PendingAppend[]): Promise<AppendResult[]> {
    if (this.options.backlog?.hasRoom(appends.length) === false) {
      const repeats = await this.storedRepeats(appends);
      if (repeats !== null) return repeats;
    }
    try {
      return await this.appendHeld(appends);
    } catch (error) {
      if (!(error instanceof StorageUnavailableError)) throw error;
      const repeats = await this.storedRepeats(appends).catch((read_error: unknown) => {
        if (read_error instanceof StorageUnavailableError) return null;
        throw read_error;
      });
      if (repeats === null) throw error;
      return repeats;
    }
  }

  private async appendHeld(appends: readonly PendingAppend[]): Promise<AppendResult[]> {
    this.options.backlog?.admit(appends.length);
    let results: AppendResult[] = [];
    try {
      results = await this.writer.appendMany(appends);
    } finally {
      this.options.backlog?.settle(appends.length, results.filter((result) => result.kind === 'stored').length);
    }
    return results;
  }

  /** Each append's record stored under its key, as replays; null as soon as one has no key or nothing stored under it. */
  private async storedRepeats(appends: readonly PendingAppend[]): Promise<AppendResult[] | null> {
    const repeats: AppendResult[] = [];
    for (const { idempotency } of appends) {
      const record = idempotency === null ? null : await this.store.findIdempotency(idempotency.caller, idempotency.key);
      if (record === null) return null;
      repeats.push({ kind: 'replay', record });
    }
    return repeats;
  }

  /** Uncovered debits are charged to the token's subject, admins included. */
  private chargeTo(principal: Principal): FailureBudgetCharge {
    return { subject: principal.sub, per_hour: this.options.failure_budget_per_hour };
  }

  /**
   * How many distinct keys among `keys` the caller has already stored: items carrying them write
   * nothing (a replay, or 422 for another body). Lets a retried batch be charged only for what is new.
   */
  async storedIdempotencyKeyCount(principal: Principal, keys: readonly string[]): Promise<number> {
    return this.store.countIdempotencyKeys(principal.sub, keys.slice(0, BATCH_TRANSACTIONS_MAX));
  }

  private createTransaction(request: TransactionRequest): Transaction {
    const preimage = {
      from: request.from,
      to: request.to,
      amount_units: request.amount_units,
      token: request.token.symbol,
      type: request.type,
      metadata: request.metadata,
      nonce: this.nonces.next(),
      timestamp: unixSeconds(this.clock),
      ...(request.type === 'swap' ? { min_receive_units: request.min_receive_units ?? null } : {}),
    };
    return pendingTransaction(preimage, request.type === 'swap' ? this.tokens.other(request.token).symbol : null);
  }

  async transaction(tx_hash: string): Promise<Transaction> {
    const transaction = await this.store.getTransaction(tx_hash);
    if (transaction === null) throw new NotFoundError('transaction_not_found', `no transaction has hash ${tx_hash}`);
    return transaction;
  }

  async proof(tx_hash: string): Promise<InclusionProofRecord> {
    const transaction = await this.transaction(tx_hash);
    if (transaction.block_number === null || transaction.position === null || transaction.block_hash === null) {
      throw new NotFoundError('transaction_not_sealed', `transaction ${tx_hash} is pending; its proof exists once it is in a block`);
    }
    const block = await this.block(transaction.block_number);
    return {
      tx_hash,
      block_number: block.number,
      block_hash: block.hash,
      transactions_root: block.transactions_root,
      leaf_index: transaction.position,
      tree_size: block.transactions.length,
      audit_path: transactionsAuditPath(block.transactions, transaction.position),
    };
  }

  /**
   * `user_id`'s sealed balances, valued at the newest block's price. Both change only when a block is
   * sealed: read once per newest block (the newest block's number is read first, so a balance read
   * meanwhile is as new as it or newer, never older).
   */
  async balances(user_id: string): Promise<Balances> {
    const newest_block_number = await this.store.latestBlockNumber();
    const kept = this.balances_by_user.get(user_id, newest_block_number);
    if (kept !== undefined) return kept;
    const { balances, native_price } = await this.store.pricedBalances(user_id);
    const native_units = balances.get(this.tokens.native.symbol) ?? 0n;
    const usdg_units = balances.get(this.tokens.usdg.symbol) ?? 0n;
    const read = { user_id, native_units, usdg_units, total_usd_micros: usdMicros(native_units, usdg_units, this.priceOf({ native_price })) };
    this.balances_by_user.set(user_id, newest_block_number, read);
    return read;
  }

  /**
   * `user_id`'s balances in the ledger's two tokens as of the newest sealed block, each with its proof
   * (membership, or absence for a zero balance) against that block's balance root. The balances come
   * from the proven state itself, so they and the proof always agree, whatever is sealed meanwhile.
   */
  async provenBalances(user_id: string): Promise<ProvenBalances> {
    const commitment = this.options.balance_commitment;
    assert(commitment !== undefined, 'the composition gives the service its balance commitment');
    const proof = await commitment.prove(user_id, [this.tokens.native.symbol, this.tokens.usdg.symbol]);
    const units = (symbol: string): bigint => BigInt(proof.entries.find((entry) => entry.token === symbol)?.units ?? '0');
    const native_units = units(this.tokens.native.symbol);
    const usdg_units = units(this.tokens.usdg.symbol);
    const balances = { user_id, native_units, usdg_units, total_usd_micros: usdMicros(native_units, usdg_units, this.options.native_price_units) };
    return { balances, proof };
  }

  /**
   * The transactions `user_id` sent or received (pending ones included), newest first in arrival
   * order, before the position `before_seq` (null: from the newest). An unknown account has none.
   */
  async accountHistory(user_id: string, before_seq: number | null, limit: number): Promise<AccountHistoryPage> {
    assert(Number.isInteger(limit) && limit >= 1 && limit <= HISTORY_PAGE_LIMIT_MAX, 'the HTTP edge limits the size of a page');
    // One more than the page: whether it exists says whether there is an older page.
    const found = await this.store.accountHistory(user_id, before_seq, limit + 1);
    const entries = found.slice(0, limit);
    const last = entries.at(-1);
    const next_before_seq = found.length > limit && last !== undefined ? last.seq : null;
    return { user_id, entries, next_before_seq };
  }

  /**
   * The row number of the account's newest transaction before `before_seq` (null: none): what says
   * whether a kept page of its history still holds. Read from the store, unless it was read after the
   * ledger's newest transaction was the one it still is: then no transaction was stored since, on any
   * instance (a transaction stored later has a larger row number), and the account's is unchanged.
   */
  async newestAccountSeq(user_id: string, before_seq: number | null): Promise<number | null> {
    const ledger_newest = await this.store.newestSeq();
    const key = `${before_seq ?? ''}:${user_id}`;
    const kept = this.newest_account_seqs.get(key, ledger_newest);
    if (kept !== undefined) return kept;
    const newest = await this.store.newestAccountSeq(user_id, before_seq);
    this.newest_account_seqs.set(key, ledger_newest, newest);
    return newest;
  }

  /**
   * The transactions `tx_hashes` name (hashes the store gave: of a history page), in the same order, in
   * one read. Transactions are never deleted, so every one is found.
   */
  async transactionsByHash(tx_hashes: readonly string[]): Promise<Transaction[]> {
    const found = new Map((await this.store.transactionsByHash(tx_hashes)).map((transaction) => [transaction.tx_hash, transaction]));
    return tx_hashes.map((tx_hash) => {
      const transaction = found.get(tx_hash);
      assert(transaction !== undefined, 'a transaction the store named is still stored');
      return transaction;
    });
  }

  async blocks(limit: number, offset: number): Promise<BlockPage> {
    const latest_number = await this.store.latestBlockNumber();
    const total = latest_number === null ? 0 : latest_number + 1;
    if (offset >= total) return { blocks: [], total, limit, offset };
    const page_key = `${limit}:${offset}`;
    const kept = this.block_pages.get(page_key, latest_number);
    if (kept !== undefined) return kept;
    // Newest first: offset k starts at block number latest − k, an index seek whatever k is; sealed
    // headers never change, so a page read once is served from memory after.
    const from_number = total - 1 - offset;
    const blocks = this.block_headers.page(from_number, limit) ?? this.block_headers.remember(await this.store.listBlocks(from_number, limit));
    const page = { blocks, total, limit, offset };
    this.block_pages.set(page_key, latest_number, page);
    return page;
  }

  async block(number: number): Promise<Block> {
    const block = await this.store.getBlock(number);
    if (block === null) throw new NotFoundError('block_not_found', `no block has number ${number}`);
    return block;
  }

  /** The balance root stored for block `number` (null: sealed before balance commitments). */
  async balanceRoot(number: number): Promise<string | null> {
    const root = await this.store.balanceRoot(number);
    if (root !== null) return root;
    if ((await this.store.latestBlockNumber() ?? -1) < number) throw new NotFoundError('block_not_found', `no block has number ${number}`);
    return null;
  }

  /**
   * Statistics depend only on the current second and on the chain (which changes only when a block is
   * sealed), so within one second and one newest block they are computed once; the check costs one
   * index seek, while counting the last 24 h's active users grows with them. Concurrent requests share
   * one computation (on PostgreSQL, 64 of them would otherwise each count the active users at every
   * new second).
   */
  async stats(): Promise<Stats> {
    const now_s = unixSeconds(this.clock);
    const latest_block_number = (await this.store.latestBlockNumber()) ?? -1;
    const memo = this.stats_memo;
    if (memo !== null && memo.now_s === now_s && memo.latest_block_number === latest_block_number) return memo.stats;
    const entry = { now_s, latest_block_number, stats: this.computeStats(now_s) };
    this.stats_memo = entry;
    try {
      const stats = await entry.stats;
      // Only keep what is known to match the block seen before computing.
      if (stats.latest_block_number !== latest_block_number) this.forgetStats(entry);
      return stats;
    } catch (error) {
      this.forgetStats(entry);
      throw error;
    }
  }

  private forgetStats(entry: NonNullable<LedgerService['stats_memo']>): void {
    if (this.stats_memo === entry) this.stats_memo = null;
  }

  private async computeStats(now_s: number): Promise<Stats> {
    const snapshot = await this.store.statsSnapshot(now_s - WINDOW_S);
    const latest = snapshot?.latest;
    // Trading volume: the USD value of the swaps sealed in the window, on their USDG side (CONTRACT decision, docs/api.md).
    const swap_volume = (latest?.totals.swap_volume_usd_micros ?? 0n) - (snapshot?.window_start?.totals.swap_volume_usd_micros ?? 0n);
    return {
      total_transactions: latest?.totals.transactions ?? 0,
      total_users: latest?.totals.users ?? 0,
      native_price_units: this.priceOf(latest ?? null),
      trading_volume_24h_micros: swap_volume,
      active_users_24h: snapshot?.active_users_24h ?? 0,
      latest_block_number: latest?.number ?? 0,
    };
  }

  /** The price after `block` (the newest one): what it carries, or NATIVE_PRICE_USD for a block from before the market. */
  private priceOf(block: Pick<BlockHeader, 'native_price'> | null): bigint {
    return block?.native_price == null ? this.options.native_price_units : priceTextToUnits(block.native_price);
  }

  /** What swapping `amount` of `token` would give against the reserves as of the newest block (not binding). */
  async quote(token_symbol: unknown, amount: unknown): Promise<Quote> {
    const token = this.tokens.resolve(token_symbol);
    const amount_units = parseAmount(amount, token.decimals);
    const token_out = this.tokens.other(token);
    const reserves = await this.reserves();
    const price_units = this.priceOf(await this.store.latestBlock());
    const reserve_in = token.kind === 'native' ? reserves.native_units : reserves.usdg_units;
    const reserve_out = token.kind === 'native' ? reserves.usdg_units : reserves.native_units;
    if (reserve_in === 0n || reserve_out === 0n) throw new ConflictError('market_unavailable', 'the pool has an empty reserve: no swap can be made now');
    const fee_bps = this.options.pool_fee_bps ?? POOL_FEE_BPS_DEFAULT;
    const amount_out_units = swapAmountOut(reserve_in, reserve_out, amount_units, fee_bps);
    if (amount_out_units === 0n) throw new ConflictError('market_unavailable', 'this amount would receive nothing: amount_out rounds down to 0');
    const after = token.kind === 'native'
      ? { native_units: reserves.native_units + amount_units, usdg_units: reserves.usdg_units - amount_out_units }
      : { native_units: reserves.native_units - amount_out_units, usdg_units: reserves.usdg_units + amount_units };
    return {
      token: token.symbol,
      amount_units,
      token_out: token_out.symbol,
      amount_out_units,
      fee_units: swapFee(amount_units, fee_bps),
      price_units,
      price_after_units: poolPriceUnits(after) ?? price_units,
    };
  }

  /**
   * The market as of the newest sealed block: the pool's fee, its reserves and the price that block
   * carries (what a verifier needs to replay the pool). The reserves are read between two reads of
   * the newest block, so they are those of the block named.
   */
  async market(): Promise<MarketState> {
    for (let attempt = 1; ; attempt += 1) {
      const block = await this.store.latestBlock();
      const reserves = await this.reserves();
      const after = await this.store.latestBlock();
      if (block?.number === after?.number || attempt >= MARKET_READ_ATTEMPTS) {
        return {
          fee_bps: this.options.pool_fee_bps ?? POOL_FEE_BPS_DEFAULT,
          reserves,
          price_units: this.priceOf(block),
          block_number: block?.number ?? 0,
        };
      }
    }
  }

  /** The pool's reserves as of the newest block. */
  async reserves(): Promise<Reserves> {
    const found = await this.store.balancesOf([
      { user_id: POOL_ACCOUNT, token: this.tokens.native.symbol }, { user_id: POOL_ACCOUNT, token: this.tokens.usdg.symbol },
    ]);
    const units = (symbol: string): bigint => found.find((balance) => balance.token === symbol)?.units ?? 0n;
    return { native_units: units(this.tokens.native.symbol), usdg_units: units(this.tokens.usdg.symbol) };
  }

  /** The newest `limit` candles of `interval`, oldest first; the last one closes at the current price. */
  async priceHistory(interval: CandleInterval, limit: number): Promise<Candle[]> {
    assert(Number.isInteger(limit) && limit >= 1 && limit <= CANDLE_LIMIT_MAX, 'the HTTP edge limits the number of candles');
    return this.store.candles(interval, limit);
  }

  /** Forgets idempotency keys older than the retention (at least 24 h, as the contract asks). */
  async pruneIdempotency(): Promise<number> {
    return this.store.pruneIdempotency(unixSeconds(this.clock) - IDEMPOTENCY_RETENTION_S);
  }

  /** Throws while the store cannot be reached or refuses writes (a full disk, a read-only standby). */
  async ready(): Promise<void> {
    if (this.options.storage?.failing === true) {
      throw new StorageUnavailableError('the store refuses writes', { cause: null });
    }
    await this.store.ping();
  }
}

/** The distinct well-formed idempotency keys among `keys` (what a batch's items carry). */
export function distinctIdempotencyKeys(keys: readonly unknown[]): string[] {
  return [...new Set(keys.filter(isIdempotencyKey))];
}

function isIdempotencyKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0 && key.length <= IDEMPOTENCY_KEY_LENGTH_MAX && /^[\x21-\x7e]+$/.test(key);
}

/**
 * Admins submit anything. Anyone else: a transfer or a swap from their own account, never naming a
 * system account (ids beginning with @, such as the pool), and never as one.
 */
function authorize(principal: Principal, request: TransactionRequest): void {
  if (isSystemAccount(principal.sub)) {
    throw new ForbiddenError('system_account', 'no token subject acts as a system account (an id beginning with @)');
  }
  if (principal.admin) return;
  if (request.type !== 'transfer' && request.type !== 'swap') {
    throw new ForbiddenError('admin_required', `only an admin may submit a ${request.type}`);
  }
  if (isSystemAccount(request.from) || isSystemAccount(request.to)) {
    throw new ForbiddenError('system_account', 'only an admin may transfer to or from a system account (an id beginning with @)');
  }
  if (request.from !== principal.sub) {
    throw new ForbiddenError('not_account_owner', `a ${request.type} may only spend from the caller's own account (the token's sub)`);
  }
}

/** Hash of the normalised request, to tell a true retry from a reused key. */
function requestHash(request: TransactionRequest): string {
  const text = canonicalJson({
    amount: request.amount_units.toString(),
    from: request.from,
    metadata: request.metadata,
    to: request.to,
    token: request.token.symbol,
    type: request.type,
    ...(request.min_receive_units == null ? {} : { min_receive: request.min_receive_units.toString() }),
  });
  return bytesToHex(sha256(utf8Bytes(text)));
}

function receiptOf(transaction: Transaction): SubmitResult {
  return { receipt: { tx_hash: transaction.tx_hash, status: 'pending', timestamp: transaction.timestamp }, replayed: false };
}

function outcomeOf(result: AppendResult, transaction: Transaction, request_hash: string): BatchItemOutcome {
  if (result.kind === 'stored') return { ok: true, result: receiptOf(transaction) };
  if (result.kind === 'refused') return { ok: false, error: new BudgetExceededError(result.retry_after_s) };
  return replayOutcome(result.record, request_hash);
}

function replayOutcome(record: IdempotencyRecord, request_hash: string): BatchItemOutcome {
  try {
    return { ok: true, result: replay(record, request_hash) };
  } catch (error) {
    return { ok: false, error };
  }
}

type IdempotencyClaim = NonNullable<PendingAppend['idempotency']>;

/** The caller's claim of `key` for `request`; `field` names where the key came from: the header of a single submission, or a batch item's field. */
function idempotencyClaim(principal: Principal, key: string, request: TransactionRequest, field = 'Idempotency-Key'): IdempotencyClaim {
  if (!isIdempotencyKey(key)) {
    throw new InvalidRequestError('invalid_idempotency_key', `${field} must be 1 to ${IDEMPOTENCY_KEY_LENGTH_MAX} visible ASCII characters`, field);
  }
  return { caller: principal.sub, key, request_hash: requestHash(request) };
}

function replay(record: IdempotencyRecord, request_hash: string): SubmitResult {
  if (record.request_hash !== request_hash) {
    throw new ConflictError('idempotency_key_reused', 'this Idempotency-Key was used with a different request body');
  }
  return { receipt: { tx_hash: record.tx_hash, status: 'pending', timestamp: record.timestamp }, replayed: true };
}
