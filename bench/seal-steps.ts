/**
 * Where one sealed block's time goes, store call by store call: `npx tsx bench/seal-steps.ts
 * [sqlite|sqlite-thread|postgres] [transactions] [block_txs_max] [--append-connections N] [--append-batch N] [--sealed-before N]`.
 * Preloads pending transfers like bench/sealer-throughput.ts, then seals them with each store method
 * timed; prints ms per step and µs per sealed transaction. By default one connection appends batches
 * of 2,000 in order; `--append-connections 8 --append-batch 32` appends as the service's group commits
 * do under load (several connections at once, small batches), to see what that layout costs the sealer.
 * `--sealed-before N` appends and seals N transfers first, untimed, as `npm run bench`'s earlier scenarios
 * leave sealed rows in the same tables before its sealer scenario. `--allocation-profile FILE` samples
 * what the seal allocates (V8's sampling heap profiler, collected objects included) into FILE, a
 * `.heapprofile` that Chrome's DevTools open, and prints the sampled total and the top allocating functions
 * (the sampling slows that run's seal: take its timings from a run without the option).
 */
import { openBenchStore, timedStore, transactionMaker } from './bench-store.js';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import pino from 'pino';
import { BlockProducer } from '../src/service/block-producer.js';

const args = process.argv.slice(2);
/** The path after `--name`, removed from `args` with it; null when the option is absent. */
function pathOption(name: string): string | null {
  const index = args.indexOf(`--${name}`);
  if (index < 0) return null;
  const value = args[index + 1];
  if (value === undefined || value.startsWith('--')) throw new Error(`--${name} takes a file path`);
  args.splice(index, 2);
  return value;
}
/** The value after `--name`, removed from `args` with it. */
function option(name: string, fallback: number): number {
  const index = args.indexOf(`--${name}`);
  if (index < 0) return fallback;
  const value = Number(args[index + 1]);
  args.splice(index, 2);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} takes a positive integer`);
  return value;
}
const append_connections = option('append-connections', 1);
const append_batch = option('append-batch', 2000);
const sealed_before = option('sealed-before', 0);
const allocation_profile = pathOption('allocation-profile');
const ALLOCATION_SAMPLING_INTERVAL_BYTES = 4096;
const ALLOCATION_SITES_SHOWN = 15;

type HeapProfileNode = { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: HeapProfileNode[] };

/** Starts V8's sampling heap profiler, keeping objects the collector has freed (what GC had to do). */
async function startAllocationSampling(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: ALLOCATION_SAMPLING_INTERVAL_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true,
  });
  return session;
}

/** Writes the profile to `file`; returns the sampled MiB in all and by allocating function, largest first. */
async function stopAllocationSampling(session: Session, file: string): Promise<{ total_mib: number; sites: Array<[string, number]> }> {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  fs.writeFileSync(file, JSON.stringify(profile));
  const bytes_by_site = new Map<string, number>();
  const pending: HeapProfileNode[] = [profile.head as HeapProfileNode];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    const frame = node.callFrame;
    const site = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`;
    bytes_by_site.set(site, (bytes_by_site.get(site) ?? 0) + node.selfSize);
    pending.push(...node.children);
  }
  const mib = (bytes: number) => Number((bytes / 1048576).toFixed(1));
  const total = [...bytes_by_site.values()].reduce((a, b) => a + b, 0);
  const sites = [...bytes_by_site].sort((a, b) => b[1] - a[1]).slice(0, ALLOCATION_SITES_SHOWN).map(([site, bytes]): [string, number] => [site, mib(bytes)]);
  return { total_mib: mib(total), sites };
}
const kind = args[0] ?? 'sqlite';
const count = Number(args[1] ?? 200_000);
const block_txs_max = Number(args[2] ?? 100_000);
const ACCOUNTS = 1000;

const transaction = transactionMaker();

async function main(): Promise<void> {
  const { store, cleanup } = await openBenchStore(kind);
  try {
    const spent = new Map<string, number>();
    const producer = new BlockProducer(timedStore(store, spent), { now_ms: () => Date.now() }, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max });
    await producer.ensureGenesis();
    const account = (index: number) => `account-${index}`;
    await store.appendPending(Array.from({ length: ACCOUNTS }, (_, index) => ({ transaction: transaction('treasury', account(index), 'mint', 1_000_000n), idempotency: null })));
    await producer.drain();
    const batch = (start: number, end: number) => Array.from({ length: Math.min(append_batch, end - start) }, (_, offset) => {
      const index = start + offset;
      return { transaction: transaction(account(index % ACCOUNTS), account((index * 7 + 1) % ACCOUNTS), 'transfer', BigInt(1 + (index % 50))), idempotency: null };
    });
    const appendTransfers = async (total: number): Promise<void> => {
      let next_start = 0;
      const appender = async (): Promise<void> => {
        while (next_start < total) {
          const start = next_start;
          next_start += append_batch;
          await store.appendPending(batch(start, total));
        }
      };
      await Promise.all(Array.from({ length: append_connections }, appender));
    };
    if (sealed_before > 0) {
      await appendTransfers(sealed_before);
      await producer.drain();
    }
    await appendTransfers(count);
    spent.clear();
    const sampling = allocation_profile === null ? null : await startAllocationSampling();
    const started = performance.now();
    let blocks = 0;
    while ((await producer.sealNext()) !== null) blocks += 1;
    const total_ms = performance.now() - started;
    const allocations = sampling === null || allocation_profile === null ? null : await stopAllocationSampling(sampling, allocation_profile);
    const steps = Object.fromEntries([...spent].map(([name, ms]) => [name, { ms: Math.round(ms), us_per_tx: Number(((ms * 1000) / count).toFixed(2)) }]));
    const store_ms = [...spent.values()].reduce((a, b) => a + b, 0);
    console.log(JSON.stringify({
      store: kind, transactions: count, block_txs_max, append_connections, append_batch, sealed_before, blocks, total_ms: Math.round(total_ms), tx_per_s: Math.round(count / (total_ms / 1000)),
      us_per_tx: Number(((total_ms * 1000) / count).toFixed(2)), outside_store_us_per_tx: Number((((total_ms - store_ms) * 1000) / count).toFixed(2)), steps,
      load_average: Number(os.loadavg()[0]?.toFixed(2)),
      ...(allocations === null ? {} : { allocated_mib_sampled: allocations.total_mib, allocating_functions_mib: Object.fromEntries(allocations.sites) }),
    }, null, 1));
  } finally {
    await cleanup();
  }
}

await main();
