/**
 * Where one sealed block's time goes, store call by store call: `npx tsx bench/seal-steps.ts
 * [sqlite|postgres] [transactions] [block_txs_max]`. Preloads pending transfers like
 * bench/sealer-throughput.ts, then seals them with each store method timed; prints ms per step and µs
 * per sealed transaction.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { pendingTransaction } from '../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../src/domain/transaction.js';
import { BlockProducer } from '../src/service/block-producer.js';
import type { LedgerStore } from '../src/service/ledger-store.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

const kind = process.argv[2] ?? 'sqlite';
const count = Number(process.argv[3] ?? 200_000);
const block_txs_max = Number(process.argv[4] ?? 100_000);
const ACCOUNTS = 1000;

let nonce = 0;
function transaction(from: string, to: string, type: TransactionType, amount_units: bigint): Transaction {
  nonce += 1;
  return pendingTransaction({ from, to, amount_units, token: 'TAB', type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: Math.floor(Date.now() / 1000) });
}

async function open(): Promise<{ store: LedgerStore; cleanup(): Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-seal-steps-'));
    const store = SqliteStore.open({ path: path.join(dir, 'ledger.db') });
    return { store, cleanup: async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
  }
  const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `tabula_bench_${randomBytes(4).toString('hex')}`;
  const store = await PostgresStore.open({ url, schema });
  return {
    store,
    cleanup: async () => {
      await store.close();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

/** Wraps the store's methods so that each call's wall time is added to `spent`. */
function timed(store: LedgerStore, spent: Map<string, number>): LedgerStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          spent.set(String(name), (spent.get(String(name)) ?? 0) + performance.now() - started);
        }
      };
    },
  });
}

async function main(): Promise<void> {
  const { store, cleanup } = await open();
  try {
    const spent = new Map<string, number>();
    const producer = new BlockProducer(timed(store, spent), { now_ms: () => Date.now() }, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max });
    await producer.ensureGenesis();
    const account = (index: number) => `account-${index}`;
    await store.appendPending(Array.from({ length: ACCOUNTS }, (_, index) => ({ transaction: transaction('treasury', account(index), 'mint', 1_000_000n), idempotency: null })));
    await producer.drain();
    for (let start = 0; start < count; start += 2000) {
      await store.appendPending(Array.from({ length: Math.min(2000, count - start) }, (_, offset) => {
        const index = start + offset;
        return { transaction: transaction(account(index % ACCOUNTS), account((index * 7 + 1) % ACCOUNTS), 'transfer', BigInt(1 + (index % 50))), idempotency: null };
      }));
    }
    spent.clear();
    const started = performance.now();
    let blocks = 0;
    while ((await producer.sealNext()) !== null) blocks += 1;
    const total_ms = performance.now() - started;
    const steps = Object.fromEntries([...spent].map(([name, ms]) => [name, { ms: Math.round(ms), us_per_tx: Number(((ms * 1000) / count).toFixed(2)) }]));
    const store_ms = [...spent.values()].reduce((a, b) => a + b, 0);
    console.log(JSON.stringify({
      store: kind, transactions: count, block_txs_max, blocks, total_ms: Math.round(total_ms), tx_per_s: Math.round(count / (total_ms / 1000)),
      us_per_tx: Number(((total_ms * 1000) / count).toFixed(2)), outside_store_us_per_tx: Number((((total_ms - store_ms) * 1000) / count).toFixed(2)), steps,
      load_average: Number(os.loadavg()[0]?.toFixed(2)),
    }, null, 1));
  } finally {
    await cleanup();
  }
}

await main();
