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

  private set(key: string, value: bigint, user_id: string, token: string): void {
    assert(value >= 0n, `balance of ${user_id} in ${token} would be negative`);
    assert(value <= UNITS_MAX, `balance of ${user_id} in ${token} would exceed the storage range`);
    this.units.set(key, value);
    this.touched.add(key);
  }

  /**
   * Applies one transaction; a transaction that cannot apply changes nothing and says why. Each
   * balance key is built once (this runs for every transaction sealed and every one an audit replays).
   */
  apply(posting: Posting): Outcome {
    assert(posting.amount_units > 0n, 'amounts are positive');
    const debit = posting.type === 'transfer' || posting.type === 'burn';
    const credit = posting.type === 'transfer' || posting.type === 'mint';
    const from_key = debit ? balanceKey(posting.from, posting.token) : '';
    const to_key = credit ? balanceKey(posting.to, posting.token) : '';
    const from_units = debit ? this.units.get(from_key) ?? 0n : 0n;
    if (debit && from_units < posting.amount_units) {
      return { status: 'failed', error: 'insufficient_funds' };
    }
    if (credit && (this.units.get(to_key) ?? 0n) + posting.amount_units > UNITS_MAX) {
      return { status: 'failed', error: 'balance_overflow' };
    }
    if (debit) this.set(from_key, from_units - posting.amount_units, posting.from, posting.token);
    // Read after the debit: the same account on both sides ends where it started.
    if (credit) this.set(to_key, (this.units.get(to_key) ?? 0n) + posting.amount_units, posting.to, posting.token);
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
