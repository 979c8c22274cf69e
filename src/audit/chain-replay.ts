/**
 * The chain replayed from genesis, one stored block at a time: every transaction hash recomputed from
 * its record, the block's root, hash and parent link checked by the domain's chain rules
 * (domain/chain-verification.ts, the same code the SDK's `verifyChain` runs), every transaction applied
 * to the balance book (domain/ledger.ts) in position order and its stored outcome compared, and the
 * block's stored running totals compared with the ones the replay arrives at. Pure and synchronous:
 * the caller reads, this decides. Each check returns the first discrepancy, or null.
 */
import type { BlockHeader } from '../domain/block.js';
import { blockCheckSteps, type CheckCode } from '../domain/chain-verification.js';
import { InvariantViolation } from '../domain/errors.js';
import { runHashSteps } from '../domain/hash-steps.js';
import { sha256, transactionHash } from '../domain/hashing.js';
import { BalanceBook, type Outcome } from '../domain/ledger.js';
import type { Transaction } from '../domain/transaction.js';
import type { ChainTotals, StoredBlockHeader } from '../service/ledger-store.js';

export type DiscrepancyCode =
  | CheckCode
  | 'missing_genesis'
  | 'transaction_position_mismatch'
  | 'transaction_in_unknown_block'
  | 'unknown_token'
  | 'outcome_mismatch'
  | 'totals_mismatch'
  | 'balance_mismatch'
  | 'account_mismatch'
  | 'unsealed_transaction_invalid'
  | 'history_tree_mismatch';

/** The first thing found that the database and the replay disagree on. */
export type Discrepancy = { code: DiscrepancyCode; block_number: number | null; tx_hash: string | null; reason: string };

export function discrepancy(code: DiscrepancyCode, block_number: number | null, tx_hash: string | null, reason: string): Discrepancy {
  return { code, block_number, tx_hash, reason };
}

/** An account as the replay knows it: its last confirmed transfer's block time, and its last confirmed transaction's block. */
export type ReplayedAccount = { last_transfer_at: number | null; last_block: number };

export class ChainReplay {
  readonly book = new BalanceBook();
  /** Every account the confirmed transactions made known (see ReplayedAccount). */
  readonly accounts = new Map<string, ReplayedAccount>();
  private readonly tokens: ReadonlySet<string>;
  private parent: BlockHeader | null = null;
  private totals: ChainTotals = { transactions: 0, users: 0, transfer_volume_units: {} };

  /** `tokens`: the symbols a transaction may carry (the ledger's native symbol and USDG). */
  constructor(tokens: readonly string[]) {
    this.tokens = new Set(tokens);
  }

  get head(): BlockHeader | null {
    return this.parent;
  }

  get transactions_replayed(): number {
    return this.totals.transactions;
  }

  /** Audits the next block of the chain, given every transaction row that names it (in position order). */
  block(header: StoredBlockHeader, transactions: readonly Transaction[]): Discrepancy | null {
    const found = this.checkRecords(header, transactions)
      ?? this.checkChainRules(header, transactions)
      ?? this.replay(header, transactions)
      ?? this.checkTotals(header);
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

  /** The block's list, count, root, link to its parent, and hash (domain/chain-verification.ts). */
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
      if (outcome.status === 'confirmed') this.count(header, tx);
    }
    this.totals.transactions += transactions.length;
    return null;
  }

  /** What a confirmed transaction adds to the running totals and the accounts. */
  private count(header: BlockHeader, tx: Transaction): void {
    const from = this.account(tx.from, header.number);
    const to = this.account(tx.to, header.number);
    if (tx.type !== 'transfer') return;
    const volume = this.totals.transfer_volume_units;
    volume[tx.token] = (volume[tx.token] ?? 0n) + tx.amount_units;
    from.last_transfer_at = header.timestamp;
    to.last_transfer_at = header.timestamp;
  }

  /** The account of a confirmed transaction in block `block_number`; the first one counts towards total_users. */
  private account(user_id: string, block_number: number): ReplayedAccount {
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

  private checkTotals(header: StoredBlockHeader): Discrepancy | null {
    const stored = header.totals;
    const replayed = this.totals;
    const differs = (what: string, stored_value: bigint | number, replayed_value: bigint | number): Discrepancy =>
      discrepancy('totals_mismatch', header.number, null, `stored ${what} is ${stored_value}, but the chain up to this block gives ${replayed_value}`);
    if (stored.transactions !== replayed.transactions) return differs('total_transactions', stored.transactions, replayed.transactions);
    if (stored.users !== replayed.users) return differs('total_users', stored.users, replayed.users);
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
