/**
 * Answers that hold until the next block is sealed, such as an account's balances and the price they
 * are valued at: each kept with the number of the block that was newest when it was read, and served
 * only while that block is still the newest. The caller reads the newest block's number first on every
 * request (one read per event-loop turn on PostgreSQL; another instance's block shows there too), so an
 * answer is never older than the newest block its request saw. Bounded: when full, the entry kept
 * longest goes first.
 */
export const NEWEST_BLOCK_CACHE_ENTRIES_MAX = 10_000;

export class NewestBlockCache<Value> {
  private readonly entries = new Map<string, { block_number: number | null; value: Value }>();
  private readonly entries_max: number;

  constructor(entries_max = NEWEST_BLOCK_CACHE_ENTRIES_MAX) {
    if (!Number.isSafeInteger(entries_max) || entries_max < 1) throw new Error(`entries_max must be a positive integer, got ${entries_max}`);
    this.entries_max = entries_max;
  }

  /** The value kept for `key` if it was read while `newest_block_number` was the newest block. */
  get(key: string, newest_block_number: number | null): Value | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.block_number === newest_block_number ? entry.value : undefined;
  }

  /** Keeps `value`, read after the newest block was found to be `newest_block_number`. */
  set(key: string, newest_block_number: number | null, value: Value): void {
    this.entries.delete(key);
    if (this.entries.size >= this.entries_max) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { block_number: newest_block_number, value });
  }

  get size(): number {
    return this.entries.size;
  }
}
