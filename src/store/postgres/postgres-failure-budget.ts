/**
 * The failure budget on PostgreSQL (src/failure-budget), race-free across instances, and writing
 * nothing for a covered debit.
 *
 * Each instance keeps what every sender has pending in memory (SequencedPendingDebits, pending-debits.ts),
 * exact at one event sequence. Every write that changes what is pending takes its event sequences from
 * the one counter row (a group commit in its INSERT, a block at its end) and holds that row's lock
 * until it commits, so writers commit in sequence order and "the counter still reads the sequence my
 * figure is exact at" means that nobody else has written since:
 *
 * - The common case, every debit of a group commit covered and no other writer since: the store's
 *   `insertIfCovered` advances the counter only if it still reads that sequence and every account's
 *   sealed balance (one key seek) covers its pending debits with this group's, and then inserts. One
 *   statement; nothing is written but the rows themselves.
 * - Otherwise `judgeLocked`: the counter row is locked first (every other writer waits), what committed
 *   since the figure's sequence is read (the debits appended with event sequences in that range and
 *   those sealed by the blocks whose events start in it; every pending row when the figure is unknown
 *   or far behind), then the debits are judged item by item and the subjects' budget rows charged
 *   (locked after the counter, never in a cycle). Serialised on the counter, the judgement holds for
 *   the whole cluster.
 * - After each commit the store reports its change (its sequence range and debits) to the figure; a
 *   write that fails or whose report is lost only costs the next group commit the locked path.
 */
import type pg from 'pg';
import { assert } from '../../domain/shared/errors.js';
import {
  BudgetPass, balanceTotalsKey, budgetItem, budgetKey, budgetWindowStart, DEBIT_TYPES_SQL, debitsByAccount, isDebit, settlementOf, type DebitSum,
} from '../../failure-budget/failure-budget-policy.js';
import type { SequencedPendingDebits } from '../../failure-budget/pending-debits.js';
import type { PendingAppend } from '../../service/ledger-store.js';

/**
 * A figure further behind than this many event sequences is read whole (every pending row) rather
 * than caught up by the range: both reads are then bounded, by this and by PENDING_MAX.
 */
export const CATCH_UP_SEQUENCES_MAX = 100_000;

/** Per (account, token), debits summed: an `IN` list of DEBIT_TYPES, grouped by sender. */
const DEBITS_GROUPED = `SELECT from_id AS user_id, token, SUM(amount)::text AS units FROM transactions`;

export const FAILURE_BUDGET_SQL = {
  // Every writer takes this row last, or first, before any other row it locks (here, and a keyed group
  // commit's transaction): see the module's comment.
  lockEventCounter: 'SELECT last_sequence::text AS last_sequence FROM event_counter WHERE id = 1 FOR UPDATE',
  appendedBetween: `${DEBITS_GROUPED} WHERE event_seq > $1 AND event_seq <= $2 AND type IN (${DEBIT_TYPES_SQL}) GROUP BY from_id, token`,
  sealedBetween: `SELECT t.from_id AS user_id, t.token, SUM(t.amount)::text AS units FROM block_events e
       JOIN transaction_outcomes o ON o.block_number = e.number JOIN transactions t ON t.seq = o.seq
       WHERE e.first_sequence > $1 AND e.first_sequence <= $2 AND t.type IN (${DEBIT_TYPES_SQL}) GROUP BY t.from_id, t.token`,
  pendingNow: `${DEBITS_GROUPED} WHERE seq IN (SELECT seq FROM pending_transactions) AND type IN (${DEBIT_TYPES_SQL}) GROUP BY from_id, token`,
  blockDebits: `${DEBITS_GROUPED} WHERE seq IN (SELECT seq FROM transaction_outcomes WHERE block_number = $1) AND type IN (${DEBIT_TYPES_SQL}) GROUP BY from_id, token`,
  lockBudgets: `INSERT INTO failure_budgets AS f (subject, window_start_s, charged)
       SELECT subject, window_start_s, 0 FROM unnest($1::text[], $2::bigint[]) AS k(subject, window_start_s) ORDER BY subject, window_start_s
       ON CONFLICT (subject, window_start_s) DO UPDATE SET charged = f.charged
       RETURNING f.subject, f.window_start_s::text AS window_start_s, f.charged`,
  putBudgets: `UPDATE failure_budgets f SET charged = k.charged
       FROM unnest($1::text[], $2::bigint[], $3::int[]) AS k(subject, window_start_s, charged)
       WHERE f.subject = k.subject AND f.window_start_s = k.window_start_s`,
  forgetOldWindows: 'DELETE FROM failure_budgets WHERE subject = ANY($1::text[]) AND window_start_s < $2',
  releaseClaims: `DELETE FROM idempotency_keys WHERE (caller, key, tx_hash) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`,
} as const;

