/**
 * What each sender has pending: the debits appended from an account and not sealed yet, per (account,
 * token), in base units. The stores keep it in memory, so that judging a covered debit writes nothing
 * (the issue-15 A/B measured running totals kept in tables at 5–9 % of the submit rate):
 *
 * - SQLite (one writer per file) keeps a `PendingDebits` and rebuilds it when another connection wrote.
 * - PostgreSQL (several instances) keeps a `SequencedPendingDebits` per instance: exact at one event
 *   sequence, moved forward by each committed write's change in sequence order. Every write that
 *   changes what is pending (a group commit, a block) takes its event sequences from the one counter
 *   row in the same transaction, so "the counter still reads the sequence I am exact at" proves that
 *   nobody else has written since (postgres-failure-budget.ts).
 */
import { assert } from '../domain/shared/errors.js';
import { isSystemAccount } from '../domain/system-accounts.js';
import { AccountTokenMap } from '../domain/account-token-map.js';
import type { DebitSum } from './failure-budget-policy.js';

export class PendingDebits {
  /** Zero entries are removed. */
  private readonly units = new AccountTokenMap<bigint>();

  get(user_id: string, token: string): bigint {
    return this.units.get(user_id, token) ?? 0n;
  }

  /** Adds `units` to an account's pending debits: positive when appended, negative when sealed. */
  add(user_id: string, token: string, units: bigint): void {
    const next = (this.units.get(user_id, token) ?? 0n) + units;
    assert(next >= 0n, 'a sender never has more debits sealed than appended');
    if (next === 0n) this.units.delete(user_id, token);
    else this.units.set(user_id, token, next);
  }

  addAll(changes: readonly DebitSum[]): void {
    for (const change of changes) this.add(change.user_id, change.token, change.units);
  }

  clear(): void {
    this.units.clear();
  }

  /** Accounts with anything pending. */
  get size(): number {
    return this.units.size;
  }
}

/**
 * One committed write's change of what is pending: the event sequences it took, (before, after], and
 * per account what it appended (positive units) or sealed (negative). Appended and sealed debits of
 * one account are separate entries, never netted: the floors take off what was appended.
 */
export type PendingDelta = { before: number; after: number; changes: readonly DebitSum[] };

/** Changes that committed ahead of one not yet reported, kept until it is (beyond this, dropped: a later read catches up). */
export const WAITING_DELTAS_MAX = 64;

/** Accounts whose floor (see SequencedPendingDebits) is kept at the most; past it they are all forgotten and read again. */
export const FLOORS_MAX = 65_536;

/**
 * Pending debits exact at one event sequence (`known_sequence`; null until first read). Only ever moves
 * forward: a change applies when it starts where the figure stands, waits (bounded) when it starts
 * later, and is ignored when it starts earlier (what it changed is already counted). So whatever order
 * commits are reported in, the figure is always what the database held at `known_sequence`.
 *
 * It also keeps, for accounts it has read, a floor of what they have available: their sealed balance
 * less their pending debits. Only a debit appended from an account lowers that (sealing a debit lowers
 * balance and pending alike; a failed debit or a credit raises it), so a floor read at one sequence
 * stays a floor once every debit appended since is taken off it, which each applied change does. A
 * debit within its account's floor is covered without reading the balance again.
 */
export class SequencedPendingDebits {
  private readonly debits = new PendingDebits();
  private known: number | null = null;
  private readonly waiting = new Map<number, PendingDelta>();
  /** A floor of balance less pending debits at `known`, per account and token. */
  private readonly floors = new AccountTokenMap<bigint>();

  get known_sequence(): number | null {
    return this.known;
  }

  /** An account's pending debits at `known_sequence`. */
  get(user_id: string, token: string): bigint {
    return this.debits.get(user_id, token);
  }

  /** A floor of what the account has available at `known_sequence` (undefined: none kept). */
  floor(user_id: string, token: string): bigint | undefined {
    return this.floors.get(user_id, token);
  }

  /**
   * Keeps `balance_units` less the account's pending debits as its floor: the balance read at
   * `sequence`, which must be where the figure stands (else nothing is kept). Never for a system
   * account, whose balances the ledger itself moves (the pool pays swaps out).
   */
  readFloor(user_id: string, token: string, balance_units: bigint, sequence: number): void {
    if (this.known !== sequence || isSystemAccount(user_id)) return;
    if (this.floors.size >= FLOORS_MAX) this.floors.clear();
    this.floors.set(user_id, token, balance_units - this.debits.get(user_id, token));
  }

  /** Reports a committed change. */
  committed(delta: PendingDelta): void {
    assert(delta.after >= delta.before, 'a write takes event sequences forward');
    if (this.known === null || delta.before < this.known) return;
    if (delta.before > this.known) {
      if (this.waiting.size < WAITING_DELTAS_MAX) this.waiting.set(delta.before, delta);
      return;
    }
    this.apply(delta);
  }

  /**
   * Replaces the figure by one read whole, exact at `sequence`: read with the event counter locked, so
   * that no write has committed beyond it (a figure ahead of it means the database was put back).
   */
  reset(pending: readonly DebitSum[], sequence: number): void {
    this.waiting.clear();
    this.floors.clear();
    this.debits.clear();
    this.debits.addAll(pending);
    this.known = sequence;
    this.drainWaiting();
  }

  private apply(delta: PendingDelta): void {
    this.debits.addAll(delta.changes);
    for (const change of delta.changes) {
      if (change.units <= 0n) continue;
      const floor = this.floors.get(change.user_id, change.token);
      if (floor !== undefined) this.floors.set(change.user_id, change.token, floor - change.units);
    }
    this.known = delta.after;
    this.drainWaiting();
  }

  private drainWaiting(): void {
    for (const before of this.waiting.keys()) {
      if (this.known !== null && before < this.known) this.waiting.delete(before);
    }
    const next = this.known === null ? undefined : this.waiting.get(this.known);
    if (next === undefined) return;
    this.waiting.delete(next.before);
    this.apply(next);
  }
}
