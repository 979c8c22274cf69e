/**
 * The ledger's state machine: applies transactions, in order, to balances. Pure and deterministic:
 * the same ordered transactions from the same balances always give the same outcomes, which is what
 * lets anyone replay the chain and check every `confirmed` and `failed`.
 */
import { UNITS_MAX } from './amount.js';
import { assert } from './errors.js';
import type { FailureCode, TransactionType } from './transaction.js';

export type Posting = {
  from: string;
  to: string;
  amount_units: bigint;
  token: string;
  type: TransactionType;
};

export type Outcome = { status: 'confirmed'; error: null } | { status: 'failed'; error: FailureCode };

const CONFIRMED: Outcome = { status: 'confirmed', error: null };

export function balanceKey(user_id: string, token: string): string {
  return `${token}\u0000${user_id}`;
}

/** Balances of (user, token) pairs; a missing pair is zero. */
export class BalanceBook {
  private readonly units = new Map<string, bigint>();
  private readonly touched = new Set<string>();

  constructor(initial?: Iterable<[string, bigint]>) {
    for (const [key, value] of initial ?? []) this.units.set(key, value);
  }

  get(user_id: string, token: string): bigint {
    return this.units.get(balanceKey(user_id, token)) ?? 0n;
  }

  private set(user_id: string, token: string, value: bigint): void {
    assert(value >= 0n, `balance of ${user_id} in ${token} would be negative`);
    assert(value <= UNITS_MAX, `balance of ${user_id} in ${token} would exceed the storage range`);
    const key = balanceKey(user_id, token);
    this.units.set(key, value);
    this.touched.add(key);
  }

  /** Applies one transaction; a transaction that cannot apply changes nothing and says why. */
  apply(posting: Posting): Outcome {
    assert(posting.amount_units > 0n, 'amounts are positive');
    const debit = posting.type === 'transfer' || posting.type === 'burn';
    const credit = posting.type === 'transfer' || posting.type === 'mint';
    if (debit && this.get(posting.from, posting.token) < posting.amount_units) {
      return { status: 'failed', error: 'insufficient_funds' };
    }
    if (credit && this.get(posting.to, posting.token) + posting.amount_units > UNITS_MAX) {
      return { status: 'failed', error: 'balance_overflow' };
    }
    if (debit) this.set(posting.from, posting.token, this.get(posting.from, posting.token) - posting.amount_units);
    if (credit) this.set(posting.to, posting.token, this.get(posting.to, posting.token) + posting.amount_units);
    return CONFIRMED;
  }

  /** The (user, token) balances that `apply` changed, with their new values. */
  changed(): Array<{ user_id: string; token: string; units: bigint }> {
    return [...this.touched].map((key) => {
      const separator = key.indexOf('\u0000');
      return { token: key.slice(0, separator), user_id: key.slice(separator + 1), units: this.units.get(key) ?? 0n };
    });
  }
}

/** The change of total supply per token that a confirmed transaction makes (mint +, burn −). */
export function supplyDelta(posting: Posting): bigint {
  if (posting.type === 'mint') return posting.amount_units;
  if (posting.type === 'burn') return -posting.amount_units;
  return 0n;
}
