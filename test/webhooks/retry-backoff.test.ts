/** The retry delays: exponential from the base, jittered within the upper half of each step, capped. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RETRY_DELAY_CAP_MS, retryDelayMs } from '../../src/webhooks/retry-backoff.js';

describe('retry backoff', () => {
  it('starts near the base and doubles with each failure', () => {
    expect(retryDelayMs(1, 1000, RETRY_DELAY_CAP_MS, () => 0)).toBe(500);
    expect(retryDelayMs(1, 1000, RETRY_DELAY_CAP_MS, () => 1)).toBe(1000);
    expect(retryDelayMs(2, 1000, RETRY_DELAY_CAP_MS, () => 1)).toBe(2000);
    expect(retryDelayMs(5, 1000, RETRY_DELAY_CAP_MS, () => 1)).toBe(16_000);
  });

  it('stays within [step/2, step] with step = min(cap, base·2^(n−1)), for any failure count, base and random value', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 10, max: 3_600_000 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (failures, base, random) => {
      const step = Math.min(RETRY_DELAY_CAP_MS, base * 2 ** Math.min(failures - 1, 30));
      const delay = retryDelayMs(failures, base, RETRY_DELAY_CAP_MS, () => random);
      expect(delay).toBeGreaterThanOrEqual(Math.floor(step / 2));
      expect(delay).toBeLessThanOrEqual(Math.ceil(step));
      expect(delay).toBeLessThanOrEqual(RETRY_DELAY_CAP_MS);
    }));
  });

  it('never exceeds the cap, even after very many failures', () => {
    expect(retryDelayMs(1_000_000, 1000, RETRY_DELAY_CAP_MS, () => 1)).toBe(RETRY_DELAY_CAP_MS);
    expect(retryDelayMs(40, 1000, 60_000, () => 0.999)).toBeLessThanOrEqual(60_000);
  });
});
