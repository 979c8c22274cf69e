/**
 * The balance book, the ledger's state machine: applies transactions, in order, to balances. Pure and
 * deterministic: the same ordered transactions from the same balances always give the same outcomes,
 * which is what lets anyone replay the chain and check every `confirmed` and `failed`. A block's
 * supply check (`supplyOf`, `assertSupplyConserved`) lives here too, beside the rules it checks.
 */
import { AccountTokenMap } from './account-token-map.js';
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

/** Balances of (user, token) pairs; a missing pair is zero. */
export class BalanceBook {
  private readonly units = new AccountTokenMap<bigint>();
  /** The pairs `apply` changed. */
  private readonly touched = new AccountTokenMap<{ user_id: string; token: string }>();

  private readonly market: MarketTerms | null;

  constructor(initial?: Iterable<BalanceEntry>, market: MarketTerms | null = null) {
    for (const { user_id, token, units } of initial ?? []) this.units.set(user_id, token, units);
    this.market = market;
  }

  get(user_id: string, token: string): bigint {
    return this.units.get(user_id, token) ?? 0n;
  }

  private set(user_id: string, token: string, value: bigint): void {
    assert(value >= 0n, `balance of ${user_id} in ${token} would be negative`);
    assert(value <= UNITS_MAX, `balance of ${user_id} in ${token} would exceed the storage range`);
    this.units.set(user_id, token, value);
    if (this.touched.get(user_id, token) === undefined) this.touched.set(user_id, token, { user_id, token });
  }

  /** Applies one transaction; a transaction that cannot apply changes nothing and says why. */
  apply(posting: Posting): Outcome {
    assert(posting.amount_units > 0n, 'amounts are positive');
    if (posting.type === 'swap') return this.swap(posting);
    const debit = posting.type === 'transfer' || posting.type === 'burn';
    const credit = posting.type === 'transfer' || posting.type === 'mint';
    const from_units = debit ? this.get(posting.from, posting.token) : 0n;
    if (debit && from_units < posting.amount_units) {
      return failed('insufficient_funds');
    }
    if (credit && this.get(posting.to, posting.token) + posting.amount_units > UNITS_MAX) {
      return failed('balance_overflow');
    }
    if (debit) this.set(posting.from, posting.token, from_units - posting.amount_units);
    // Read after the debit: the same account on both sides ends where it started.
    if (credit) this.set(posting.to, posting.token, this.get(posting.to, posting.token) + posting.amount_units);
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
    this.set(posting.from, posting.token, from_units - posting.amount_units);
    this.set(POOL_ACCOUNT, posting.token, reserve_in + posting.amount_units);
    this.set(POOL_ACCOUNT, token_out, reserve_out - amount_out);
    this.set(posting.to, token_out, to_after);
    return { status: 'confirmed', error: null, amount_out_units: amount_out };
  }

  /** The (user, token) balances that `apply` changed, with their new values. */
  changed(): BalanceEntry[] {
    return [...this.touched.values()].map(({ user_id, token }) => ({ user_id, token, units: this.get(user_id, token) }));
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
