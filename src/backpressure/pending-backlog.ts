/**
 * The bound on the pending backlog (PENDING_MAX): submissions are refused with 503 `pending_backlog_full`
 * once the transactions stored and not yet sealed would pass it, so that when sealing cannot keep up
 * the service pushes back instead of letting the backlog and the time to confirm grow without limit.
 *
 * Counting the pending rows on every request would cost a scan of the backlog each time, so the count
 * is read from the store every `refresh_ms`, and what this instance appended and sealed since is
 * added to it and taken from it. Other instances' appends (PostgreSQL) are seen at the next refresh:
 * the bound holds within what the instances accept in one refresh interval.
 *
 * A block sealed here frees its places at once (`sealed`), without counting the store, so a client
 * told to retry after the next block is not refused by a count the block has already made stale; a
 * count that was being read while the block was sealed is read again after it, and so is one that
 * appends overlapped (it may count them twice): at most one count a block, and only under load.
 *
 * The store counts up to PENDING_MAX + 1 only: whether the bound is passed is all the count decides,
 * and a backlog of millions (PENDING_MAX may be 100,000,000) would otherwise cost a scan of its
 * index after every block. A count that reached that cap says only "full": sealed blocks do not lower
 * it, the next count does.
 */
import { OverloadedError } from '../domain/shared/errors.js';

/** Reads in one refresh when blocks keep being sealed during each (the timer's next refresh follows anyway). */
const REFRESH_READS_MAX = 4;

/** PENDING_MAX: the default bound on the pending backlog, and the largest accepted. */
export const PENDING_MAX_DEFAULT = 100_000;
export const PENDING_MAX_LIMIT = 100_000_000;

export type PendingBacklogOptions = {
  pending_max: number;
  refresh_ms: number;
  /** What Retry-After says when a submission is refused (about one block interval). */
  retry_after_s: number;
};

export class PendingBacklog {
  /** The store's count of pending transactions, up to `limit` at most. */
  private readonly count_pending: (limit: number) => Promise<number>;
  private readonly options: PendingBacklogOptions;
  /** The store's count at the last refresh (at most pending_max + 1). */
  private counted = 0;
  /** Transactions this instance stored since that count was asked for. */
  private appended_since = 0;
  /** Transactions admitted and not yet stored or refused by the store (concurrent requests see each other's). */
  private in_flight = 0;
  /** Transactions this instance sealed since that count was asked for. */
  private sealed_since = 0;
  private refreshing: Promise<void> | null = null;
  /** Something changed while the count was being read: read it again when that read ends. */
  private count_again = false;
  /**
   * Appends were stored while the last count was read: it may hold them too, counted twice beside
   * `appended_since` until the next count. A block sealed here counts again rather than keep that excess.
   */
  private overlapped = false;
  private timer: NodeJS.Timeout | null = null;
  /** Submissions refused so far (each batch counts its items). */
  refused = 0;

  constructor(count_pending: (limit: number) => Promise<number>, options: PendingBacklogOptions) {
    this.count_pending = count_pending;
    this.options = options;
  }

  /** The last count reached its cap (PENDING_MAX + 1): the backlog is at least that, how much more is unknown. */
  private get capped(): boolean {
    return this.counted > this.options.pending_max;
  }

  get pending_max(): number {
    return this.options.pending_max;
  }

  /** Pending transactions as far as this instance knows: at most one refresh interval old, never less than it stored itself. */
  get estimate(): number {
    const sealed = this.capped ? 0 : this.sealed_since;
    return Math.max(0, this.counted + this.appended_since - sealed) + this.in_flight;
  }

  /** Reads the count now, then every `refresh_ms` (the timer does not keep the process alive). */
  async start(): Promise<void> {
    await this.refresh();
    this.timer ??= setInterval(() => void this.refresh(), this.options.refresh_ms);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Whether `items` more would be admitted now (holds nothing, counts nothing). */
  hasRoom(items: number): boolean {
    return items === 0 || this.estimate + items <= this.options.pending_max;
  }

  /**
   * Refuses, storing nothing, when `items` more would pass PENDING_MAX; else holds their place until
   * `settle` (so that requests admitted together cannot pass the bound together).
   */
  admit(items: number): void {
    if (this.hasRoom(items)) {
      this.in_flight += items;
      return;
    }
    this.refused += items;
    throw new OverloadedError(
      'pending_backlog_full',
      `${this.estimate} transactions are waiting to be sealed (at most ${this.options.pending_max}); retry after the next blocks`,
      this.options.retry_after_s,
    );
  }

  /** Releases `admitted` places and counts the `stored` of them as appended (until the next refresh sees them). */
  settle(admitted: number, stored: number): void {
    this.in_flight -= admitted;
    this.appended_since += stored;
  }

  /**
   * `transactions` pending ones were sealed by this instance: their places are free now, without a
   * count of the store (the timer's next one corrects for the other instances) — unless the last count
   * reached its cap, when only a count can tell what is left, or a count is being read, which may
   * predate the block and is then read again.
   */
  sealed(transactions: number): Promise<void> {
    this.sealed_since += transactions;
    if (this.capped || this.refreshing !== null || this.overlapped) return this.refresh();
    return Promise.resolve();
  }

  /**
   * Reads the store's count. Appends made while it is read may be counted twice until the next refresh
   * (never missed); a block sealed while it is read makes it read again, since that read may predate it.
   * Resolves once a count that began after this call has been read (or the store failed to count).
   */
  refresh(): Promise<void> {
    if (this.refreshing !== null) {
      this.count_again = true;
      return this.refreshing;
    }
    this.refreshing = this.countUntilSettled().finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  private async countUntilSettled(): Promise<void> {
    for (let reads = 0; reads < REFRESH_READS_MAX; reads += 1) {
      this.count_again = false;
      const appended_before = this.appended_since;
      const sealed_before = this.sealed_since;
      const limit = this.options.pending_max + 1;
      try {
        this.counted = await this.count_pending(limit);
      } catch {
        // The store cannot count now: keep the last estimate (the write itself reports the store's state).
        return;
      }
      this.appended_since -= appended_before;
      this.sealed_since -= sealed_before;
      this.overlapped = this.appended_since > 0;
      if (!this.count_again) return;
    }
  }
}
