import { describe, expect, it } from 'vitest';
import { profilesByThread, stepTimes } from '../../bench/cost-breakdown.js';

/** A CPU profile as V8 writes it: a call tree, and one sample (a leaf id) per time delta in µs. */
function profileOf(tree: Array<{ id: number; name: string; url: string; children?: number[] }>, samples: Array<[number, number]>) {
  return {
    nodes: tree.map((node) => ({ id: node.id, callFrame: { functionName: node.name, url: node.url }, ...(node.children === undefined ? {} : { children: node.children }) })),
    samples: samples.map(([id]) => id),
    timeDeltas: samples.map(([, delta_us]) => delta_us),
    startTime: 1_000_000,
  };
}

const TREE = [
  { id: 1, name: '(root)', url: '', children: [2, 3, 4, 9, 11] },
  { id: 2, name: '(idle)', url: '' },
  { id: 3, name: '(garbage collector)', url: '' },
  { id: 4, name: 'routeHandler', url: 'file:///app/node_modules/fastify/lib/handle-request.js', children: [5, 7] },
  { id: 5, name: 'appendBatch', url: 'file:///app/dist/store/sqlite/sqlite-store.js', children: [6] },
  { id: 6, name: 'run', url: '' },
  { id: 7, name: 'parseJsonBody', url: 'file:///app/dist/http/json-body.js', children: [8] },
  { id: 8, name: 'parse', url: '' },
  { id: 9, name: 'sealNext', url: 'file:///app/dist/service/block-producer.js', children: [10] },
  { id: 10, name: 'commitBlock', url: 'file:///app/dist/store/sqlite/sqlite-store.js' },
  { id: 11, name: 'processTicksAndRejections', url: 'node:internal/process/task_queues', children: [12, 14] },
  { id: 12, name: 'query', url: 'file:///app/node_modules/pg/lib/client.js', children: [13] },
  { id: 13, name: 'writeGeneric', url: 'node:internal/stream_base_commons' },
  { id: 14, name: 'send', url: 'file:///app/node_modules/fastify/lib/reply.js', children: [15] },
  { id: 15, name: 'writev', url: '' },
];

describe('cost breakdown: samples charged to steps', () => {
  it('charges each sample to the deepest frame a step claims, and everything under the block producer to sealing', () => {
    const profile = profileOf(TREE, [[6, 100], [8, 200], [10, 300], [2, 400], [3, 500], [11, 600], [4, 700]]);
    const { window_ms, steps } = stepTimes(profile, 0, Number.MAX_SAFE_INTEGER);
    expect(window_ms).toBeCloseTo(2.8);
    expect(Object.fromEntries([...steps].map(([step, ms]) => [step, Number(ms.toFixed(3))]))).toEqual({
      'store (SQL and driver)': 0.1,
      'body parse (JSON, exact numbers)': 0.2,
      'sealing (block producer, its store calls included)': 0.3,
      'idle (waiting: network, fsync, database)': 0.4,
      'garbage collection': 0.5,
      'other JS (promises, timers, streams)': 0.6,
      'Fastify (routing, hooks, reply)': 0.7,
    });
  });

  it('charges the PostgreSQL driver\'s socket writes to the store, and the reply\'s to the reply', () => {
    const profile = profileOf(TREE, [[13, 100], [15, 200]]);
    const { steps } = stepTimes(profile, 0, Number.MAX_SAFE_INTEGER);
    expect(Object.fromEntries([...steps].map(([step, ms]) => [step, Number(ms.toFixed(3))]))).toEqual({ 'store (SQL and driver)': 0.1, 'reply: socket write': 0.2 });
  });

  it('keeps only the samples inside the window (monotonic µs, V8 sample time = startTime + running deltas)', () => {
    const profile = profileOf(TREE, [[6, 100], [8, 100], [10, 100], [2, 100]]);
    // Samples at 1,000,100 / 1,000,200 / 1,000,300 / 1,000,400 µs.
    const { window_ms, steps } = stepTimes(profile, 1_000_150, 1_000_300);
    expect(window_ms).toBeCloseTo(0.2);
    expect([...steps.keys()].sort()).toEqual(['body parse (JSON, exact numbers)', 'sealing (block producer, its store calls included)']);
  });

  it('tells the main thread\'s profile from the worker threads\' (V8 writes one per thread)', () => {
    const names = ['CPU.20261127.021501.4242.0.001.cpuprofile', 'CPU.20261127.021501.4242.1.002.cpuprofile'];
    expect(profilesByThread(names)).toEqual({ main: names[0], others: [names[1]] });
    expect(profilesByThread([names[1] as string])).toEqual({ main: null, others: [names[1]] });
    expect(() => profilesByThread([names[0] as string, 'CPU.20261127.021502.4243.0.001.cpuprofile'])).toThrow(/more than one profile of a main thread/);
  });
});
