/**
 * Per-caller rate limit: the generic cell rate algorithm (GCRA), a token bucket kept as one number
 * per caller. The bucket holds `max` requests and refills at `max` per `window_ms`, so a caller may
 * spend the whole limit at once and then one request every `window_ms / max`. Unlike fixed windows
 * there is no boundary to spend twice across, and a refused request spends nothing.
 *
 * The number is the caller's theoretical arrival time (`tat_ms`): the moment its bucket will be full
 * again. Admitting a cost moves it `cost × interval_ms` later, allowed while it stays at most
 * `window_ms` ahead of now. It lives behind `RateLimitStore` (in memory here, in Redis for a
 * cluster). Headers follow draft-ietf-httpapi-ratelimit-headers: `RateLimit-Policy: 1200;w=60` and
 * `RateLimit: limit=1200, remaining=1199, reset=1` (`reset`: seconds until the bucket is full again);
 * a refusal adds `Retry-After`, the seconds until the refused cost would fit.
 */

/** What a store decided: whether the cost was admitted, and the schedule after the decision. */
export type Admission = { allowed: boolean; tat_ms: number };

export interface RateLimitStore {
  /**
   * Moves `key`'s schedule (never earlier than `now_ms`) `cost_ms` later if it then stays within
   * `capacity_ms` of `now_ms`; otherwise leaves it. Atomic per key.
   */
  admit(key: string, now_ms: number, cost_ms: number, capacity_ms: number): Promise<Admission>;
}

export type RateLimitDecision = { allowed: boolean; headers: Record<string, string> };

/** Rounding slack for `window_ms / max` intervals that are not whole milliseconds. */
export const SCHEDULE_TOLERANCE_MS = 0.001;

/**
 * The decision itself, for the in-memory store; the Redis store's script repeats it in Lua, and a
 * property test (test/rate-limit/redis-rate-limit.test.ts) checks that the two agree.
 */
function admission(stored_tat_ms: number | undefined, now_ms: number, cost_ms: number, capacity_ms: number): Admission {
  const tat_ms = Math.max(stored_tat_ms ?? now_ms, now_ms);
  const after_ms = tat_ms + cost_ms;
  if (after_ms - now_ms > capacity_ms + SCHEDULE_TOLERANCE_MS) return { allowed: false, tat_ms };
  return { allowed: true, tat_ms: after_ms };
}

/**
 * In-memory schedules, bounded: when full, the least recently admitted caller is forgotten (its bucket
 * starts full again). O(1) per request, so a flood of new callers (say, many addresses with bad
 * tokens) costs no scan of the map.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly schedules = new Map<string, number>();
  private readonly keys_max: number;

  constructor(keys_max = 100_000) {
    this.keys_max = keys_max;
  }

  async admit(key: string, now_ms: number, cost_ms: number, capacity_ms: number): Promise<Admission> {
    const decision = admission(this.schedules.get(key), now_ms, cost_ms, capacity_ms);
    // Admitting nothing (a `peek`) stores nothing: a schedule left in the past decides as `now` would,
    // and a look neither makes a caller recent nor takes a place from one that spent (the guard peeks
    // at every request's address for its bad-token count, which only bad tokens should fill).
    if (!decision.allowed || cost_ms === 0) return decision;
    // Delete, then set: the Map's order stays least recently admitted first.
    this.schedules.delete(key);
    if (this.schedules.size >= this.keys_max) this.forgetLeastRecent();
    this.schedules.set(key, decision.tat_ms);
    return decision;
  }

  get size(): number {
    return this.schedules.size;
  }

  private forgetLeastRecent(): void {
    const oldest = this.schedules.keys().next();
    if (oldest.done !== true) this.schedules.delete(oldest.value);
  }
}

export class RateLimiter {
  private readonly store: RateLimitStore;
  private readonly max: number;
  private readonly window_ms: number;
  private readonly interval_ms: number;
  private readonly policy: string;

  constructor(store: RateLimitStore, max: number, window_ms: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new Error(`rate limit max must be a positive integer, got ${max}`);
    if (!Number.isSafeInteger(window_ms) || window_ms < 1) throw new Error(`rate limit window must be a positive integer of ms, got ${window_ms}`);
    this.store = store;
    this.max = max;
    this.window_ms = window_ms;
    this.interval_ms = window_ms / max;
    this.policy = `${max};w=${Math.ceil(window_ms / 1000)}`;
  }

  /** Whether `cost` requests (a batch costs one per transaction) fit: more than `max` never do. */
  fits(cost: number): boolean {
    return cost <= this.max;
  }

  /** Spends `cost` requests of `key`'s bucket if they fit, and says what is left. */
  async check(key: string, now_ms: number, cost = 1): Promise<RateLimitDecision> {
    const cost_ms = cost * this.interval_ms;
    const { allowed, tat_ms } = await this.store.admit(key, now_ms, cost_ms, this.window_ms);
    return this.decision(allowed, tat_ms, now_ms, cost_ms);
  }

  /** Whether `cost` requests of `key`'s bucket would fit now, spending nothing. */
  async peek(key: string, now_ms: number, cost = 1): Promise<RateLimitDecision> {
    const cost_ms = cost * this.interval_ms;
    // Admitting nothing within a capacity short by the cost: allowed exactly when the cost would fit.
    const { allowed, tat_ms } = await this.store.admit(key, now_ms, 0, this.window_ms - cost_ms);
    return this.decision(allowed, tat_ms, now_ms, cost_ms);
  }

  private decision(allowed: boolean, tat_ms: number, now_ms: number, cost_ms: number): RateLimitDecision {
    const backlog_ms = Math.max(0, tat_ms - now_ms);
    const remaining = Math.max(0, Math.floor((this.window_ms - backlog_ms + SCHEDULE_TOLERANCE_MS) / this.interval_ms));
    const headers: Record<string, string> = {
      'ratelimit-policy': this.policy,
      ratelimit: `limit=${this.max}, remaining=${remaining}, reset=${Math.ceil(backlog_ms / 1000)}`,
    };
    if (!allowed) headers['retry-after'] = String(Math.max(1, Math.ceil((backlog_ms + cost_ms - this.window_ms) / 1000)));
    return { allowed, headers };
  }
}
