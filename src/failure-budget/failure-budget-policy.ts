/**
 * Failures cost the sender (issue 15): the pure decisions of the failure budget. A debit (a transfer
 * or a burn; a mint never) is covered when its sender's sealed balance, less the debits still
 * pending from that account, pays for it: a covered debit cannot fail for lack of funds whatever the
 * order of sealing. An uncovered one may fail: it is charged to the submitting subject's budget for
 * the clock hour, and refused, with nothing stored, once that budget is spent. So one subject makes
 * the ledger keep at most `per_hour` failed records per hour (see docs/security.md).
 */
import type { TransactionType } from '../domain/transaction.js';
import { AccountTokenMap } from '../domain/account-token-map.js';

/** FAILURE_BUDGET_PER_HOUR: the default, and the largest value accepted. */
export const FAILURE_BUDGET_PER_HOUR_DEFAULT = 100;
export const FAILURE_BUDGET_PER_HOUR_MAX = 1_000_000;
export const BUDGET_WINDOW_S = 3600;

/** Whom an append's uncovered debits are charged to (the token's `sub`), and that subject's budget per hour. */
export type FailureBudgetCharge = { subject: string; per_hour: number };

/** What the store knows of one account and token: its sealed balance and the debits from it still pending. */
export type DebitTotals = {
  /** Sealed balance, base units. */
  balance_units: bigint;
  /** Debits appended from this account in this token and not sealed yet (confirmed or failed), base units. */
  pending_units: bigint;
};

export type BudgetDecision = { kind: 'covered' } | { kind: 'charged' } | { kind: 'refused'; retry_after_s: number };

/** The types that debit their sender (a swap pays `amount` of `token` out of `from` into the pool, like a transfer). */
export const DEBIT_TYPES: readonly TransactionType[] = ['transfer', 'burn', 'swap'];

/** DEBIT_TYPES as the list of an SQL `IN (...)`, for the stores' statements. */
export const DEBIT_TYPES_SQL = DEBIT_TYPES.map((type) => `'${type}'`).join(', ');

export function isDebit(type: TransactionType): boolean {
  return DEBIT_TYPES.includes(type);
}

/** Whether the sealed balance, less what is already pending, pays for `amount_units`. */
export function isCovered(totals: DebitTotals, amount_units: bigint): boolean {
  return totals.balance_units - totals.pending_units >= amount_units;
}

/** The clock hour (its first second) that a transaction stamped `timestamp_s` is charged to. */
export function budgetWindowStart(timestamp_s: number): number {
  return timestamp_s - (timestamp_s % BUDGET_WINDOW_S);
}

/** Seconds from `timestamp_s` until the next window opens (at least 1). */
export function secondsToNextWindow(timestamp_s: number): number {
  return Math.max(1, budgetWindowStart(timestamp_s) + BUDGET_WINDOW_S - timestamp_s);
}

export function balanceTotalsKey(user_id: string, token: string): string {
  return `${user_id}\u0000${token}`;
}

export function budgetKey(subject: string, window_start_s: number): string {
  return `${subject}\u0000${window_start_s}`;
}

/** What the decisions of one write transaction read: the totals of each (account, token), and what each subject has used. */
export type BudgetSources = {
  totals(user_id: string, token: string): DebitTotals;
  /** Uncovered debits already charged to `subject` in the window starting at `window_start_s`. */
  charged(subject: string, window_start_s: number): number;
};

/** An append to judge: what it moves, and whom it is charged to (null: no budget applies). */
export type BudgetItem = {
  from: string;
  token: string;
  type: TransactionType;
  amount_units: bigint;
  timestamp: number;
  charge: FailureBudgetCharge | null;
};

/**
 * The item of a transaction about to be appended. Field by field, not a spread of the transaction: on
 * Node 20 a spread with a further field takes V8's generic path, microseconds an append.
 */
export function budgetItem(tx: Omit<BudgetItem, 'charge'>, charge: FailureBudgetCharge | null): BudgetItem {
  return { from: tx.from, token: tx.token, type: tx.type, amount_units: tx.amount_units, timestamp: tx.timestamp, charge };
}

