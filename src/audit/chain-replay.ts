/**
 * The chain replayed from genesis, one stored block at a time: every transaction hash recomputed from
 * its record, the block's root, hash and parent link checked by the domain's chain rules
 * (domain/shared/chain-verification.ts, the same code the SDK's `verifyChain` runs), every transaction applied
 * to the balance book (domain/balance-book.ts) in position order and its stored outcome compared, and the
 * block's stored running totals compared with the ones the replay arrives at. Pure and synchronous:
 * the caller reads, this decides. Each check returns the first discrepancy, or null.
 */
import type { BlockHeader } from '../domain/block.js';
import { blockCheckSteps, type CheckCode } from '../domain/shared/chain-verification.js';
import { InvariantViolation } from '../domain/shared/errors.js';
import { runHashSteps } from '../domain/shared/hash-steps.js';
import { sha256, transactionHash } from '../domain/hashing.js';
import { formatUnits } from '../domain/shared/amount.js';
import { BalanceBook, type MarketTerms, type Outcome } from '../domain/balance-book.js';
import { isSystemAccount, POOL_ACCOUNT } from '../domain/system-accounts.js';
import { PRICE_DECIMALS, USDG_SYMBOL } from '../domain/shared/tokens.js';
import { candleKeys, foldBlock, type Candle } from '../domain/market/candles.js';
import { POOL_FEE_BPS_DEFAULT, poolPriceUnits, priceTextToUnits, swapVolumeUsdMicros } from '../domain/market/pool.js';
import { balanceKey } from '../domain/shared/balance-commitment.js';
import { BalanceTree, balanceRootHex } from '../domain/balance-tree.js';
import type { Transaction } from '../domain/transaction.js';
import type { ChainTotals, StoredBlockHeader } from '../service/ledger-store.js';

export type DiscrepancyCode =
  | CheckCode
  | 'missing_genesis'
  | 'transaction_position_mismatch'
  | 'transaction_in_unknown_block'
  | 'unknown_token'
  | 'outcome_mismatch'
  | 'price_mismatch'
  | 'totals_mismatch'
  | 'balance_mismatch'
  | 'balance_root_mismatch'
  | 'account_mismatch'
  | 'unsealed_transaction_invalid'
  | 'transaction_not_queued'
  | 'history_tree_mismatch';

/** The first thing found that the database and the replay disagree on. */
export type Discrepancy = { code: DiscrepancyCode; block_number: number | null; tx_hash: string | null; reason: string };

export function discrepancy(code: DiscrepancyCode, block_number: number | null, tx_hash: string | null, reason: string): Discrepancy {
  return { code, block_number, tx_hash, reason };
}

/** An account as the replay knows it: its last confirmed transfer's block time, and its last confirmed transaction's block. */
export type ReplayedAccount = { last_transfer_at: number | null; last_block: number };

/** How the replay knows the market: the fee the ledger was created with, and the price used before any block had one. */
export type ReplayMarket = { fee_bps: number; fallback_price_units: bigint };

const DEFAULT_REPLAY_MARKET: ReplayMarket = { fee_bps: POOL_FEE_BPS_DEFAULT, fallback_price_units: 10n ** BigInt(PRICE_DECIMALS) };

export class ChainReplay {
  readonly book: BalanceBook;
  /** The candles the replayed blocks give, by interval and start (compare with the stored ones). */
  readonly candles = new Map<string, Candle>();
  private readonly market: MarketTerms;
  private readonly fallback_price_units: bigint;
  /** The balance commitment of the replayed state (src/domain/shared/balance-commitment.ts). */
  private balance_tree = BalanceTree.empty(sha256);
  /** Blocks whose stored balance root the replay recomputed and compared. */
  balance_roots_checked = 0;
  /** Every account the confirmed transactions made known (see ReplayedAccount). */
  readonly accounts = new Map<string, ReplayedAccount>();
  private readonly tokens: ReadonlySet<string>;
  private parent: BlockHeader | null = null;
  private totals: ChainTotals = { transactions: 0, users: 0, transfer_volume_units: {}, swap_volume_usd_micros: 0n };
  private block_swap_volume = 0n;

  /** `tokens`: the symbols a transaction may carry (the ledger's native symbol and USDG). */
  constructor(tokens: readonly string[], market: ReplayMarket = DEFAULT_REPLAY_MARKET) {
    this.tokens = new Set(tokens);
    const native = tokens.find((token) => token !== USDG_SYMBOL) ?? 'TAB';
    this.market = { native, usdg: USDG_SYMBOL, fee_bps: market.fee_bps };
    this.fallback_price_units = market.fallback_price_units;
    this.book = new BalanceBook(undefined, this.market);
  }

