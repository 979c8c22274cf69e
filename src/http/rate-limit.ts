/**
 * Per-caller rate limit: a fixed window of `window_ms` allowing `max` requests. The count lives
 * behind `RateLimitStore` (in memory here; a shared store can implement the same interface). Headers
 * follow draft-ietf-httpapi-ratelimit-headers: `RateLimit-Policy: 1200;w=60` and
 * `RateLimit: limit=1200, remaining=1199, reset=60`; a refusal adds `Retry-After`.
 */
export type WindowCount = { count: number; reset_ms: number };

export interface RateLimitStore {
  /** Counts `cost` requests (one unless told) for `key` in the window that holds `now_ms`. */
  hit(key: string, window_ms: number, now_ms: number, cost?: number): Promise<WindowCount>;
}

export type RateLimitDecision = { allowed: boolean; headers: Record<string, string> };

/** In-memory counts, bounded: when full, windows that have ended are dropped, then the oldest. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, { start_ms: number; count: number }>();
  private readonly keys_max: number;

  constructor(keys_max = 100_000) {
    this.keys_max = keys_max;
  }

  async hit(key: string, window_ms: number, now_ms: number, cost = 1): Promise<WindowCount> {
    const start_ms = now_ms - (now_ms % window_ms);
    let window = this.windows.get(key);
    if (window === undefined || window.start_ms !== start_ms) {
      this.makeRoom(start_ms);
      window = { start_ms, count: 0 };
      this.windows.set(key, window);
    }
    window.count += cost;
    return { count: window.count, reset_ms: start_ms + window_ms };
  }

  private makeRoom(current_start_ms: number): void {
    if (this.windows.size < this.keys_max) return;
    for (const [key, window] of this.windows) if (window.start_ms < current_start_ms) this.windows.delete(key);
    while (this.windows.size >= this.keys_max) {
      const oldest = this.windows.keys().next();
      if (oldest.done === true) break;
      this.windows.delete(oldest.value);
    }
  }
}

export class RateLimiter {
  private readonly store: RateLimitStore;
  private readonly max: number;
  private readonly window_ms: number;
  private readonly policy: string;

  constructor(store: RateLimitStore, max: number, window_ms: number) {
    this.store = store;
    this.max = max;
    this.window_ms = window_ms;
    this.policy = `${max};w=${Math.ceil(window_ms / 1000)}`;
  }

  /** Counts `cost` requests for `key` (a batch costs one per transaction) and says whether they are allowed. */
  async check(key: string, now_ms: number, cost = 1): Promise<RateLimitDecision> {
    const { count, reset_ms } = await this.store.hit(key, this.window_ms, now_ms, cost);
    const reset_s = Math.max(1, Math.ceil((reset_ms - now_ms) / 1000));
    const remaining = Math.max(0, this.max - count);
    const headers: Record<string, string> = {
      'ratelimit-policy': this.policy,
      ratelimit: `limit=${this.max}, remaining=${remaining}, reset=${reset_s}`,
    };
    if (count > this.max) headers['retry-after'] = String(reset_s);
    return { allowed: count <= this.max, headers };
  }
}
