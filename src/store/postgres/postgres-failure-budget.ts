/**
 * The failure budget on PostgreSQL (src/failure-budget), race-free across instances: inside the
 * append's write transaction the submitted totals of the batch's debiting accounts are incremented
 * by an upsert, which takes their row locks (in key order) and returns the newest totals, so two
 * instances' debits from one account are judged one after the other; the subjects' budget rows are
 * locked the same way (always after the totals, so never in a cycle) only when a debit is not
 * covered. The sealer adds each block's debits to the settled totals in the block's transaction.
 */
import type pg from 'pg';
import { BudgetPass, budgetKey, balanceTotalsKey, budgetWindowStart, isDebit, type DebitTotals } from '../../failure-budget/failure-budget-policy.js';
import type { PendingAppend } from '../../service/ledger-store.js';

export const FAILURE_BUDGET_SQL = {
  // Balance and settled come from the statement's snapshot (one block's state); the upsert's row is the newest.
  addSubmitted: `WITH added AS (
         INSERT INTO outgoing_submitted AS o (user_id, token, units)
         SELECT user_id, token, units FROM unnest($1::text[], $2::text[], $3::numeric[]) AS k(user_id, token, units) ORDER BY user_id, token
         ON CONFLICT (user_id, token) DO UPDATE SET units = o.units + excluded.units
         RETURNING o.user_id, o.token, o.units
       )
       SELECT a.user_id, a.token, a.units::text AS submitted, COALESCE(b.units, 0)::text AS balance, COALESCE(s.units, 0)::text AS settled
       FROM added a LEFT JOIN balances b ON b.user_id = a.user_id AND b.token = a.token
         LEFT JOIN outgoing_settled s ON s.user_id = a.user_id AND s.token = a.token`,
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

/**
 * Judges `candidates` (the items whose idempotency claims won, in arrival order) and charges their
 * subjects; returns, by item, the refusals (their claims released). Call inside the append's transaction.
 */
export async function judgeAppends(run: Run, candidates: readonly PendingAppend[]): Promise<Map<PendingAppend, number>> {
  const refusals = new Map<PendingAppend, number>();
  const debits = candidates.filter((item) => isDebit(item.transaction.type));
  if (debits.length === 0) return refusals;
  const batch_units = new Map<string, { user_id: string; token: string; units: bigint }>();
  for (const { transaction: tx } of debits) {
    const key = balanceTotalsKey(tx.from, tx.token);
    const entry = batch_units.get(key);
    if (entry === undefined) batch_units.set(key, { user_id: tx.from, token: tx.token, units: tx.amount_units });
    else entry.units += tx.amount_units;
  }
  const keys = [...batch_units.values()];
  const rows = (await run<{ user_id: string; token: string; submitted: string; balance: string; settled: string }>('addSubmitted', [
    keys.map((key) => key.user_id), keys.map((key) => key.token), keys.map((key) => key.units.toString()),
  ])).rows;
  const totals = new Map<string, DebitTotals>();
  for (const row of rows) {
    const key = balanceTotalsKey(row.user_id, row.token);
    const added = (batch_units.get(key) as { units: bigint }).units;
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
  const taken = new Map<string, { user_id: string; token: string; units: bigint }>();
  for (const { transaction: tx } of refused) {
    const key = balanceTotalsKey(tx.from, tx.token);
    const entry = taken.get(key);
    if (entry === undefined) taken.set(key, { user_id: tx.from, token: tx.token, units: tx.amount_units });
    else entry.units += tx.amount_units;
  }
  const keys = [...taken.values()];
  await run('takeSubmittedBack', [keys.map((key) => key.user_id), keys.map((key) => key.token), keys.map((key) => key.units.toString())]);
  const claims = refused.flatMap((item) => (item.idempotency === null ? [] : [{ ...item.idempotency, tx_hash: item.transaction.tx_hash }]));
  if (claims.length > 0) {
    await run('releaseClaims', [claims.map((claim) => claim.caller), claims.map((claim) => claim.key), claims.map((claim) => claim.tx_hash)]);
  }
}
