/**
 * The failure budget on SQLite (src/failure-budget): judged and charged inside the append's write
 * transaction, which SQLite's single writer serialises, and the sealed debits settled inside the
 * block's. Totals are decimal text, added as bigints here, so they never overflow.
 */
import type Database from 'better-sqlite3';
import type { TransactionType } from '../../domain/transaction.js';
import { BudgetPass, settledDebits, type BudgetSources } from '../../failure-budget/failure-budget-policy.js';
import type { AppendResult, PendingAppend } from '../../service/ledger-store.js';

export const FAILURE_BUDGET_SQL = {
  debitTotals: `SELECT
       (SELECT units FROM balances WHERE user_id = @user_id AND token = @token) AS balance,
       (SELECT units FROM outgoing_submitted WHERE user_id = @user_id AND token = @token) AS submitted,
       (SELECT units FROM outgoing_settled WHERE user_id = @user_id AND token = @token) AS settled`,
  putSubmitted: `INSERT INTO outgoing_submitted (user_id, token, units) VALUES (?, ?, ?)
       ON CONFLICT (user_id, token) DO UPDATE SET units = excluded.units`,
  charged: 'SELECT charged FROM failure_budgets WHERE subject = ? AND window_start_s = ?',
  putCharged: `INSERT INTO failure_budgets (subject, window_start_s, charged) VALUES (?, ?, ?)
       ON CONFLICT (subject, window_start_s) DO UPDATE SET charged = excluded.charged`,
  forgetOldWindows: 'DELETE FROM failure_budgets WHERE subject = ? AND window_start_s < ?',
  releaseClaim: 'DELETE FROM idempotency_keys WHERE caller = ? AND key = ? AND tx_hash = ?',
  blockDebits: "SELECT from_id AS \"from\", token, type, amount AS amount_units FROM transactions WHERE block_number = ? AND type IN ('transfer', 'burn', 'swap')",
  settled: 'SELECT units FROM outgoing_settled WHERE user_id = ? AND token = ?',
  putSettled: `INSERT INTO outgoing_settled (user_id, token, units) VALUES (?, ?, ?)
       ON CONFLICT (user_id, token) DO UPDATE SET units = excluded.units`,
} as const;

type Statements = { [name in keyof typeof FAILURE_BUDGET_SQL]: Database.Statement };

/** One append transaction's decisions; `admit` each item once its idempotency claim is won, then `finish`. */
export type SqliteBudgetPass = {
  /** Null when the item may be stored; the refusal otherwise (its idempotency claim is released). */
  admit(item: PendingAppend): AppendResult | null;
  /** Writes the totals and charges that the admitted items changed. */
  finish(): void;
};

export class SqliteFailureBudget {
  private readonly statements: Statements;

  constructor(db: Database.Database) {
    const entries = Object.entries(FAILURE_BUDGET_SQL).map(([name, sql]) => [name, db.prepare(sql)]);
    this.statements = Object.fromEntries(entries) as Statements;
    this.statements.debitTotals.safeIntegers(true);
    this.statements.blockDebits.safeIntegers(true);
    this.statements.charged.pluck(true);
    this.statements.settled.pluck(true);
  }

  /** Call inside the append's write transaction. */
  begin(): SqliteBudgetPass {
    const s = this.statements;
    const sources: BudgetSources = {
      totals: (user_id, token) => {
        const row = s.debitTotals.get({ user_id, token }) as { balance: bigint | null; submitted: string | null; settled: string | null };
        return { balance_units: row.balance ?? 0n, submitted_units: BigInt(row.submitted ?? '0'), settled_units: BigInt(row.settled ?? '0') };
      },
      charged: (subject, window_start_s) => (s.charged.get(subject, window_start_s) as number | undefined) ?? 0,
    };
    const pass = new BudgetPass(sources);
    return {
      admit: (item) => {
        const tx = item.transaction;
        const decision = pass.judge({ ...tx, charge: item.failure_budget ?? null });
        if (decision.kind !== 'refused') return null;
        if (item.idempotency !== null) s.releaseClaim.run(item.idempotency.caller, item.idempotency.key, tx.tx_hash);
        return { kind: 'refused', retry_after_s: decision.retry_after_s };
      },
      finish: () => {
        for (const change of pass.submittedChanges()) s.putSubmitted.run(change.user_id, change.token, change.submitted_units.toString());
        for (const change of pass.budgetChanges()) {
          s.forgetOldWindows.run(change.subject, change.window_start_s);
          s.putCharged.run(change.subject, change.window_start_s, change.charged);
        }
      },
    };
  }

  /** Adds the debits sealed into block `number` (confirmed or failed) to the settled totals; inside the block's write transaction. */
  settleBlock(number: number): void {
    const s = this.statements;
    const debits = s.blockDebits.all(number) as Array<{ from: string; token: string; type: TransactionType; amount_units: bigint }>;
    for (const { user_id, token, units } of settledDebits(debits)) {
      const settled = BigInt((s.settled.get(user_id, token) as string | undefined) ?? '0');
      s.putSettled.run(user_id, token, (settled + units).toString());
    }
  }
}