  /** The pool's reserves as replayed so far. */
  reserves(): { native_units: bigint; usdg_units: bigint } {
    return { native_units: this.book.get(POOL_ACCOUNT, this.market.native), usdg_units: this.book.get(POOL_ACCOUNT, this.market.usdg) };
  }

  get head(): BlockHeader | null {
    return this.parent;
  }

  get transactions_replayed(): number {
    return this.totals.transactions;
  }

  /**
   * Audits the next block of the chain, given every transaction row that names it (in position order)
   * and the balance root stored for it (null: none, a block sealed before balance commitments).
   */
  block(header: StoredBlockHeader, transactions: readonly Transaction[], balance_root: string | null = null): Discrepancy | null {
    const found = this.checkRecords(header, transactions)
      ?? this.checkChainRules(header, transactions)
      ?? this.replay(header, transactions)
      ?? this.checkPrice(header)
      ?? this.checkTotals(header)
      ?? this.checkBalanceRoot(header, transactions, balance_root);
    this.parent = header;
    return found;
  }

  /** Positions 0..n−1 in order, each hash recomputed from its record, each token one of the ledger's. */
  private checkRecords(header: BlockHeader, transactions: readonly Transaction[]): Discrepancy | null {
    for (const [index, tx] of transactions.entries()) {
      if (tx.position !== index) {
        return discrepancy('transaction_position_mismatch', header.number, tx.tx_hash, `stored at position ${tx.position}, but position ${index} of the block is expected there`);
      }
      if (transactionHash(tx) !== tx.tx_hash) {
        return discrepancy('transaction_hash_mismatch', header.number, tx.tx_hash, 'the transaction does not hash to its tx_hash: its record was altered');
      }
      if (!this.tokens.has(tx.token)) return discrepancy('unknown_token', header.number, tx.tx_hash, `token ${tx.token} is not one of this ledger's (${[...this.tokens].join(', ')})`);
    }
    return null;
  }

  /** The block's list, count, root, link to its parent, and hash (domain/shared/chain-verification.ts). */
  private checkChainRules(header: BlockHeader, transactions: readonly Transaction[]): Discrepancy | null {
    const block = { ...header, transactions: transactions.map((tx) => tx.tx_hash) };
    const result = runHashSteps(blockCheckSteps(block, this.parent), sha256);
    return result.ok ? null : discrepancy(result.code, header.number, null, result.reason);
  }

  /** Applies the block's transactions in order, comparing each outcome with the stored one. */
  private replay(header: StoredBlockHeader, transactions: readonly Transaction[]): Discrepancy | null {
    for (const tx of transactions) {
      let outcome: Outcome;
      try {
        outcome = this.book.apply(tx);
      } catch (error) {
        if (!(error instanceof InvariantViolation)) throw error;
        return discrepancy('outcome_mismatch', header.number, tx.tx_hash, `the transaction cannot be replayed: ${error.message}`);
      }
      if (outcome.status !== tx.status || outcome.error !== tx.error) {
        return discrepancy('outcome_mismatch', header.number, tx.tx_hash, `stored as ${describe(tx)}, but it replays as ${describe(outcome)}`);
      }
      if ((outcome.amount_out_units ?? null) !== tx.amount_out_units) {
        return discrepancy('outcome_mismatch', header.number, tx.tx_hash, `stored with amount_out ${tx.amount_out_units ?? 'null'} base units, but it replays as ${outcome.amount_out_units ?? 'null'}`);
      }
      if (outcome.status === 'confirmed') this.count(header, tx, outcome.amount_out_units ?? null);
    }
    this.totals.transactions += transactions.length;
    return null;
  }

  /** What a confirmed transaction adds to the running totals and the accounts. */
  private count(header: BlockHeader, tx: Transaction, amount_out_units: bigint | null): void {
    const from = this.account(tx.from, header.number);
    const to = this.account(tx.to, header.number);
    if (tx.type === 'swap') this.block_swap_volume += swapVolumeUsdMicros(tx.token === this.market.usdg ? tx.amount_units : amount_out_units ?? 0n);
    if (tx.type !== 'transfer') return;
    const volume = this.totals.transfer_volume_units;
    volume[tx.token] = (volume[tx.token] ?? 0n) + tx.amount_units;
    from.last_transfer_at = header.timestamp;
    to.last_transfer_at = header.timestamp;
  }

