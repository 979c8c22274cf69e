/**
 * What accepting transactions costs the store, per transaction, and what each of the transactions
 * table's indexes adds to it:
 *
 *   npx tsx bench/append-cost.ts [sqlite|postgres] [transactions] [--without INDEX[,INDEX…]]
 *     [--page-size BYTES] [--batch TRANSACTIONS] [--idempotency-keys]
 *
 * Mints opening balances to 1,000 accounts and seals them, then appends `transactions` pending transfers
 * among them in batches of the submission writer's size (as the batch endpoint does, without HTTP and
 * without sealing; `--batch` sets another size), and prints µs a transaction for the batches that start
 * after the first fifth (the ledger already holds rows, as in the benchmark's batch scenario), and what
 * was written a transaction: on SQLite the bytes this process wrote to storage (`/proc/self/io`, Linux:
 * the WAL, and its checkpoints into the database file, which run on a worker thread of this process); on
 * PostgreSQL the WAL the server wrote (the move of its insert position: the whole server's).
 *
 * `--without` drops the named indexes after the opening balances are sealed, to measure what each costs
 * on accept: the result is a ledger that can no longer answer every read, for this measurement only.
 * `--page-size` makes the new SQLite file with pages of that size (the store itself keeps SQLite's
 * default, 4,096). `--idempotency-keys` gives every appended transaction an idempotency key (a random
 * UUID of one caller, as a client that retries safely sends), to measure what storing the keys costs. PostgreSQL uses TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test),
 * in a schema of its own dropped at the end.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import Database from '../src/store/sqlite/sqlite-driver.js';
import pg from 'pg';
import pino from 'pino';
import { BlockProducer } from '../src/service/block-producer.js';
import { DEFAULT_WRITER_LIMITS } from '../src/service/submission-writer.js';
import { openBenchStore, transactionMaker, type BenchStore } from './bench-store.js';

/** Indexes of the transactions table that `--without` may drop (the primary key and `tx_hash`'s unique constraint cannot be). */
const DROPPABLE = {
  sqlite: ['transactions_sealed_by_from', 'transactions_sealed_by_to', 'transactions_by_event', 'transactions_pending'],
  // PostgreSQL keeps the pending queue in a table of its own (pending_transactions).
  postgres: ['transactions_by_from', 'transactions_by_to', 'transactions_by_event'],
} as const;
const ACCOUNTS = 1000;

const args = process.argv.slice(2);
const VALUED_FLAGS = ['--without', '--page-size', '--batch'];
const positional = args.filter((arg, index) => !arg.startsWith('--') && !VALUED_FLAGS.includes(args[index - 1] ?? ''));
const kind = positional[0] ?? 'sqlite';
if (kind !== 'sqlite' && kind !== 'postgres') throw new Error('the store is sqlite or postgres');
const count = Number(positional[1] ?? 200_000);
if (!Number.isSafeInteger(count) || count < 10 || count > 100_000_000) throw new Error('transactions: 10 to 100000000');
const without_index = args.indexOf('--without');
const without = without_index < 0 ? [] : (args[without_index + 1] ?? '').split(',').filter((name) => name !== '');
for (const name of without) {
  if (!(DROPPABLE[kind] as readonly string[]).includes(name)) throw new Error(`--without takes ${DROPPABLE[kind].join(', ')} on ${kind}; not ${name}`);
}
const page_size_index = args.indexOf('--page-size');
/** SQLite's page size for the new file (bytes, a power of two from 512 to 65536), or null for SQLite's default. */
const page_size = page_size_index < 0 ? null : Number(args[page_size_index + 1]);
if (page_size !== null && !(Number.isInteger(Math.log2(page_size)) && page_size >= 512 && page_size <= 65_536)) throw new Error('--page-size takes a power of two from 512 to 65536');
if (kind !== 'sqlite' && page_size !== null) throw new Error('--page-size is for SQLite only');

