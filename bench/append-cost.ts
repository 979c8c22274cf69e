/**
 * What accepting transactions costs the store, per transaction, and what each of the transactions
 * table's indexes adds to it: `npx tsx bench/append-cost.ts [sqlite|postgres] [transactions] [--without
 * INDEX[,INDEX…]] [--page-size BYTES]`. Mints opening balances to 1,000 accounts and seals them, then appends `transactions`
 * pending transfers among them in batches of the submission writer's size (as the batch endpoint does,
 * without HTTP and without sealing), and prints µs a transaction for the appends after the first fifth
 * (the ledger already holds rows, as in the benchmark's batch scenario) and, on Linux, the bytes the
 * process wrote to storage a transaction (`/proc/self/io`: SQLite's WAL, and its checkpoints into the
 * database file, which run on a worker thread of this process). `--without` drops the named indexes
 * after the opening balances are sealed, to measure what each costs on accept: the result is a ledger
 * that can no longer answer every read, for this measurement only. `--page-size` makes the new SQLite
 * file with pages of that size (the store itself keeps SQLite's default, 4,096).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { BlockProducer } from '../src/service/block-producer.js';
import { DEFAULT_WRITER_LIMITS } from '../src/service/submission-writer.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { openBenchStore, transactionMaker, type BenchStore } from './bench-store.js';

/** Indexes of the transactions table that `--without` may drop (the primary key and `tx_hash`'s unique constraint cannot be). */
const DROPPABLE = ['transactions_by_from', 'transactions_by_to', 'transactions_by_event', 'transactions_pending'] as const;
const ACCOUNTS = 1000;

const args = process.argv.slice(2);
const positional = args.filter((arg, index) => !arg.startsWith('--') && args[index - 1] !== '--without' && args[index - 1] !== '--page-size');
const kind = positional[0] ?? 'sqlite';
const count = Number(positional[1] ?? 200_000);
const without_index = args.indexOf('--without');
const without = without_index < 0 ? [] : (args[without_index + 1] ?? '').split(',').filter((name) => name !== '');
for (const name of without) {
  if (!(DROPPABLE as readonly string[]).includes(name)) throw new Error(`--without takes ${DROPPABLE.join(', ')}; not ${name}`);
}
const page_size_index = args.indexOf('--page-size');
/** SQLite's page size for the new file (bytes, a power of two from 512 to 65536), or null for SQLite's default. */
const page_size = page_size_index < 0 ? null : Number(args[page_size_index + 1]);
if (page_size !== null && !(Number.isInteger(Math.log2(page_size)) && page_size >= 512 && page_size <= 65_536)) throw new Error('--page-size takes a power of two from 512 to 65536');
if (kind !== 'sqlite' && (without.length > 0 || page_size !== null)) throw new Error('--without and --page-size are for SQLite only');

const transaction = transactionMaker();
const batch_size = DEFAULT_WRITER_LIMITS.batch_size_max;

/** Bytes this process has caused to be written to storage so far (Linux), or null. */
function writtenBytes(): number | null {
  try {
    const line = fs.readFileSync('/proc/self/io', 'utf8').split('\n').find((text) => text.startsWith('write_bytes:'));
    return line === undefined ? null : Number(line.split(':')[1]);
  } catch {
    return null;
  }
}

/** The store, and on SQLite its file (so that a second connection can drop indexes). */
async function openStore(): Promise<BenchStore & { file: string | null }> {
  if (kind !== 'sqlite') return { ...(await openBenchStore(kind)), file: null };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-append-cost-'));
  const file = path.join(dir, 'ledger.db');
  if (page_size !== null) {
    // A page size holds from the file's first write on.
    const db = new Database(file);
    db.pragma(`page_size = ${page_size}`);
    db.exec('CREATE TABLE page_size_set (x); DROP TABLE page_size_set;');
    db.close();
  }
  const store = SqliteStore.open({ path: file });
  return { store, file, cleanup: async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
}

async function main(): Promise<void> {
  const { store, cleanup, file } = await openStore();
  try {
    const producer = new BlockProducer(store, { now_ms: () => Date.now() }, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: 100_000 });
    await producer.ensureGenesis();
    const account = (index: number) => `account-${index}`;
    await store.appendPending(Array.from({ length: ACCOUNTS }, (_, index) => ({ transaction: transaction('treasury', account(index), 'mint', 1_000_000_000n), idempotency: null })));
    await producer.drain();
    if (without.length > 0 && file !== null) {
      const db = new Database(file);
      for (const name of without) db.exec(`DROP INDEX ${name}`);
      db.close();
    }
    const warmup = Math.floor(count / 5);
    let measured_ms = 0;
    let bytes_before: number | null = null;
    for (let start = 0; start < count; start += batch_size) {
      if (start >= warmup && bytes_before === null) bytes_before = writtenBytes();
      const items = Array.from({ length: Math.min(batch_size, count - start) }, (_, offset) => {
        const index = start + offset;
        return { transaction: transaction(account(index % ACCOUNTS), account((index * 7919 + 1) % ACCOUNTS), 'transfer', 1n), idempotency: null };
      });
      const began = performance.now();
      await store.appendPending(items);
      if (start >= warmup) measured_ms += performance.now() - began;
    }
    const bytes_after = writtenBytes();
    const measured = count - warmup;
    console.log(JSON.stringify({
      store: kind, transactions: count, measured, batch_size, without, page_size,
      us_per_tx: Number(((measured_ms * 1000) / measured).toFixed(2)),
      tx_per_s: Math.round(measured / (measured_ms / 1000)),
      written_bytes_per_tx: bytes_before === null || bytes_after === null ? null : Math.round((bytes_after - bytes_before) / measured),
      load_average: Number(os.loadavg()[0]?.toFixed(2)),
    }));
  } finally {
    await cleanup();
  }
}

await main();
