/**
 * Where one sealed block's time goes, store call by store call: `npx tsx bench/seal-steps.ts
 * [sqlite|postgres] [transactions] [block_txs_max] [--append-connections N] [--append-batch N] [--sealed-before N]`.
 * Preloads pending transfers like bench/sealer-throughput.ts, then seals them with each store method
 * timed; prints ms per step and µs per sealed transaction. By default one connection appends batches
 * of 2,000 in order; `--append-connections 8 --append-batch 32` appends as the service's group commits
 * do under load (several connections at once, small batches), to see what that layout costs the sealer.
 * `--sealed-before N` appends and seals N transfers first, untimed, as `npm run bench`'s earlier scenarios
 * leave sealed rows in the same tables before its sealer scenario.
 */
import { openBenchStore, timedStore, transactionMaker } from './bench-store.js';
import os from 'node:os';
import pino from 'pino';
import { BlockProducer } from '../src/service/block-producer.js';

const args = process.argv.slice(2);
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
    const started = performance.now();
    let blocks = 0;
    while ((await producer.sealNext()) !== null) blocks += 1;
    const total_ms = performance.now() - started;
    const steps = Object.fromEntries([...spent].map(([name, ms]) => [name, { ms: Math.round(ms), us_per_tx: Number(((ms * 1000) / count).toFixed(2)) }]));
    const store_ms = [...spent.values()].reduce((a, b) => a + b, 0);
    console.log(JSON.stringify({
      store: kind, transactions: count, block_txs_max, append_connections, append_batch, sealed_before, blocks, total_ms: Math.round(total_ms), tx_per_s: Math.round(count / (total_ms / 1000)),
      us_per_tx: Number(((total_ms * 1000) / count).toFixed(2)), outside_store_us_per_tx: Number((((total_ms - store_ms) * 1000) / count).toFixed(2)), steps,
      load_average: Number(os.loadavg()[0]?.toFixed(2)),
    }, null, 1));
  } finally {
    await cleanup();
  }
}

await main();
