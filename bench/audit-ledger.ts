/**
 * How long `tabula audit` takes on a large ledger: `npx tsx bench/audit-ledger.ts [transactions]
 * [--store sqlite|postgres] [--keep <file>]` (default 1,000,000 on SQLite; needs `npm run build`).
 * Builds the ledger through the real write path — the store's appends and the block producer at
 * BLOCK_TXS_MAX = 10000 — with a realistic mix (mints to 10,000 accounts in both tokens, then transfers
 * of which some fail for insufficient funds, burns, and metadata on some), then runs the built CLI,
 * `node dist/cli/tabula.js audit --database-url … --json`, and prints its wall time and throughput.
 * PostgreSQL uses TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) in a schema of its
 * own, dropped at the end. docs/operations.md records the figure for this machine.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { pendingTransaction } from '../src/domain/hashing.js';
import type { Metadata, Transaction, TransactionType } from '../src/domain/transaction.js';
import { BlockProducer } from '../src/service/block-producer.js';
import type { LedgerStore } from '../src/service/ledger-store.js';
import { DEFAULT_WRITER_LIMITS } from '../src/service/submission-writer.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist', 'cli', 'tabula.js');
const ACCOUNTS = 10_000;
const BLOCK_TXS_MAX = 10_000;
const clock = { now_ms: () => Date.now() };

const { values, positionals } = parseArgs({
  options: { store: { type: 'string', default: 'sqlite' }, keep: { type: 'string' } },
  allowPositionals: true,
});
const count = Number(positionals[0] ?? 1_000_000);
const kind = values.store;
if (!Number.isSafeInteger(count) || count < ACCOUNTS * 2) throw new Error(`transactions must be an integer of at least ${ACCOUNTS * 2}`);
if (kind !== 'sqlite' && kind !== 'postgres') throw new Error('--store must be sqlite or postgres');
if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);

let nonce = 0;
function transaction(from: string, to: string, type: TransactionType, token: string, amount_units: bigint, metadata: Metadata = {}): Transaction {
  nonce += 1;
  return pendingTransaction({ from, to, amount_units, token, type, metadata, nonce: nonce.toString(16).padStart(32, '0'), timestamp: Math.floor(Date.now() / 1000) });
}

const account = (index: number): string => `account-${index % ACCOUNTS}`;

/** The index-th transaction of the mix: first the mints, then mostly transfers, a few burns, every 7th with metadata. */
function mix(index: number): Transaction {
  if (index < ACCOUNTS) return transaction('treasury', account(index), 'mint', 'TAB', 1_000_000n);
  if (index < 2 * ACCOUNTS) return transaction('treasury', account(index), 'mint', 'USDG', 500_000n);
  const token = index % 3 === 0 ? 'USDG' : 'TAB';
  if (index % 97 === 0) return transaction(account(index * 13), 'treasury', 'burn', token, BigInt(1 + (index % 100)));
  // Amounts up to 60,000 against balances of about a million: an account drained by chance fails a transfer.
  const amount = BigInt(1 + ((index * 7919) % 60_000));
  const metadata: Metadata = index % 7 === 0 ? { memo: `invoice ${index}`, lines: [index % 10, 'x'] } : {};
  return transaction(account(index * 31), account(index * 31 + 1 + (index % (ACCOUNTS - 1))), 'transfer', token, amount, metadata);
}

type Ledger = { store: LedgerStore; database_url: string; cleanup(): Promise<void> };

async function openLedger(): Promise<Ledger> {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-audit-bench-'));
    const file = path.join(dir, 'ledger.db');
    const store = SqliteStore.open({ path: file });
    await store.claimSetting('native_symbol', 'TAB');
    return {
      store,
      database_url: `sqlite:${file}`,
      cleanup: async () => {
        if (values.keep !== undefined) fs.copyFileSync(file, values.keep);
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `tabula_audit_bench_${randomBytes(4).toString('hex')}`;
  const store = await PostgresStore.open({ url, schema });
  await store.claimSetting('native_symbol', 'TAB');
  const with_schema = new URL(url);
  with_schema.searchParams.set('schema', schema);
  return {
    store,
    database_url: with_schema.toString(),
    cleanup: async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

async function build(store: LedgerStore): Promise<{ blocks: number; seconds: number }> {
  const started_ms = performance.now();
  const producer = new BlockProducer(store, clock, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: BLOCK_TXS_MAX });
  await producer.ensureGenesis();
  let blocks = 0;
  for (let start = 0; start < count; start += BLOCK_TXS_MAX) {
    const end = Math.min(count, start + BLOCK_TXS_MAX);
    for (let batch = start; batch < end; batch += DEFAULT_WRITER_LIMITS.batch_size_max) {
      const size = Math.min(DEFAULT_WRITER_LIMITS.batch_size_max, end - batch);
      await store.appendPending(Array.from({ length: size }, (_, offset) => ({ transaction: mix(batch + offset), idempotency: null })));
    }
    while ((await producer.sealNext()) !== null) blocks += 1;
    if ((start / BLOCK_TXS_MAX) % 10 === 9) process.stderr.write(`  built ${end} of ${count} transactions\n`);
  }
  return { blocks, seconds: (performance.now() - started_ms) / 1000 };
}

function audit(database_url: string): Promise<{ seconds: number; status: number; output: string }> {
  const started_ms = performance.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'audit', '--database-url', database_url, '--json'], { cwd: ROOT, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      const status = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ seconds: (performance.now() - started_ms) / 1000, status, output: `${stdout}${stderr}` });
    });
  });
}

async function main(): Promise<void> {
  const ledger = await openLedger();
  try {
    process.stderr.write(`building a ${count}-transaction ledger on ${kind}\n`);
    const built = await build(ledger.store);
    await ledger.store.close();
    process.stderr.write(`  built in ${built.seconds.toFixed(1)} s (${built.blocks} blocks); auditing\n`);
    const result = await audit(ledger.database_url);
    if (result.status !== 0) throw new Error(`the audit exited ${result.status}:\n${result.output}`);
    const summary = JSON.parse(result.output) as { transactions_replayed: number; balances: number; accounts: number; duration_ms: number };
    console.log(JSON.stringify({
      store: kind, transactions: summary.transactions_replayed, blocks: built.blocks + 1, balances: summary.balances, accounts: summary.accounts,
      audit_wall_s: Number(result.seconds.toFixed(2)), audit_s: summary.duration_ms / 1000,
      transactions_per_s: Math.round(summary.transactions_replayed / result.seconds), cpus: os.cpus().length, cpu: os.cpus()[0]?.model,
    }));
  } finally {
    await ledger.cleanup();
  }
}

await main();
