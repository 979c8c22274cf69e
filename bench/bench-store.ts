/**
 * The store-level benchmarks' shared plumbing (sealer throughput, seal steps, swap sealing, the
 * failure budget's cost): a throw-away store of either kind, and a wrapper timing its calls.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pendingTransaction } from '../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../src/domain/transaction.js';
import type { LedgerStore } from '../src/service/ledger-store.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { ThreadedSqliteStore } from '../src/store/sqlite/thread/threaded-sqlite-store.js';

export const DEFAULT_BENCH_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** A throw-away store, and where it lives: its SQLite file, or its PostgreSQL server and schema. */
export type BenchStore = {
  store: LedgerStore;
  location: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; schema: string };
  cleanup(): Promise<void>;
};

/**
 * A new SQLite file in a temporary folder, or a new schema on PostgreSQL (`url`, else
 * TEST_DATABASE_URL, else the local server); `cleanup` closes it and removes the file or drops the schema.
 * `prepare_sqlite_file` runs on the SQLite file's path before the store opens it (e.g. to set its page size).
 */
export async function openBenchStore(
  kind: string, url = process.env.TEST_DATABASE_URL ?? DEFAULT_BENCH_DATABASE_URL, prepare_sqlite_file?: (file: string) => void,
): Promise<BenchStore> {
  if (kind === 'sqlite' || kind === 'sqlite-thread') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-bench-'));
    const file = path.join(dir, 'ledger.db');
    prepare_sqlite_file?.(file);
    // sqlite-thread: the store as the service runs it, on a thread of its own (every call a handover).
    const store = kind === 'sqlite' ? SqliteStore.open({ path: file }) : await ThreadedSqliteStore.open({ path: file });
    return { store, location: { kind: 'sqlite', file }, cleanup: async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
  }
  const schema = `tabula_bench_${randomBytes(4).toString('hex')}`;
  const store = await PostgresStore.open({ url, schema });
  return {
    store,
    location: { kind: 'postgres', url, schema },
    cleanup: async () => {
      await store.close();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

/** Wraps the store's methods so that each call's wall time is added to `spent`, by method name. */
export function timedStore(store: LedgerStore, spent: Map<string, number>): LedgerStore {
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

/** Makes pending TAB transactions as the store-level benchmarks preload them: each with a nonce of its own, stamped now. */
export function transactionMaker(): (from: string, to: string, type: TransactionType, amount_units: bigint) => Transaction {
  let nonce = 0;
  return (from, to, type, amount_units) => {
    nonce += 1;
    return pendingTransaction({ from, to, amount_units, token: 'TAB', type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: Math.floor(Date.now() / 1000) });
  };
}
