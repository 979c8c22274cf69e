/**
 * The balance book, the ledger's state machine: applies transactions, in order, to balances. Pure and
 * deterministic: the same ordered transactions from the same balances always give the same outcomes,
 * which is what lets anyone replay the chain and check every `confirmed` and `failed`. A block's
 * supply check (`supplyOf`, `assertSupplyConserved`) lives here too, beside the rules it checks.
 */
import { UNITS_MAX } from './shared/amount.js';
import { assert } from './shared/errors.js';
import { assertSwapKeepsInvariants, swapAmountOut } from './market/pool.js';
import { POOL_ACCOUNT } from './system-accounts.js';
import type { FailureCode, TransactionType } from './transaction.js';

export type Posting = {
  from: string;
  to: string;
  amount_units: bigint;
  token: string;
  type: TransactionType;
  /** Swaps only: the least amount of the other token accepted (null or absent: any). */
  min_receive_units?: bigint | null;
};

/** A confirmed swap says what it paid out (`amount_out_units`); other outcomes carry null. */
export type Outcome =
  | { status: 'confirmed'; error: null; amount_out_units?: bigint }
  | { status: 'failed'; error: FailureCode; amount_out_units?: undefined };

/** The pair a swap trades (token symbols) and the pool's fee. */
export type MarketTerms = { native: string; usdg: string; fee_bps: number };

const CONFIRMED: Outcome = { status: 'confirmed', error: null };

function failed(error: FailureCode): Outcome {
  return { status: 'failed', error };
}

/** A (user, token) balance: what a book starts from, and what `changed` gives back. */
export type BalanceEntry = { user_id: string; token: string; units: bigint };

/**
 * Balances of (user, token) pairs; a missing pair is zero. Kept per token, then per user: a block
 * applies up to BLOCK_TXS_MAX transactions, and a key made of the two names would be a new string,
 * built and hashed, on every read and write of a balance.
 */
export class BalanceBook {
  private readonly units = new Map<string, Map<string, bigint>>();
  private readonly touched = new Map<string, Set<string>>();

  private readonly market: MarketTerms | null;

  constructor(initial?: Iterable<BalanceEntry>, market: MarketTerms | null = null) {
    for (const { user_id, token, units } of initial ?? []) this.unitsOf(token).set(user_id, units);
    this.market = market;
  }

  get(user_id: string, token: string): bigint {
    return this.units.get(token)?.get(user_id) ?? 0n;
  }

  private unitsOf(token: string): Map<string, bigint> {
    let units = this.units.get(token);
    if (units === undefined) {
      units = new Map();
      this.units.set(token, units);
    }
    return units;
  }

  private set(units: Map<string, bigint>, value: bigint, user_id: string, token: string): void {
    assert(value >= 0n, `balance of ${user_id} in ${token} would be negative`);
    assert(value <= UNITS_MAX, `balance of ${user_id} in ${token} would exceed the storage range`);
    units.set(user_id, value);
    let touched = this.touched.get(token);
    if (touched === undefined) {
      touched = new Set();
      this.touched.set(token, touched);
    }
    touched.add(user_id);
  }

  /** Applies one transaction; a transaction that cannot apply changes nothing and says why. */
  apply(posting: Posting): Outcome {
    assert(posting.amount_units > 0n, 'amounts are positive');
    if (posting.type === 'swap') return this.swap(posting);
    const debit = posting.type === 'transfer' || posting.type === 'burn';
    const credit = posting.type === 'transfer' || posting.type === 'mint';
    const units = this.unitsOf(posting.token);
    const from_units = debit ? units.get(posting.from) ?? 0n : 0n;
    if (debit && from_units < posting.amount_units) {
      return failed('insufficient_funds');
    }
    if (credit && (units.get(posting.to) ?? 0n) + posting.amount_units > UNITS_MAX) {
      return failed('balance_overflow');
    }
    if (debit) this.set(units, from_units - posting.amount_units, posting.from, posting.token);
    // Read after the debit: the same account on both sides ends where it started.
    if (credit) this.set(units, (units.get(posting.to) ?? 0n) + posting.amount_units, posting.to, posting.token);
    return CONFIRMED;
  }

  /**
   * A swap against the pool: `from` pays `amount` of `token` into @pool, and `to` receives the other
   * token, as much as the constant-product formula gives; nothing moves when it cannot apply.
   */
  private swap(posting: Posting): Outcome {
    const market = this.market;
    assert(market !== null, 'a book that applies swaps knows the market terms');
    assert(posting.from !== POOL_ACCOUNT && posting.to !== POOL_ACCOUNT, 'the edge refuses swaps naming the pool');
    const token_out = posting.token === market.native ? market.usdg : market.native;
    const reserve_in = this.get(POOL_ACCOUNT, posting.token);
    const reserve_out = this.get(POOL_ACCOUNT, token_out);
    const from_units = this.get(posting.from, posting.token);
    if (reserve_in === 0n || reserve_out === 0n) return failed('pool_empty');
    if (from_units < posting.amount_units) return failed('insufficient_funds');
    const amount_out = swapAmountOut(reserve_in, reserve_out, posting.amount_units, market.fee_bps);
    if (amount_out === 0n) return failed('amount_out_zero');
    if (posting.min_receive_units != null && amount_out < posting.min_receive_units) return failed('slippage_exceeded');
    const to_after = this.get(posting.to, token_out) + amount_out;
    if (reserve_in + posting.amount_units > UNITS_MAX || to_after > UNITS_MAX) return failed('balance_overflow');
    assertSwapKeepsInvariants(reserve_in, reserve_out, reserve_in + posting.amount_units, reserve_out - amount_out);
    const units_in = this.unitsOf(posting.token);
    const units_out = this.unitsOf(token_out);
    this.set(units_in, from_units - posting.amount_units, posting.from, posting.token);
    this.set(units_in, reserve_in + posting.amount_units, POOL_ACCOUNT, posting.token);
    this.set(units_out, reserve_out - amount_out, POOL_ACCOUNT, token_out);
    this.set(units_out, to_after, posting.to, token_out);
    return { status: 'confirmed', error: null, amount_out_units: amount_out };
  }

  /** The (user, token) balances that `apply` changed, with their new values. */
  changed(): BalanceEntry[] {
    const changed: BalanceEntry[] = [];
    for (const [token, users] of this.touched) {
      for (const user_id of users) changed.push({ user_id, token, units: this.get(user_id, token) });
    }
    return changed;
  }
}

/** Sum, per token, of the balances `book` holds for `keys` (every account a block touches). */
export function supplyOf(book: BalanceBook, keys: ReadonlyArray<{ user_id: string; token: string }>): Map<string, bigint> {
  const totals = new Map<string, bigint>();
  for (const { user_id, token } of keys) totals.set(token, (totals.get(token) ?? 0n) + book.get(user_id, token));
  return totals;
}

/** Asserts that each token's supply moved from `before` to `after` by its mints and burns (`change`) alone. */
export function assertSupplyConserved(before: Map<string, bigint>, after: Map<string, bigint>, change: Map<string, bigint>): void {
  for (const [token, total_before] of before) {
    const expected = total_before + (change.get(token) ?? 0n);
    assert(after.get(token) === expected, `supply of ${token} changed by other than mints and burns`);
  }
}

/** The change of total supply per token that a confirmed transaction makes (mint +, burn −). */
export function supplyDelta(posting: Posting): bigint {
  if (posting.type === 'mint') return posting.amount_units;
  if (posting.type === 'burn') return -posting.amount_units;
  return 0n;
}
