/**
 * The failure budget on SQLite (src/failure-budget): judged and charged inside the append's write
 * transaction, which SQLite's single writer serialises.
 *
 * What a sender has pending (debits appended and not yet sealed) is kept in memory, per (sender,
 * token): built from the pending rows at open, and changed only when this connection's append or block
 * commits (never before the commit returns, so a rolled-back write leaves it as it was). Another
 * connection writing to the same file (a second handle, another process) changes SQLite's
 * `data_version`, which the store reads first in every write transaction: the totals are then rebuilt
 * from the pending rows (sqlite-pending-rows.ts, one scan with the pending history) inside that
 * transaction, so they are exact whoever wrote. Judging a covered debit then costs one balance
 * look-up and no write: the issue-15 A/B measured the tables this replaced (a read of two running
 * totals and an upsert per sender per append, a read and an upsert per sender per block) at 6–9 % of
 * the submit rate. PostgreSQL keeps the figure in memory too, per instance (postgres-failure-budget.ts).
 */
import type Database from './sqlite-driver.js';
import type { TransactionType } from '../../domain/transaction.js';
import { BudgetPass, budgetItem, DEBIT_TYPES_SQL, debitsByAccount, isDebit, settlementOf, type BudgetSources, type DebitSum } from '../../failure-budget/failure-budget-policy.js';
import { PendingDebits } from '../../failure-budget/pending-debits.js';
import type { AppendResult, PendingAppend } from '../../service/ledger-store.js';
import type { PendingRow, PendingRowsCopy } from './sqlite-pending-rows.js';

export const FAILURE_BUDGET_SQL = {
  balance: 'SELECT units FROM balances WHERE user_id = ? AND token = ?',
  charged: 'SELECT charged FROM failure_budgets WHERE subject = ? AND window_start_s = ?',
  putCharged: `INSERT INTO failure_budgets (subject, window_start_s, charged) VALUES (?, ?, ?)
       ON CONFLICT (subject, window_start_s) DO UPDATE SET charged = excluded.charged`,
  forgetOldWindows: 'DELETE FROM failure_budgets WHERE subject = ? AND window_start_s < ?',
  releaseClaim: 'DELETE FROM idempotency_keys WHERE caller = ? AND key = ? AND tx_hash = ?',
  blockDebits: `SELECT from_id AS "from", token, type, amount AS amount_units FROM transactions WHERE block_number = ? AND type IN (${DEBIT_TYPES_SQL})`,
} as const;

type Statements = { [name in keyof typeof FAILURE_BUDGET_SQL]: Database.Statement };

type DebitRow = { from: string; token: string; type: TransactionType; amount_units: bigint };

/** One append transaction's decisions; `admit` each item once its idempotency claim is won, then `finish`, then `committed` once the transaction has committed. */
export type SqliteBudgetPass = {
  /** Null when the item may be stored; the refusal otherwise (its idempotency claim is released). */
  admit(item: PendingAppend): AppendResult | null;
  /** Writes the charges that the admitted items made; inside the transaction. */
  finish(): void;
  /** Adds the admitted debits to the pending totals; after the commit. */
  committed(): void;
};

/** Empty until the store's first sync (sqlite-pending-rows.ts) builds it from the pending rows. */
export class SqliteFailureBudget implements PendingRowsCopy {
  private readonly statements: Statements;
  /** Debits appended and not sealed yet. */
  private readonly pending = new PendingDebits();
  /** SQLite's data_version when `pending` was last known exact; another connection's commit changes it. */
  private exact_at: number | null = null;

  constructor(db: Database.Database) {
    const entries = Object.entries(FAILURE_BUDGET_SQL).map(([name, sql]) => [name, db.prepare(sql)]);
    this.statements = Object.fromEntries(entries) as Statements;
    this.statements.balance.safeIntegers(true).pluck(true);
    this.statements.blockDebits.safeIntegers(true);
    this.statements.charged.pluck(true);
  }

  clear(): void {
    this.pending.clear();
  }

  addPendingRow(row: PendingRow): void {
    if (isDebit(row.type)) this.pending.add(row.from, row.token, row.amount_units);
  }

  get data_version(): number | null {
    return this.exact_at;
  }

  rebuilt(data_version: number): void {
    this.exact_at = data_version;
  }

  /** Call inside the append's write transaction, after the store's sync. */
  begin(): SqliteBudgetPass {
    const s = this.statements;
    const sources: BudgetSources = {
      totals: (user_id, token) => ({
        balance_units: (s.balance.get(user_id, token) as bigint | undefined) ?? 0n,
        pending_units: this.pending.get(user_id, token),
      }),
      charged: (subject, window_start_s) => (s.charged.get(subject, window_start_s) as number | undefined) ?? 0,
    };
    const pass = new BudgetPass(sources);
    return {
      admit: (item) => {
        const tx = item.transaction;
        const decision = pass.judge(budgetItem(tx, item.failure_budget ?? null));
        if (decision.kind !== 'refused') return null;
        if (item.idempotency !== null) s.releaseClaim.run(item.idempotency.caller, item.idempotency.key, tx.tx_hash);
        return { kind: 'refused', retry_after_s: decision.retry_after_s };
      },
      finish: () => {
        for (const change of pass.budgetChanges()) {
          s.forgetOldWindows.run(change.subject, change.window_start_s);
          s.putCharged.run(change.subject, change.window_start_s, change.charged);
        }
      },
      committed: () => {
        this.pending.addAll(pass.pendingChanges());
      },
    };
  }

  /**
   * What block `number` settles (its debits, confirmed or failed, negated): `settled` when the commit
   * passed its postings (src/store/block-postings.ts), else read inside the block's write transaction.
   * Call the returned function once the block has committed, to take them off the pending totals.
   */
  settleBlock(number: number, settled: readonly DebitSum[] | null): () => void {
    const changes = settled ?? settlementOf(debitsByAccount(this.statements.blockDebits.all(number) as DebitRow[]));
    return () => this.pending.addAll(changes);
  }
}

