/**
 * A bounded cache of tokens that already passed full verification, so a client that sends the same
 * JWT on every request pays for one signature check, not one per request. It never widens what is
 * accepted: an entry is only made after jose verified the token, it is keyed by the SHA-256 of the
 * whole token (so two tokens are never confused), and it is used only while the token's `exp` (with
 * the same clock tolerance jose applies) has not passed and for at most `entry_age_ms_max`, after
 * which the token is verified again from scratch (so a key that the identity provider withdrew stops
 * working within that time, as with the JWKS cache).
 */
import { hash } from 'node:crypto';
import type { Clock } from '../service/clock.js';
import type { Principal } from '../service/ledger-service.js';

export type TokenCacheOptions = {
  entries_max: number;
  entry_age_ms_max: number;
  /** Seconds of leeway on `exp`, the same as given to jose. */
  clock_tolerance_s: number;
  clock: Clock;
  /** Told about every lookup, e.g. to count hits and misses. */
  on_lookup?: (hit: boolean) => void;
};

type Entry = { principal: Principal; exp_s: number; cached_until_ms: number };

export const TOKEN_CACHE_DEFAULTS = { entries_max: 10_000, entry_age_ms_max: 60_000 };

export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly options: TokenCacheOptions;

  constructor(options: TokenCacheOptions) {
    this.options = options;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The principal of a token verified before and still within its `exp`; null otherwise. */
  get(token: string): Principal | null {
    const key = keyOf(token);
    const entry = this.entries.get(key);
    const now_ms = this.options.clock.now_ms();
    const usable = entry !== undefined && this.stillValid(entry, now_ms);
    if (entry !== undefined && !usable) this.entries.delete(key);
    this.options.on_lookup?.(usable);
    return usable ? entry.principal : null;
  }

  /** Remembers a token that jose has just verified, with the `exp` it carries. */
  put(token: string, principal: Principal, exp_s: number): void {
    if (this.entries.size >= this.options.entries_max) this.makeRoom();
    const cached_until_ms = this.options.clock.now_ms() + this.options.entry_age_ms_max;
    this.entries.set(keyOf(token), { principal, exp_s, cached_until_ms });
  }

  /** jose refuses a token when `exp <= now - tolerance` (now in whole seconds); so does the cache. */
  private stillValid(entry: Entry, now_ms: number): boolean {
    const now_s = Math.floor(now_ms / 1000);
    return entry.exp_s > now_s - this.options.clock_tolerance_s && now_ms < entry.cached_until_ms;
  }

  /** Drops the oldest entries (a Map iterates in insertion order) until there is room for one more. */
  private makeRoom(): void {
    for (const key of this.entries.keys()) {
      if (this.entries.size < this.options.entries_max) break;
      this.entries.delete(key);
    }
  }
}

function keyOf(token: string): string {
  // One-shot crypto.hash: about half the cost of createHash().update().digest() on inputs this small.
  return hash('sha256', token, 'base64');
}
