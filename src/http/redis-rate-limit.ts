/**
 * Rate-limit counts shared by every instance, in Redis (ioredis): one key per caller and window,
 * counted and given its expiry by one Lua script, so concurrent requests on any instance count
 * exactly once each. Redis is a helper, not a dependency: `FailOpenRateLimitStore` answers from the
 * process's own in-memory counts while Redis is unreachable or slow, logs it, and never turns it into
 * an error for the caller.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RateLimitStore, WindowCount } from './rate-limit.js';

/**
 * INCRBY the request's cost, and on the first hit of a window PEXPIRE: atomic, so two instances never
 * both start a window.
 */
const HIT_SCRIPT = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
if count == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

/** Time limits: a request waits at most this long for Redis before the fallback answers. */
const COMMAND_TIMEOUT_MS = 250;
const CONNECT_TIMEOUT_MS = 1000;
const RECONNECT_DELAY_MS_MAX = 2000;
const RECONNECT_DELAY_MS_STEP = 200;
/** Failures are logged at most once per this long (with a count), not once per request. */
const WARNING_INTERVAL_MS = 60_000;

export type RedisRateLimitOptions = { url: string; key_prefix?: string; logger?: Logger };

export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: Redis;
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
    });
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

  async hit(key: string, window_ms: number, now_ms: number, cost = 1): Promise<WindowCount> {
    const start_ms = now_ms - (now_ms % window_ms);
    const count = await this.redis.eval(HIT_SCRIPT, 1, `${this.key_prefix}${key}:${start_ms}`, String(window_ms), String(cost));
    if (typeof count !== 'number') throw new Error(`Redis answered the rate-limit script with ${typeof count}`);
    return { count, reset_ms: start_ms + window_ms };
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

  async hit(key: string, window_ms: number, now_ms: number, cost = 1): Promise<WindowCount> {
    try {
      return await this.primary.hit(key, window_ms, now_ms, cost);
    } catch (error) {
      this.fallbacks += 1;
      this.warn(now_ms, error);
      return this.fallback.hit(key, window_ms, now_ms, cost);
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
