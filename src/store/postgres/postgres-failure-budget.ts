/**
 * The failure budget on PostgreSQL (src/failure-budget), race-free across instances: inside the
 * append's write transaction the submitted totals of the batch's debiting accounts are incremented
 * by an upsert, which takes their row locks (in key order) and returns the newest totals, so two
 * instances' debits from one account are judged one after the other; the subjects' budget rows are
 * locked the same way (always after the totals, so never in a cycle) only when a debit is not
 * covered. The sealer adds each block's debits to the settled totals in the block's transaction.
 *
 * The common case, every debit of a group commit covered, costs no statement of its own: the store's
 * `insertIfCovered` adds the totals and inserts the transactions in one statement (submittedCtes,
 * then the insert only when EVERY_DEBIT_COVERED); only when a debit is not covered does `judgeAdded`
 * run, from the totals that statement returned, and the store inserts what it did not refuse.
 */
import type pg from 'pg';
import { BudgetPass, budgetKey, balanceTotalsKey, budgetWindowStart, debitsByAccount, isDebit, type DebitTotals } from '../../failure-budget/failure-budget-policy.js';
import type { PendingAppend } from '../../service/ledger-store.js';
import { assert } from '../../domain/errors.js';

/**
 * Adds the batch's debits (parameters $n, $n+1, $n+2: user ids, tokens, units, one row per account and
 * token) to the submitted totals and reads, per account and token, the new total with the sealed
 * balance and settled total. The upsert takes the rows' locks in key order; balance and settled come
 * from the statement's snapshot (one block's state); the upsert's row is the newest. Balance and
 * settled are read by one primary-key seek per row (scalar subqueries): as joins, the planner hashed
 * both whole tables for the few rows of a group commit (0.4 ms a statement with 2,000 accounts, and
 * growing with them).
 */
export function submittedCtes(n: number): string {
  return `added AS (
         INSERT INTO outgoing_submitted AS o (user_id, token, units)
         SELECT user_id, token, units FROM unnest($${n}::text[], $${n + 1}::text[], $${n + 2}::numeric[]) AS k(user_id, token, units) ORDER BY user_id, token
         ON CONFLICT (user_id, token) DO UPDATE SET units = o.units + excluded.units
         RETURNING o.user_id, o.token, o.units
       ),
       judged AS (
         SELECT a.user_id, a.token, a.units AS submitted,
           COALESCE((SELECT b.units FROM balances b WHERE b.user_id = a.user_id AND b.token = a.token), 0) AS balance,
           COALESCE((SELECT s.units FROM outgoing_settled s WHERE s.user_id = a.user_id AND s.token = a.token), 0) AS settled
         FROM added a
       )`;
}

/** After submittedCtes: every account's sealed balance, less all its pending debits this batch's included, is not negative (isCovered for the whole batch). */
export const EVERY_DEBIT_COVERED = 'NOT EXISTS (SELECT 1 FROM judged j WHERE j.balance < j.submitted - j.settled)';

/** The columns of a judged row as the judging reads them. */
export const JUDGED_COLUMNS = 'user_id, token, submitted::text AS submitted, balance::text AS balance, settled::text AS settled';

export type JudgedRow = { user_id: string; token: string; submitted: string; balance: string; settled: string };

export const FAILURE_BUDGET_SQL = {
  takeSubmittedBack: `UPDATE outgoing_submitted o SET units = o.units - k.units
       FROM unnest($1::text[], $2::text[], $3::numeric[]) AS k(user_id, token, units) WHERE o.user_id = k.user_id AND o.token = k.token`,
  lockBudgets: `INSERT INTO failure_budgets AS f (subject, window_start_s, charged)
       SELECT subject, window_start_s, 0 FROM unnest($1::text[], $2::bigint[]) AS k(subject, window_start_s) ORDER BY subject, window_start_s
       ON CONFLICT (subject, window_start_s) DO UPDATE SET charged = f.charged
       RETURNING f.subject, f.window_start_s::text AS window_start_s, f.charged`,
  putBudgets: `UPDATE failure_budgets f SET charged = k.charged
       FROM unnest($1::text[], $2::bigint[], $3::int[]) AS k(subject, window_start_s, charged)
       WHERE f.subject = k.subject AND f.window_start_s = k.window_start_s`,
  forgetOldWindows: 'DELETE FROM failure_budgets WHERE subject = ANY($1::text[]) AND window_start_s < $2',
  releaseClaims: `DELETE FROM idempotency_keys WHERE (caller, key, tx_hash) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`,
  settleBlock: `INSERT INTO outgoing_settled AS o (user_id, token, units)
       SELECT from_id, token, SUM(amount) FROM transactions WHERE block_number = $1 AND type IN ('transfer', 'burn', 'swap')
       GROUP BY from_id, token ORDER BY from_id, token
       ON CONFLICT (user_id, token) DO UPDATE SET units = o.units + excluded.units`,
} as const;

