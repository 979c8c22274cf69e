/**
 * What SQLite's appends would leave on the event loop if a thread of their own ran them (issue 10: the
 * writer thread that "what it would take" names), measured rather than estimated:
 *
 *   npx tsx bench/writer-thread-cost.ts [transactions] [--group TRANSACTIONS] [--rounds N]
 *
 * On a new SQLite file with the store's schema (SqliteStore.open, then closed), appends `transactions`
 * pending transfers among 1,000 accounts with the store's own INSERT statement, in groups of `--group`
 * (32 by default: the submission writer's group commits under the submit scenario's 64 connections),
 * one transaction a group at `synchronous=NORMAL` as the store's appends run, each group awaited before
 * the next, in two ways, alternated `--rounds` times, each on a new file:
 *
 * - on the loop: the statement and the commit on the event loop, as the store runs them today;
 * - on a worker: each group posted to a worker thread with a connection of its own, which runs the same
 *   statement and commit and answers the rows' numbers; the loop only sends and receives.
 *
 * Prints, for each, the main thread's time on a CPU a transaction (the kernel's count,
 * /proc/<pid>/task/<pid>/schedstat: what the loop would no longer spend on appends; 0 without schedstats),
 * the event loop's busy time a transaction (`performance.eventLoopUtilization`, which also counts the
 * moments the thread waited for a CPU), and the transactions a second. What neither counts is the same in
 * both: building the transactions (done before each part), and the WAL's fsync (off the loop in the store
 * already).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import Database, { SQLITE_DRIVER_PATH } from '../src/store/sqlite/sqlite-driver.js';
import { SQL, SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { transactionMaker } from './bench-store.js';
import { scheduleSeconds } from './processes.js';

const ACCOUNTS = 1000;
/** The transactions appended before the measured part: the ledger already holds rows, as in the benchmark. */
const WARM_UP_SHARE = 0.2;

type Row = [string, string, string, bigint, string, string, string, string, number, number, null, null];
type TransactionMaker = ReturnType<typeof transactionMaker>;

/** The worker: CommonJS, evaluated, with the driver the main thread loads (as the store's checkpoint worker). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver_path);
const db = new Database(workerData.database_path, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
const insert = db.prepare(workerData.insert_sql);
const append = db.transaction((rows) => rows.map((row) => Number(insert.run(...row).lastInsertRowid)));
parentPort.on('message', (rows) => {
  if (rows === 'close') { db.close(); parentPort.close(); return; }
  parentPort.postMessage(append(rows));
});
`;

/**
 * Real pending transfers (bench-store's maker: a random-looking hash each, so the `tx_hash` index is written
 * at random places as in the service), as the parameters of the store's INSERT in the order `appendOne` gives
 * them; `seq` is also the event sequence.
 */
function rowsOf(make: TransactionMaker, count: number, first_seq: number): Row[] {
  const rows: Row[] = new Array(count);
  for (let index = 0; index < count; index += 1) {
    const seq = first_seq + index;
    const tx = make(`account-${seq % ACCOUNTS}`, `account-${(seq * 7 + 1) % ACCOUNTS}`, 'transfer', BigInt(1 + (seq % 97)));
    rows[index] = [tx.tx_hash, tx.from, tx.to, tx.amount_units, tx.token, tx.type, JSON.stringify(tx.metadata), tx.nonce, tx.timestamp, seq, null, null];
  }
  return rows;
}

async function newLedger(dir: string, name: string): Promise<string> {
  const file = path.join(dir, `${name}.db`);
  await SqliteStore.open({ path: file, wal_checkpoints: null }).close();
  return file;
}

type Appender = { append(rows: Row[]): Promise<number[]>; close(): Promise<void> };

function onTheLoop(file: string): Appender {
  const db = new Database(file);
  db.pragma('synchronous = NORMAL');
  const insert = db.prepare(SQL.insertTransaction);
  const append = db.transaction((rows: Row[]) => rows.map((row) => Number(insert.run(...row).lastInsertRowid)));
  return { append: async (rows) => append(rows), close: async () => { db.close(); } };
}

function onAWorker(file: string): Appender {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver_path: SQLITE_DRIVER_PATH, database_path: file, insert_sql: SQL.insertTransaction } });
  let waiting: { resolve: (seqs: number[]) => void; reject: (error: Error) => void } | null = null;
  let failure: Error | null = null;
  const fail = (error: Error) => {
    failure = error;
    waiting?.reject(error);
  };
  worker.on('message', (seqs: number[]) => waiting?.resolve(seqs));
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the writer worker exited with code ${code}`)));
  return {
    append: (rows) => new Promise((resolve, reject) => {
      if (failure !== null) return reject(failure);
      waiting = { resolve, reject };
      worker.postMessage(rows);
    }),
    close: () => new Promise((resolve) => { worker.once('exit', () => resolve()); worker.postMessage('close'); }),
  };
}

type Measured = { main_thread_cpu_us_per_tx: number; busy_us_per_tx: number; tx_per_s: number };

async function measure(appender: Appender, transactions: number, group: number): Promise<Measured> {
  const warm_up = Math.floor(transactions * WARM_UP_SHARE);
  const make = transactionMaker();
  let next_seq = 1;
  // The rows are built before each part, so that the loop's busy time is the appends' alone.
  const run = async (groups: Row[][]) => {
    for (const rows of groups) {
      const seqs = await appender.append(rows);
      if (seqs.length !== rows.length || seqs[0] !== next_seq) throw new Error(`the group from row ${next_seq} was stored from row ${seqs[0]}`);
      next_seq += rows.length;
    }
  };
  await run(groupsOf(make, 1, warm_up, group));
  const measured = groupsOf(make, warm_up + 1, transactions - warm_up, group);
  const start = performance.eventLoopUtilization();
  const cpu_before = scheduleSeconds(process.pid, true).running_s;
  const started_ms = performance.now();
  await run(measured);
  const elapsed_ms = performance.now() - started_ms;
  const cpu_s = scheduleSeconds(process.pid, true).running_s - cpu_before;
  const busy = performance.eventLoopUtilization(start);
  await appender.close();
  const count = transactions - warm_up;
  return { main_thread_cpu_us_per_tx: (cpu_s * 1e6) / count, busy_us_per_tx: (busy.active * 1000) / count, tx_per_s: count / (elapsed_ms / 1000) };
}

function groupsOf(make: TransactionMaker, first_seq: number, count: number, group: number): Row[][] {
  const groups: Row[][] = [];
  for (let done = 0; done < count; done += group) groups.push(rowsOf(make, Math.min(group, count - done), first_seq + done));
  return groups;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { group: { type: 'string' }, rounds: { type: 'string' } } });
  const transactions = Number(positionals[0] ?? 100_000);
  const group = Number(values.group ?? 32);
  const rounds = Number(values.rounds ?? 2);
  for (const [name, value] of [['transactions', transactions], ['--group', group], ['--rounds', rounds]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-writer-thread-'));
  try {
    for (let round = 1; round <= rounds; round += 1) {
      for (const [way, open] of [['on the loop', onTheLoop], ['on a worker', onAWorker]] as const) {
        const result = await measure(open(await newLedger(dir, `${round}-${way.replaceAll(' ', '-')}`)), transactions, group);
        console.log(JSON.stringify({ round, way, group, transactions, ...result, load_average: Number(os.loadavg()[0]?.toFixed(2)) }));
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
