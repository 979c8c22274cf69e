/**
 * Answers that hold until the ledger's newest state moves on: each kept with the newest state (a
 * number: the newest block's, or the newest transaction's row number) that was current when it was
 * read, and served only while that is still the newest. The caller reads the newest state first on
 * every request (one read per event-loop turn on PostgreSQL; another instance's writes show there too),
 * and the answer after it, so an answer is never older than the newest state its request saw. Used for
 * an account's balances and the blocks pages (until the next block) and for an account's newest
 * transaction (until the ledger's next one). Bounded: when full, the entry kept longest goes first.
 */
export const NEWEST_STATE_CACHE_ENTRIES_MAX = 10_000;

export class NewestStateCache<Value> {
  private readonly entries = new Map<string, { newest: number | null; value: Value }>();
  private readonly entries_max: number;

  constructor(entries_max = NEWEST_STATE_CACHE_ENTRIES_MAX) {
    if (!Number.isSafeInteger(entries_max) || entries_max < 1) throw new Error(`entries_max must be a positive integer, got ${entries_max}`);
    this.entries_max = entries_max;
  }

  /** The value kept for `key` if it was read while `newest` was the newest state. */
  get(key: string, newest: number | null): Value | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.newest === newest ? entry.value : undefined;
  }

  /** Keeps `value`, read after the newest state was found to be `newest`. */
  set(key: string, newest: number | null, value: Value): void {
    this.entries.delete(key);
    if (this.entries.size >= this.entries_max) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { newest, value });
  }

  get size(): number {
    return this.entries.size;
  }
}