export type FailureBudgetStatement = keyof typeof FAILURE_BUDGET_SQL;

type Run = <Row extends pg.QueryResultRow = pg.QueryResultRow>(name: FailureBudgetStatement, values: unknown[]) => Promise<pg.QueryResult<Row>>;

type SumRow = { user_id: string; token: string; units: string };

/** The sealed balances of these accounts (those without one left out), read in the caller's transaction. */
export type ReadBalances = (keys: ReadonlyArray<{ user_id: string; token: string }>) => Promise<DebitSum[]>;

/** The debits of `candidates` summed per account and token. */
export function debitSums(candidates: readonly PendingAppend[]): DebitSum[] {
  return debitsByAccount(candidates.map((item) => item.transaction));
}

/**
 * What a group commit's insert must check, from what `figure` knows at its sequence: the accounts
 * whose debits (`sums`) are not within their floor, each with what its sealed balance must cover (its
 * pending debits with this group's). Null while the figure is unknown (the group then takes judgeLocked).
 */
export type Coverage = { known_sequence: number; sought: Array<{ user_id: string; token: string; pending_units: bigint; units: bigint }> };

export function coverageOf(figure: SequencedPendingDebits, sums: readonly DebitSum[]): Coverage | null {
  const known_sequence = figure.known_sequence;
  if (known_sequence === null) return null;
  const sought: Coverage['sought'] = [];
  for (const sum of sums) {
    const floor = figure.floor(sum.user_id, sum.token);
    if (floor !== undefined && floor >= sum.units) continue;
    sought.push({ user_id: sum.user_id, token: sum.token, units: sum.units, pending_units: figure.get(sum.user_id, sum.token) });
  }
  return { known_sequence, sought };
}

/** The parameters of the store's `insertIfCovered` after its rows' ($13–$16). */
export function coverageParameters(coverage: Coverage): unknown[] {
  const { known_sequence, sought } = coverage;
  return [
    known_sequence, sought.map((entry) => entry.user_id), sought.map((entry) => entry.token),
    sought.map((entry) => (entry.pending_units + entry.units).toString()),
  ];
}

/** After `insertIfCovered` inserted: the balances it read (`balances`, one per sought account, in order) become floors. */
export function keepFloors(figure: SequencedPendingDebits, coverage: Coverage, balances: readonly string[]): void {
  assert(balances.length === coverage.sought.length, 'the insert reads one balance per sought account');
  coverage.sought.forEach((entry, index) => figure.readFloor(entry.user_id, entry.token, BigInt(balances[index] as string), coverage.known_sequence));
}

/** What block `number` settles, read inside its write transaction: its debits, negated (they stop being pending). */
export async function blockSettlement(run: Run, number: number): Promise<DebitSum[]> {
  return settlementOf(await readSums(run, 'blockDebits', [number]));
}

/**
 * With the event counter locked (the head of the log is then `head` until this transaction ends):
 * judges `candidates` (the items whose idempotency claims won, in arrival order) and charges their
 * subjects; returns, by item, the refusals (their idempotency claims released) and the head. Brings
 * `figure` up to the head on the way when it was behind.
 */
