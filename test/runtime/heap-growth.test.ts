/**
 * HEAP_GROWING_PERCENT, measured in a process of its own (the factor is process-wide): a live set, then
 * objects that outlive a few scavenges and die in the old generation, as a loading service's batches
 * do. With the factor set, the heap stays near what is live; with V8's own choice (0, the control that
 * shows this test can fail) it grows to several times that.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { applyHeapGrowth } from '../../src/runtime/heap-growth.js';
import { ROOT } from '../support/service-process.js';

const HEAP_GROWTH_MODULE = pathToFileURL(path.join(ROOT, 'dist', 'runtime', 'heap-growth.js')).href;

/** Prints the peak of V8's used heap over the live heap after a full collection. */
const CHURN = `
import v8 from 'node:v8';
import { applyHeapGrowth } from ${JSON.stringify(HEAP_GROWTH_MODULE)};
applyHeapGrowth(Number(process.argv[1]));
const make = (seed) => { const array = new Array(128); for (let k = 0; k < 128; k += 1) array[k] = seed + k; return array; };
const live = Array.from({ length: 50_000 }, (_, index) => make(index));
const RING = 32_000;
const ring = Array.from({ length: RING }, (_, index) => make(index));
globalThis.gc();
const base = v8.getHeapStatistics().used_heap_size;
let peak = 0;
for (let index = 0; index < 1_000_000; index += 1) {
  ring[index % RING] = make(index);
  if (index % 2000 === 0) peak = Math.max(peak, v8.getHeapStatistics().used_heap_size);
}
process.stdout.write(String(peak / base) + ' ' + live.length);
`;

/**
 * The child's young generation is held small (1 MiB semi-spaces) so that the ring's objects are
 * promoted whatever the runtime's default: Node 24's young generation can hold the whole ring, and
 * nothing would reach the old generation whose growth this measures.
 */
function peakOverLive(percent: number): number {
  const flags = ['--expose-gc', '--max-semi-space-size=1', '--input-type=module', '--eval', CHURN, String(percent)];
  const child = spawnSync(process.execPath, flags, { encoding: 'utf8', timeout: 60_000 });
  expect(child.status, child.stderr).toBe(0);
  return Number(child.stdout.split(' ')[0]);
}

describe('heap growth (HEAP_GROWING_PERCENT)', () => {
  it('keeps the heap near what is live when set, where V8 alone lets garbage grow it several times over', () => {
    const bounded = peakOverLive(50);
    const unbounded = peakOverLive(0);
    expect(bounded).toBeGreaterThan(1);
    expect(bounded).toBeLessThan(2.2);
    expect(unbounded).toBeGreaterThan(bounded + 0.8);
  }, 120_000);

  it('refuses a factor outside 0 to 300', () => {
    for (const bad of [-1, 301, 1.5, Number.NaN]) expect(() => applyHeapGrowth(bad), String(bad)).toThrow(RangeError);
  });
});