const transaction = transactionMaker();
const idempotency_keys = args.includes('--idempotency-keys');
/** What a keyed submission stores beside its transaction (the request's hash is not checked here). */
const idempotency = () => (idempotency_keys ? { caller: 'bench-client', key: randomUUID(), request_hash: `0x${'0'.repeat(64)}` } : null);
const batch_index = args.indexOf('--batch');
/** Transactions a commit: the submission writer's group at the most, unless `--batch` says otherwise. */
const batch_size = batch_index < 0 ? DEFAULT_WRITER_LIMITS.batch_size_max : Number(args[batch_index + 1]);
if (!Number.isSafeInteger(batch_size) || batch_size < 1 || batch_size > 100_000) throw new Error('--batch takes 1 to 100000 transactions');

/** Bytes this process has caused to be written to storage so far (Linux), or null. */
function processWrittenBytes(): number | null {
  try {
    const line = fs.readFileSync('/proc/self/io', 'utf8').split('\n').find((text) => text.startsWith('write_bytes:'));
    return line === undefined ? null : Number(line.split(':')[1]);
  } catch {
    return null;
  }
}

/** Sets a new SQLite file's page size: it holds from the file's first write on. */
function setPageSize(file: string): void {
  const db = new Database(file);
  db.pragma(`page_size = ${page_size}`);
  db.exec('CREATE TABLE page_size_set (x); DROP TABLE page_size_set;');
  db.close();
}

/** Drops indexes of the transactions table, through a connection of its own. */
async function dropIndexes(location: BenchStore['location'], names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  if (location.kind === 'sqlite') {
    const db = new Database(location.file);
    for (const name of names) db.exec(`DROP INDEX ${name}`);
    db.close();
    return;
  }
  const client = new pg.Client({ connectionString: location.url });
  await client.connect();
  try {
    for (const name of names) await client.query(`DROP INDEX ${location.schema}.${name}`);
  } finally {
    await client.end();
  }
}

/** What has been written so far, in bytes: this process's writes (SQLite) or the server's WAL position (PostgreSQL); null where unknown. */
async function writtenBytes(location: BenchStore['location']): Promise<number | null> {
  if (location.kind === 'sqlite') return processWrittenBytes();
  const client = new pg.Client({ connectionString: location.url });
  await client.connect();
  try {
    // The WAL's insert position, in bytes from its start: what the server has written since is the difference.
    const row = (await client.query<{ position: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text AS position")).rows[0];
    return row === undefined ? null : Number(row.position);
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const { store, location, cleanup } = await openBenchStore(kind, undefined, page_size === null ? undefined : setPageSize);
  try {
    const producer = new BlockProducer(store, { now_ms: () => Date.now() }, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: 100_000 });
    await producer.ensureGenesis();
    const account = (index: number) => `account-${index}`;
    await store.appendPending(Array.from({ length: ACCOUNTS }, (_, index) => ({ transaction: transaction('treasury', account(index), 'mint', 1_000_000_000n), idempotency: null })));
    await producer.drain();
    await dropIndexes(location, without);
    const warmup = Math.floor(count / 5);
    let measured = 0;
    let measured_ms = 0;
    let bytes_before: number | null = null;
    for (let start = 0; start < count; start += batch_size) {
      const measuring = start >= warmup;
      if (measuring && measured === 0) bytes_before = await writtenBytes(location);
      const items = Array.from({ length: Math.min(batch_size, count - start) }, (_, offset) => {
        const index = start + offset;
        return { transaction: transaction(account(index % ACCOUNTS), account((index * 7919 + 1) % ACCOUNTS), 'transfer', 1n), idempotency: idempotency() };
      });
      const began = performance.now();
      await store.appendPending(items);
      if (!measuring) continue;
      measured_ms += performance.now() - began;
      measured += items.length;
    }
    const bytes_after = await writtenBytes(location);
    console.log(JSON.stringify({
      store: kind, transactions: count, measured, batch_size, without, page_size, idempotency_keys,
      us_per_tx: Number(((measured_ms * 1000) / measured).toFixed(2)),
      tx_per_s: Math.round(measured / (measured_ms / 1000)),
      written_bytes_are: kind === 'sqlite' ? "this process's writes to storage" : "the server's WAL (its insert position)",
      written_bytes_per_tx: bytes_before === null || bytes_after === null ? null : Math.round((bytes_after - bytes_before) / measured),
      load_average: Number(os.loadavg()[0]?.toFixed(2)),
    }));
  } finally {
    await cleanup();
  }
}

await main();