  /** Brings the balance tree to the state after the block (every pair its transactions name) and compares its root with the stored one. */
  private checkBalanceRoot(header: BlockHeader, transactions: readonly Transaction[], balance_root: string | null): Discrepancy | null {
    const entries = transactions.flatMap((tx) => this.touchedPairs(tx).map(([user_id, token]) => ({ key: balanceKey(sha256, user_id, token), units: this.book.get(user_id, token) })));
    const previous = this.balance_tree;
    this.balance_tree = previous.update(entries);
    previous.release();
    if (balance_root === null) return null;
    this.balance_roots_checked += 1;
    const replayed = balanceRootHex(this.balance_tree);
    if (replayed === balance_root) return null;
    return discrepancy('balance_root_mismatch', header.number, null, `the stored balance root is ${balance_root}, but the balances replayed up to this block give ${replayed}`);
  }

  /** The balances a transaction can change: a swap moves both tokens between its accounts and the pool. */
  private touchedPairs(tx: Transaction): Array<[string, string]> {
    if (tx.type !== 'swap') return [[tx.from, tx.token], [tx.to, tx.token]];
    const { native, usdg } = this.market;
    return [tx.from, tx.to, POOL_ACCOUNT].flatMap((user_id): Array<[string, string]> => [[user_id, native], [user_id, usdg]]);
  }

  /** The account of a confirmed transaction in block `block_number`; the first one counts towards total_users. */
  private account(user_id: string, block_number: number): ReplayedAccount {
    // System accounts (the pool) are no users: the sealer neither counts nor records them.
    if (isSystemAccount(user_id)) return { last_transfer_at: null, last_block: block_number };
    const known = this.accounts.get(user_id);
    if (known !== undefined) {
      known.last_block = block_number;
      return known;
    }
    const account: ReplayedAccount = { last_transfer_at: null, last_block: block_number };
    this.accounts.set(user_id, account);
    this.totals.users += 1;
    return account;
  }

  /**
   * A block with a price (sealed since the market) must state the price its pool's reserves give, or,
   * while a reserve is empty, whatever fixed price the ledger was configured with. Folds the block
   * into the replayed candles.
   */
  private checkPrice(header: StoredBlockHeader): Discrepancy | null {
    const volume = this.block_swap_volume;
    this.block_swap_volume = 0n;
    this.totals.swap_volume_usd_micros = (this.totals.swap_volume_usd_micros ?? 0n) + volume;
    if (header.native_price == null) return null;
    const pool_price = poolPriceUnits(this.reserves());
    const stated = priceTextToUnits(header.native_price);
    if (pool_price !== null && pool_price !== stated) {
      return discrepancy('price_mismatch', header.number, null, `the block states native_price ${header.native_price}, but its pool's reserves give ${formatUnits(pool_price, PRICE_DECIMALS)}`);
    }
    if (header.number === 0) return null;
    const previous = this.parent?.native_price;
    const before = previous == null ? this.fallback_price_units : priceTextToUnits(previous);
    const move = { timestamp: header.timestamp, price_before_units: before, price_after_units: stated, volume_usd_micros: volume };
    const stored = candleKeys(header.timestamp).flatMap((key) => this.candles.get(`${key.interval} ${key.start}`) ?? []);
    for (const candle of foldBlock(stored, move)) this.candles.set(`${candle.interval} ${candle.start}`, candle);
    return null;
  }

  private checkTotals(header: StoredBlockHeader): Discrepancy | null {
    const stored = header.totals;
    const replayed = this.totals;
    const differs = (what: string, stored_value: bigint | number, replayed_value: bigint | number): Discrepancy =>
      discrepancy('totals_mismatch', header.number, null, `stored ${what} is ${stored_value}, but the chain up to this block gives ${replayed_value}`);
    if (stored.transactions !== replayed.transactions) return differs('total_transactions', stored.transactions, replayed.transactions);
    if (stored.users !== replayed.users) return differs('total_users', stored.users, replayed.users);
    if ((stored.swap_volume_usd_micros ?? 0n) !== (replayed.swap_volume_usd_micros ?? 0n)) return differs('swap volume (micro-USD)', stored.swap_volume_usd_micros ?? 0n, replayed.swap_volume_usd_micros ?? 0n);
    const tokens = new Set([...Object.keys(stored.transfer_volume_units), ...Object.keys(replayed.transfer_volume_units)]);
    for (const token of [...tokens].sort()) {
      const stored_units = stored.transfer_volume_units[token] ?? 0n;
      const replayed_units = replayed.transfer_volume_units[token] ?? 0n;
      if (stored_units !== replayed_units) return differs(`transfer volume of ${token} (base units)`, stored_units, replayed_units);
    }
    return null;
  }
}

function describe(outcome: { status: string; error: string | null }): string {
  return outcome.error === null ? outcome.status : `${outcome.status} (${outcome.error})`;
}
