/**
 * The rate limiter's arithmetic (GCRA) on a clock the test holds: what it admits, the headers it
 * sends, and the property that makes it a limit: over any stretch of time a caller gets at most
 * `max` plus what refilled meanwhile, while a caller that keeps to the rate is never refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore, RateLimiter, SCHEDULE_TOLERANCE_MS, type Admission, type RateLimitStore } from '../../src/http/rate-limit.js';

const T0_MS = 1_795_313_400_000; // a minute boundary, where fixed windows used to reset

/** The GCRA written out plainly, storing the schedule after every admission, a look included. */
class StoringEveryLook implements RateLimitStore {
  private readonly schedules = new Map<string, number>();

  async admit(key: string, now_ms: number, cost_ms: number, capacity_ms: number): Promise<Admission> {
    const tat_ms = Math.max(this.schedules.get(key) ?? now_ms, now_ms);
    if (tat_ms + cost_ms - now_ms > capacity_ms + SCHEDULE_TOLERANCE_MS) return { allowed: false, tat_ms };
    this.schedules.set(key, tat_ms + cost_ms);
    return { allowed: true, tat_ms: tat_ms + cost_ms };
  }
}

describe('RateLimiter (GCRA)', () => {
  it('spends the whole limit at once, then refills one request per window/max', async () => {
    const limiter = new RateLimiter(new MemoryRateLimitStore(), 3, 60_000);
    const first = await limiter.check('sub:alice', T0_MS);
    expect(first).toEqual({ allowed: true, headers: { 'ratelimit-policy': '3;w=60', ratelimit: 'limit=3, remaining=2, reset=20' } });
    expect((await limiter.check('sub:alice', T0_MS)).headers.ratelimit).toBe('limit=3, remaining=1, reset=40');
    expect((await limiter.check('sub:alice', T0_MS)).headers.ratelimit).toBe('limit=3, remaining=0, reset=60');
    const refused = await limiter.check('sub:alice', T0_MS + 5_000);
    expect(refused.allowed).toBe(false);
    expect(refused.headers).toMatchObject({ ratelimit: 'limit=3, remaining=0, reset=55', 'retry-after': '15' });
    // Refusals spend nothing: at T0 + 20 s one request has refilled, and it is admitted.
    expect((await limiter.check('sub:alice', T0_MS + 20_000)).allowed).toBe(true);
    expect((await limiter.check('sub:alice', T0_MS + 20_000)).allowed).toBe(false);
    expect((await limiter.check('sub:bob', T0_MS)).allowed).toBe(true);
  });

  it('has no window boundary: a burst just before a minute ends is not renewed just after it', async () => {
    const limiter = new RateLimiter(new MemoryRateLimitStore(), 10, 60_000);
    expect((await limiter.check('sub:alice', T0_MS - 1, 8)).headers.ratelimit).toMatch(/remaining=2/);
    const refused = await limiter.check('sub:alice', T0_MS + 1, 3);
    expect(refused.allowed).toBe(false);
    expect(refused.headers['retry-after']).toBe('6');
    expect((await limiter.check('sub:alice', T0_MS + 1, 2)).allowed).toBe(true);
  });

  it('charges a batch its cost, and says when a cost can never fit', async () => {
    const limiter = new RateLimiter(new MemoryRateLimitStore(), 1200, 60_000);
    expect(limiter.fits(1200)).toBe(true);
    expect(limiter.fits(1201)).toBe(false);
    expect((await limiter.check('sub:batcher', T0_MS, 1000)).headers.ratelimit).toBe('limit=1200, remaining=200, reset=50');
    expect((await limiter.check('sub:batcher', T0_MS, 0)).allowed).toBe(true);
  });

  it('keeps intervals that are not whole milliseconds exact (7 per minute)', async () => {
    const limiter = new RateLimiter(new MemoryRateLimitStore(), 7, 60_000);
    const answers = [];
    for (let index = 0; index < 8; index += 1) answers.push((await limiter.check('sub:sevens', T0_MS)).allowed);
    expect(answers).toEqual([true, true, true, true, true, true, true, false]);
  });

  it('never admits more than max plus what refilled, over any stretch of time', async () => {
    const step = fc.record({ advance_ms: fc.integer({ min: 0, max: 20_000 }), cost: fc.integer({ min: 1, max: 6 }) });
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), async (steps) => {
      const [max, window_ms] = [10, 60_000];
      const limiter = new RateLimiter(new MemoryRateLimitStore(), max, window_ms);
      const admitted: Array<{ at_ms: number; cost: number }> = [];
      let now_ms = T0_MS;
      for (const { advance_ms, cost } of steps) {
        now_ms += advance_ms;
        if ((await limiter.check('sub:x', now_ms, cost)).allowed) admitted.push({ at_ms: now_ms, cost });
      }
      for (const from of admitted) {
        for (const to of admitted) {
          if (to.at_ms < from.at_ms) continue;
          const spent = admitted.filter((item) => item.at_ms >= from.at_ms && item.at_ms <= to.at_ms).reduce((sum, item) => sum + item.cost, 0);
          expect(spent).toBeLessThanOrEqual(max + ((to.at_ms - from.at_ms) * max) / window_ms + 1e-9);
        }
      }
    }));
  });

  it('never refuses a caller that keeps to the rate', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1000, max: 120_000 }), async (max, window_ms) => {
      const limiter = new RateLimiter(new MemoryRateLimitStore(), max, window_ms);
      for (let index = 0; index < 3 * max; index += 1) {
        expect((await limiter.check('sub:steady', T0_MS + (index * window_ms) / max)).allowed).toBe(true);
      }
    }), { numRuns: 50 });
  });
});

