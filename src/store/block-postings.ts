/**
 * The postings a block commit passes on (`BlockCommit.postings`: the block's transactions as the
 * producer read them with `pendingPostings`), shared by both stores: checked against the commit's
 * outcomes, and summed into the debits the block takes off the senders' pending totals, so that no
 * store reads the block's rows back for that; and the runs of outcomes both stores seal by range.
 */
import { assert } from '../domain/shared/errors.js';
import { debitsByAccount, settlementOf, type DebitSum } from '../failure-budget/failure-budget-policy.js';
import type { BlockCommit, PendingPosting, TransactionOutcome } from '../service/ledger-store.js';

/** The postings a commit passes on are its outcomes' transactions, in position order. */
export function assertPostingsMatch(commit: BlockCommit): void {
  const postings = commit.postings;
  if (postings === undefined) return;
  assert(postings.length === commit.outcomes.length, 'a block passes one posting per outcome');
  commit.outcomes.forEach((outcome, index) => {
    const posting = postings[index] as PendingPosting;
    assert(posting.tx_hash === outcome.tx_hash && posting.seq === (outcome.seq ?? posting.seq), 'a block passes its postings in position order');
  });
}

/** What the block settles per (sender, token), negated (its debits stop being pending); null: the commit passed no postings. */
export function settledByPostings(commit: BlockCommit): DebitSum[] | null {
  if (commit.postings === undefined) return null;
  return settlementOf(debitsByAccount(commit.postings));
}

/**
 * A failed outcome, and only a failed one, has an error: a run is sealed without its errors, and the
 * per-row statement on PostgreSQL tells failed from confirmed by the error.
 */
export function assertOutcomeErrors(outcomes: readonly TransactionOutcome[]): void {
  for (const outcome of outcomes) {
    assert((outcome.status === 'failed') === (outcome.error !== null), 'a failed outcome, and only a failed one, has an error');
  }
}

/** Confirmed outcomes without a payout on consecutive row numbers and positions, sealed by their range. */
export type OutcomeRun = { first: TransactionOutcome; last: TransactionOutcome; length: number };

/**
 * A block's outcomes as both stores seal them: the runs (two or more) of confirmed outcomes without a
 * payout on consecutive row numbers and positions, and the rest one by one (failed, swaps, outcomes
 * without a row number, lone ones).
 */
export function outcomeRuns(outcomes: readonly TransactionOutcome[]): { runs: OutcomeRun[]; singles: TransactionOutcome[] } {
  const runs: OutcomeRun[] = [];
  const singles: TransactionOutcome[] = [];
  for (let index = 0; index < outcomes.length;) {
    const length = confirmedRunLength(outcomes, index);
    if (length > 1) runs.push({ first: outcomes[index] as TransactionOutcome, last: outcomes[index + length - 1] as TransactionOutcome, length });
    else singles.push(outcomes[index] as TransactionOutcome);
    index += Math.max(length, 1);
  }
  return { runs, singles };
}

/** How many outcomes from `start` are confirmed, without a payout, on consecutive row numbers and positions (0 when the first is not). */
function confirmedRunLength(outcomes: readonly TransactionOutcome[], start: number): number {
  let length = 0;
  for (let index = start; index < outcomes.length; index += 1) {
    const outcome = outcomes[index] as TransactionOutcome;
    if (outcome.status !== 'confirmed' || outcome.amount_out_units != null || outcome.seq === undefined) break;
    if (length > 0) {
      const previous = outcomes[index - 1] as TransactionOutcome;
      if (outcome.seq !== (previous.seq as number) + 1 || outcome.position !== previous.position + 1) break;
    }
    length += 1;
  }
  return length;
}