type Run = <Row extends pg.QueryResultRow = pg.QueryResultRow>(name: keyof typeof FAILURE_BUDGET_SQL, values: unknown[]) => Promise<pg.QueryResult<Row>>;

/** The debits of `candidates` summed per account and token: what the submitted totals grow by. */
export function debitSums(candidates: readonly PendingAppend[]): Array<{ user_id: string; token: string; units: bigint }> {
  return debitsByAccount(candidates.map((item) => item.transaction));
}

/** The parameters of submittedCtes (and of takeSubmittedBack) for `sums`. */
export function submittedParameters(sums: ReadonlyArray<{ user_id: string; token: string; units: bigint }>): unknown[] {
  return [sums.map((sum) => sum.user_id), sums.map((sum) => sum.token), sums.map((sum) => sum.units.toString())];
}

/**
 * Judges `candidates` (the items whose idempotency claims won, in arrival order) once their debits
 * (`sums`) were added to the submitted totals, from the rows that adding returned; charges their
 * subjects and returns, by item, the refusals (their debits taken back from the totals and their
 * claims released). Call inside the append's transaction.
 */
export async function judgeAdded(
  run: Run, candidates: readonly PendingAppend[], sums: ReadonlyArray<{ user_id: string; token: string; units: bigint }>, rows: readonly JudgedRow[],
): Promise<Map<PendingAppend, number>> {
  const refusals = new Map<PendingAppend, number>();
  const debits = candidates.filter((item) => isDebit(item.transaction.type));
  const added_by_key = new Map(sums.map((sum) => [balanceTotalsKey(sum.user_id, sum.token), sum.units]));
  assert(rows.length === sums.length, 'adding the submitted totals returns one row per account and token');
  const totals = new Map<string, DebitTotals>();
  for (const row of rows) {
    const key = balanceTotalsKey(row.user_id, row.token);
    const added = added_by_key.get(key);
    assert(added !== undefined, 'a submitted total returned is one the batch added to');
    totals.set(key, { balance_units: BigInt(row.balance), submitted_units: BigInt(row.submitted) - added, settled_units: BigInt(row.settled) });
  }
  const totalsOf = (user_id: string, token: string): DebitTotals => totals.get(balanceTotalsKey(user_id, token)) as DebitTotals;
  // First as if no budget were spent: the subjects it charges are the only ones a real pass can charge.
  const asked = new Map<string, { subject: string; window_start_s: number }>();
  const optimistic = new BudgetPass({
    totals: totalsOf,
    charged: (subject, window_start_s) => {
      asked.set(budgetKey(subject, window_start_s), { subject, window_start_s });
      return 0;
    },
  });
  for (const item of debits) optimistic.judge(itemOf(item, Number.MAX_SAFE_INTEGER));
  if (asked.size === 0) return refusals;
  const windows = [...asked.values()];
  const budget_rows = (await run<{ subject: string; window_start_s: string; charged: number }>('lockBudgets', [
    windows.map((entry) => entry.subject), windows.map((entry) => entry.window_start_s),
  ])).rows;
  const charged = new Map(budget_rows.map((row) => [budgetKey(row.subject, Number(row.window_start_s)), row.charged]));
  const pass = new BudgetPass({ totals: totalsOf, charged: (subject, window_start_s) => charged.get(budgetKey(subject, window_start_s)) ?? 0 });
  for (const item of debits) {
    const decision = pass.judge(itemOf(item, item.failure_budget?.per_hour ?? null));
    if (decision.kind === 'refused') refusals.set(item, decision.retry_after_s);
  }
  await writeCharges(run, pass, windows);
  if (refusals.size > 0) await undoRefused(run, [...refusals.keys()]);
  return refusals;
}

function itemOf(item: PendingAppend, per_hour: number | null) {
  const charge = item.failure_budget ?? null;
  return { ...item.transaction, charge: charge === null || per_hour === null ? null : { subject: charge.subject, per_hour } };
}

async function writeCharges(run: Run, pass: BudgetPass, windows: ReadonlyArray<{ subject: string; window_start_s: number }>): Promise<void> {
  const changes = pass.budgetChanges();
  if (changes.length === 0) return;
  await run('putBudgets', [changes.map((change) => change.subject), changes.map((change) => change.window_start_s), changes.map((change) => change.charged)]);
  const oldest_current = Math.min(...windows.map((entry) => budgetWindowStart(entry.window_start_s)));
  await run('forgetOldWindows', [changes.map((change) => change.subject), oldest_current]);
}

/** Refused debits were added to the submitted totals up front: take them back, and release their idempotency claims. */
async function undoRefused(run: Run, refused: readonly PendingAppend[]): Promise<void> {
  await run('takeSubmittedBack', submittedParameters(debitSums(refused)));
  const claims = refused.flatMap((item) => (item.idempotency === null ? [] : [{ ...item.idempotency, tx_hash: item.transaction.tx_hash }]));
  if (claims.length > 0) {
    await run('releaseClaims', [claims.map((claim) => claim.caller), claims.map((claim) => claim.key), claims.map((claim) => claim.tx_hash)]);
  }
}