/**
 * The decisions of one write transaction, item by item in arrival order: each debit that is stored
 * counts as pending for the next ones, and each charge uses up the budget. Reads every total and
 * budget once through `sources`; what changed is then written back by the store.
 */
export class BudgetPass {
  private readonly sources: BudgetSources;
  private readonly totals = new Map<string, { user_id: string; token: string; totals: DebitTotals; added_units: bigint }>();
  private readonly budgets = new Map<string, { subject: string; window_start_s: number; charged: number; added: number }>();

  constructor(sources: BudgetSources) {
    this.sources = sources;
  }

  judge(item: BudgetItem): BudgetDecision {
    if (!isDebit(item.type)) return { kind: 'covered' };
    const account = this.totalsOf(item.from, item.token);
    if (isCovered(account.totals, item.amount_units)) {
      this.addDebit(account, item.amount_units);
      return { kind: 'covered' };
    }
    if (item.charge === null) {
      this.addDebit(account, item.amount_units);
      return { kind: 'charged' };
    }
    const budget = this.budgetOf(item.charge.subject, budgetWindowStart(item.timestamp));
    if (budget.charged >= item.charge.per_hour) return { kind: 'refused', retry_after_s: secondsToNextWindow(item.timestamp) };
    budget.charged += 1;
    budget.added += 1;
    this.addDebit(account, item.amount_units);
    return { kind: 'charged' };
  }

  /** Per account and token, the debits this pass let be stored: what they add to what is pending. */
  pendingChanges(): DebitSum[] {
    return [...this.totals.values()]
      .filter((entry) => entry.added_units > 0n)
      .map((entry) => ({ user_id: entry.user_id, token: entry.token, units: entry.added_units }));
  }

  /** The subjects this pass charged, with their new count and what was added. */
  budgetChanges(): Array<{ subject: string; window_start_s: number; charged: number; added: number }> {
    return [...this.budgets.values()].filter((entry) => entry.added > 0).map((entry) => ({ ...entry }));
  }

  private addDebit(account: { totals: DebitTotals; added_units: bigint }, amount_units: bigint): void {
    // A new object, not a spread: on Node 20 a spread with a further field takes V8's generic path (µs a debit).
    account.totals = { balance_units: account.totals.balance_units, pending_units: account.totals.pending_units + amount_units };
    account.added_units += amount_units;
  }

  private totalsOf(user_id: string, token: string) {
    const key = balanceTotalsKey(user_id, token);
    let entry = this.totals.get(key);
    if (entry === undefined) {
      entry = { user_id, token, totals: this.sources.totals(user_id, token), added_units: 0n };
      this.totals.set(key, entry);
    }
    return entry;
  }

  private budgetOf(subject: string, window_start_s: number) {
    const key = budgetKey(subject, window_start_s);
    let entry = this.budgets.get(key);
    if (entry === undefined) {
      entry = { subject, window_start_s, charged: this.sources.charged(subject, window_start_s), added: 0 };
      this.budgets.set(key, entry);
    }
    return entry;
  }
}

/** The debits of one account in one token, summed (base units). */
export type DebitSum = { user_id: string; token: string; units: bigint };

/** What sealing takes off the pending totals: `sums` with their sign turned (sealed debits stop being pending). */
export function settlementOf(sums: readonly DebitSum[]): DebitSum[] {
  return sums.map((sum) => ({ user_id: sum.user_id, token: sum.token, units: -sum.units }));
}

/** Per (account, token), the sum of the debits among `items`: what a block settles, or what an append adds to what is pending. */
export function debitsByAccount(items: ReadonlyArray<{ from: string; token: string; type: TransactionType; amount_units: bigint }>): DebitSum[] {
  const sums = new AccountTokenMap<DebitSum>();
  for (const item of items) {
    if (!isDebit(item.type)) continue;
    const entry = sums.get(item.from, item.token);
    if (entry === undefined) sums.set(item.from, item.token, { user_id: item.from, token: item.token, units: item.amount_units });
    else entry.units += item.amount_units;
  }
  return [...sums.values()];
}
