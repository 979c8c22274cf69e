/**
 * Rate-limit schedules shared by every instance, in Redis (ioredis): one key per caller holding its
 * GCRA schedule (see rate-limit.ts), read, decided and written by one Lua script, so concurrent
 * requests on any instance are admitted exactly once each. Redis is a helper, not a dependency:
 * `FailOpenRateLimitStore` answers from the process's own memory while Redis is unreachable or slow,
 * logs it, and never turns it into an error for the caller.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { SCHEDULE_TOLERANCE_MS, type Admission, type RateLimitStore } from './rate-limit.js';

/**
 * The same decision as `admission()` in rate-limit.ts, inside Redis. The schedule is written with
 * `%.17g`, which round-trips a double exactly, and expires when the bucket is full again (a missing
 * key and a full bucket mean the same). Replies are strings: Redis would truncate a Lua number. A look
 * (cost 0: the batch route's peek at whether a batch would fit once its repeats are not charged)
 * writes nothing, as in memory: no key for a caller that never spent, no expiry moved, no write to
 * replicate.
 */
const ADMIT_SCRIPT = `
local now_ms = tonumber(ARGV[1])
local cost_ms = tonumber(ARGV[2])
local capacity_ms = tonumber(ARGV[3])
local tolerance_ms = tonumber(ARGV[4])
local tat_ms = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tat_ms < now_ms then tat_ms = now_ms end
local after_ms = tat_ms + cost_ms
if after_ms - now_ms > capacity_ms + tolerance_ms then return {0, string.format('%.17g', tat_ms)} end
if cost_ms > 0 then
  redis.call('SET', KEYS[1], string.format('%.17g', after_ms), 'PX', math.max(1, math.ceil(after_ms - now_ms)))
end
return {1, string.format('%.17g', after_ms)}`;

/** Time limits: a request waits at most this long for Redis before the fallback answers. */
const COMMAND_TIMEOUT_MS = 250;
const CONNECT_TIMEOUT_MS = 1000;
const RECONNECT_DELAY_MS_MAX = 2000;
const RECONNECT_DELAY_MS_STEP = 200;
/** Failures are logged at most once per this long (with a count), not once per request. */
const WARNING_INTERVAL_MS = 60_000;

export type RedisRateLimitOptions = { url: string; key_prefix?: string; logger?: Logger };

/** The script as a command of the connection: sent by its SHA-1 (`EVALSHA`), the text only when Redis does not hold it yet. */
type AdmitCommand = { tabulaAdmit(key: string, now_ms: string, cost_ms: string, capacity_ms: string, tolerance_ms: string): Promise<unknown> };

export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: Redis & AdmitCommand;
  private readonly key_prefix: string;

  constructor(options: RedisRateLimitOptions) {
    this.key_prefix = options.key_prefix ?? 'tabula:rate-limit:';
    this.redis = new Redis(options.url, {
      // While disconnected, fail at once rather than queue: the fallback answers instead.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      retryStrategy: (attempt) => Math.min(attempt * RECONNECT_DELAY_MS_STEP, RECONNECT_DELAY_MS_MAX),
    }) as Redis & AdmitCommand;
    this.redis.defineCommand('tabulaAdmit', { numberOfKeys: 1, lua: ADMIT_SCRIPT });
    const warn = throttled(options.logger, 'Redis connection failed; rate limits are counted per instance until it is back');
    this.redis.on('error', (error: Error) => warn(Date.now(), error));
  }

  /** Resolves true once connected, or false after `timeout_ms` (start-up waits this long at most, then serves anyway). */
  async connected(timeout_ms = CONNECT_TIMEOUT_MS): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    return new Promise((resolve) => {
      const settle = (ready: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(ready);
      };
      const onReady = () => settle(true);
      const timer = setTimeout(() => settle(false), timeout_ms);
      this.redis.on('ready', onReady);
    });
  }

  async admit(key: string, now_ms: number, cost_ms: number, capacity_ms: number): Promise<Admission> {
    const reply = await this.redis.tabulaAdmit(`${this.key_prefix}${key}`,
      String(now_ms), String(cost_ms), String(capacity_ms), String(SCHEDULE_TOLERANCE_MS));
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error('Redis answered the rate-limit script with an unexpected reply');
    const tat_ms = Number(reply[1]);
    if (!Number.isFinite(tat_ms)) throw new Error(`Redis answered the rate-limit script with schedule ${String(reply[1])}`);
    return { allowed: reply[0] === 1, tat_ms };
  }

  async close(): Promise<void> {
    this.redis.disconnect(false);
  }
}

/**
 * Counts in `primary` (Redis) and, when it fails, in `fallback` (this process's memory): the limit
 * then holds per instance rather than cluster-wide, and `fallbacks` says how often that happened.
 */
export class FailOpenRateLimitStore implements RateLimitStore {
  private readonly primary: RateLimitStore;
  private readonly fallback: RateLimitStore;
  private readonly warn: (now_ms: number, error: unknown) => void;
  /** Requests counted by the fallback since start. */
  fallbacks = 0;

  constructor(primary: RateLimitStore, fallback: RateLimitStore, logger?: Logger) {
    this.primary = primary;
    this.fallback = fallback;
    this.warn = throttled(logger, 'shared rate-limit store unavailable; counting in this instance\'s memory');
  }

  async admit(key: string, now_ms: number, cost_ms: number, capacity_ms: number): Promise<Admission> {
    try {
      return await this.primary.admit(key, now_ms, cost_ms, capacity_ms);
    } catch (error) {
      this.fallbacks += 1;
      this.warn(now_ms, error);
      return this.fallback.admit(key, now_ms, cost_ms, capacity_ms);
    }
  }
}

/** A warning logged at most once per WARNING_INTERVAL_MS, with how many occurrences it stands for. */
function throttled(logger: Logger | undefined, message: string): (now_ms: number, error: unknown) => void {
  let last_ms = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  return (now_ms, error) => {
    if (now_ms - last_ms < WARNING_INTERVAL_MS) {
      suppressed += 1;
      return;
    }
    logger?.warn({ err: error, occurrences: suppressed + 1 }, message);
    last_ms = now_ms;
    suppressed = 0;
  };
}
