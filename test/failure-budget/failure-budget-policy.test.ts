/** The failure budget's pure decisions: what a debit is, coverage, the clock hour, and a pass over one write transaction. */
import { describe, expect, it } from 'vitest';
import { BudgetPass, budgetWindowStart, isCovered, isDebit, secondsToNextWindow, debitsByAccount, type DebitTotals } from '../../src/failure-budget/failure-budget-policy.js';

const HOUR = 1_800_000_000;

describe('the failure budget policy', () => {
  it('counts transfers and burns as debits, never mints', () => {
    expect(['transfer', 'burn', 'mint', 'swap'].map((type) => isDebit(type as 'transfer'))).toEqual([true, true, false, true]);
  });

  it('covers a debit by the sealed balance less pending debits, exactly, beyond 2^63', () => {
    const totals: DebitTotals = { balance_units: 2n ** 70n + 100n, pending_units: 2n ** 70n + 60n };
    expect(isCovered(totals, 40n)).toBe(true);
    expect(isCovered(totals, 41n)).toBe(false);
  });

  it('charges to the clock hour and says how long until the next one', () => {
    expect(budgetWindowStart(HOUR + 3599)).toBe(HOUR);
    expect(secondsToNextWindow(HOUR)).toBe(3600);
    expect(secondsToNextWindow(HOUR + 3599)).toBe(1);
  });

  it('judges in order: stored debits are pending for the next, charges use the budget, refusals add nothing', () => {
    const pass = new BudgetPass({ totals: () => ({ balance_units: 10n, pending_units: 0n }), charged: () => 1 });
    const judge = (amount_units: bigint) => pass.judge({ from: 'a', token: 'TAB', type: 'transfer', amount_units, timestamp: HOUR + 600, charge: { subject: 's', per_hour: 2 } }).kind;
    expect([judge(6n), judge(6n), judge(4n), judge(1n)]).toEqual(['covered', 'charged', 'refused', 'refused']);
    expect(pass.pendingChanges()).toEqual([{ user_id: 'a', token: 'TAB', units: 12n }]);
    expect(pass.budgetChanges()).toEqual([{ subject: 's', window_start_s: HOUR, charged: 2, added: 1 }]);
  });

  it('sums debits per account and token (what a block settles, what an append adds), mints left out', () => {
    expect(debitsByAccount([
      { from: 'a', token: 'TAB', type: 'transfer', amount_units: 2n }, { from: 'a', token: 'TAB', type: 'burn', amount_units: 3n },
      { from: 'b', token: 'TAB', type: 'mint', amount_units: 9n },
    ])).toEqual([{ user_id: 'a', token: 'TAB', units: 5n }]);
  });
});
