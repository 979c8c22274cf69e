/**
 * How far V8's old generation may grow before its next full collection. By default V8 lets it reach up
 * to four times what survived the last one; under load most of what Tabula promotes there dies soon
 * after (a batch waiting for its commit, a block being sealed), so the process's resident memory is
 * mostly garbage waiting for that collection. A fixed factor keeps it near what is live, at the cost of
 * more frequent (mostly concurrent) full collections: docs/performance.md measures both.
 */
import v8 from 'node:v8';

/** 1.5× what survived: loading 1M transactions peaks under 300 MiB at the same rate (on Node 24 with `npm start`'s young generation). */
export const HEAP_GROWING_PERCENT_DEFAULT = 50;
/** 4×, V8's own ceiling: a larger factor would only let garbage grow further. */
export const HEAP_GROWING_PERCENT_MAX = 300;

/**
 * Sets the factor for the whole process (0: V8 chooses). V8 reads it at every full collection, so it
 * takes effect from the next one. Only a process's entry point calls this: it is not per service.
 */
export function applyHeapGrowth(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0 || percent > HEAP_GROWING_PERCENT_MAX) {
    throw new RangeError(`heap growth must be an integer from 0 to ${HEAP_GROWING_PERCENT_MAX}, got ${percent}`);
  }
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
