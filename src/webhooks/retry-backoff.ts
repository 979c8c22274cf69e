/**
 * When a failed delivery is tried again: exponential from the base (1 s by default), doubling with
 * each consecutive failure, capped, with "equal jitter" — a random point in the upper half of the
 * step — so that endpoints failing together do not retry together.
 */

/** The longest wait between two attempts. */
export const RETRY_DELAY_CAP_MS = 3_600_000;
/** Doublings at the most (2^30 × any base is past the cap). */
const DOUBLINGS_MAX = 30;

/** The wait in ms before attempt `failures + 1`, after `failures` (≥ 1) consecutive failures. */
export function retryDelayMs(failures: number, base_ms: number, cap_ms: number = RETRY_DELAY_CAP_MS, random: () => number = Math.random): number {
  const step = Math.min(cap_ms, base_ms * 2 ** Math.min(Math.max(failures, 1) - 1, DOUBLINGS_MAX));
  return Math.round(step / 2 + random() * (step / 2));
}