export async function judgeLocked(
  run: Run, read_balances: ReadBalances, figure: SequencedPendingDebits, candidates: readonly PendingAppend[],
): Promise<{ refusals: Map<PendingAppend, number>; head: number }> {
  const sums = debitSums(candidates);
  // Read before the lock (synchronously, so no report moves the figure in between); caught up after it.
  const start = { sequence: figure.known_sequence, units: new Map(sums.map((sum) => [balanceTotalsKey(sum.user_id, sum.token), figure.get(sum.user_id, sum.token)])) };
  const row = (await run<{ last_sequence: string }>('lockEventCounter', [])).rows[0];
  assert(row !== undefined, 'the event counter row exists');
  const head = Number(row.last_sequence);
  const pending = await pendingAtHead(run, figure, start, head);
  const balances = new Map((await read_balances(sums)).map((balance) => [balanceTotalsKey(balance.user_id, balance.token), balance.units]));
  for (const sum of sums) figure.readFloor(sum.user_id, sum.token, balances.get(balanceTotalsKey(sum.user_id, sum.token)) ?? 0n, head);
  const totalsOf = (user_id: string, token: string) => {
    const key = balanceTotalsKey(user_id, token);
    return { balance_units: balances.get(key) ?? 0n, pending_units: pending.get(key) ?? 0n };
  };
  const refusals = await judgeItems(run, candidates.filter((item) => isDebit(item.transaction.type)), totalsOf);
  if (refusals.size > 0) await releaseClaims(run, [...refusals.keys()]);
  return { refusals, head };
}

/** Pending debits of the keys of `start.units` at `head`: caught up from the figure's sequence by the range, or read whole. */
async function pendingAtHead(
  run: Run, figure: SequencedPendingDebits, start: { sequence: number | null; units: Map<string, bigint> }, head: number,
): Promise<Map<string, bigint>> {
  const from = start.sequence;
  // (A figure ahead of the head: the database was put back, by a restore. Read whole.)
  if (from !== null && from <= head && head - from <= CATCH_UP_SEQUENCES_MAX) {
    if (from === head) return start.units;
    // Appended first, then sealed, so that no account's figure dips below zero on the way.
    const appended = await readSums(run, 'appendedBetween', [from, head]);
    const sealed = settlementOf(await readSums(run, 'sealedBetween', [from, head]));
    const changes = [...appended, ...sealed];
    figure.committed({ before: from, after: head, changes });
    const pending = new Map(start.units);
    for (const change of changes) {
      const key = balanceTotalsKey(change.user_id, change.token);
      const units = pending.get(key);
      if (units !== undefined) pending.set(key, units + change.units);
    }
    return pending;
  }
  const all = await readSums(run, 'pendingNow', []);
  figure.reset(all, head);
  return new Map(all.map((sum) => [balanceTotalsKey(sum.user_id, sum.token), sum.units]));
}

async function readSums(run: Run, name: 'appendedBetween' | 'sealedBetween' | 'pendingNow' | 'blockDebits', values: unknown[]): Promise<DebitSum[]> {
  const rows = (await run<SumRow>(name, values)).rows;
  return rows.map((row) => ({ user_id: row.user_id, token: row.token, units: BigInt(row.units) }));
}

/** Judges `debits` in order; charges and refuses through the budget rows, which it locks only for the subjects an uncovered debit charges. */
async function judgeItems(
  run: Run, debits: readonly PendingAppend[], totalsOf: (user_id: string, token: string) => { balance_units: bigint; pending_units: bigint },
): Promise<Map<PendingAppend, number>> {
  const refusals = new Map<PendingAppend, number>();
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
  return refusals;
}

function itemOf(item: PendingAppend, per_hour: number | null) {
  const charge = item.failure_budget ?? null;
  return budgetItem(item.transaction, charge === null || per_hour === null ? null : { subject: charge.subject, per_hour });
}

async function writeCharges(run: Run, pass: BudgetPass, windows: ReadonlyArray<{ subject: string; window_start_s: number }>): Promise<void> {
  const changes = pass.budgetChanges();
  if (changes.length === 0) return;
  await run('putBudgets', [changes.map((change) => change.subject), changes.map((change) => change.window_start_s), changes.map((change) => change.charged)]);
  const oldest_current = Math.min(...windows.map((entry) => budgetWindowStart(entry.window_start_s)));
  await run('forgetOldWindows', [changes.map((change) => change.subject), oldest_current]);
}

/** A refused item's idempotency claim is released: nothing of it is stored. */
async function releaseClaims(run: Run, refused: readonly PendingAppend[]): Promise<void> {
  const claims = refused.flatMap((item) => (item.idempotency === null ? [] : [{ ...item.idempotency, tx_hash: item.transaction.tx_hash }]));
  if (claims.length === 0) return;
  await run('releaseClaims', [claims.map((claim) => claim.caller), claims.map((claim) => claim.key), claims.map((claim) => claim.tx_hash)]);
}