describe('MemoryRateLimitStore', () => {
  it('stays within its key bound, forgetting the least recently admitted caller', async () => {
    const store = new MemoryRateLimitStore(3);
    await store.admit('first', T0_MS, 50_000, 60_000);
    await store.admit('second', T0_MS, 50_000, 60_000);
    await store.admit('third', T0_MS, 50_000, 60_000);
    await store.admit('first', T0_MS + 10_000, 10_000, 60_000); // admitted again: now the most recent
    await store.admit('fourth', T0_MS + 10_000, 1000, 60_000); // full: 'second' is forgotten
    expect(store.size).toBe(3);
    expect((await store.admit('first', T0_MS + 10_000, 30_000, 60_000)).allowed).toBe(false); // kept
    expect((await store.admit('third', T0_MS + 10_000, 30_000, 60_000)).allowed).toBe(false); // kept
    expect((await store.admit('second', T0_MS + 10_000, 30_000, 60_000)).allowed).toBe(true); // starts full again
    expect(store.size).toBe(3);
  });

  it('stores nothing for a look that admits nothing, so looks never push out a caller that spent', async () => {
    const store = new MemoryRateLimitStore(2);
    await store.admit('spent', T0_MS, 50_000, 60_000);
    for (let index = 0; index < 10; index += 1) {
      expect((await store.admit(`looked-at-${index}`, T0_MS + index, 0, 60_000)).allowed).toBe(true);
    }
    expect(store.size).toBe(1);
    expect((await store.admit('spent', T0_MS + 10, 20_000, 60_000)).allowed).toBe(false); // still counted
  });

  it('decides the same as a store that keeps every look', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.record({ spend: fc.boolean(), after_ms: fc.integer({ min: 0, max: 20_000 }) }), { maxLength: 40 }), async (steps) => {
      const limiter = new RateLimiter(new MemoryRateLimitStore(), 5, 60_000);
      const reference = new RateLimiter(new StoringEveryLook(), 5, 60_000);
      let now_ms = T0_MS;
      for (const { spend, after_ms } of steps) {
        now_ms += after_ms;
        if (spend) expect(await limiter.check('caller', now_ms)).toEqual(await reference.check('caller', now_ms));
        else expect(await limiter.peek('caller', now_ms)).toEqual(await reference.peek('caller', now_ms));
      }
    }));
  });
});
