/**
 * The sealer killed (SIGKILL) in the middle of a 100,000-transaction block, on both stores: 100,000
 * pending transfers are preloaded through the store, the real service starts with BLOCK_TXS_MAX=100000
 * and is killed while it writes that block (seen from outside: on PostgreSQL the chain lock its block
 * insert takes, on SQLite the write-ahead log growing). Whether the kill lands before, during or after
 * the commit, nothing is half-sealed — every sealed transaction sits in a stored block, and either the
 * whole block is there or none of it — and the restarted service seals the block whole: the chain audit
 * passes and the balances are the replayed ones.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../../src/domain/transaction.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { LOCK_CLASS } from '../../src/store/postgres/schema.js';
import { auditChain } from '../support/store-chain-audit.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ROOT } from '../support/service-process.js';
import { connectToSchema, createTestDatabase, type StoreKind, type TestDatabase } from '../support/test-database.js';

const ACCOUNTS = 1000;
const BLOCK_TXS = 100_000;
const APPEND_BATCH = 5000;
/** The kill happens at the latest this long after the start, wherever the seal is. */
const KILL_FALLBACK_MS = 30_000;
/** SQLite: a write-ahead log this large means the big block's transaction is being written. */
const WAL_BYTES_SEALING = 4 * 1024 * 1024;

const ENV = { JWT_SECRET: TEST_SECRET, BLOCK_TXS_MAX: String(BLOCK_TXS), BLOCK_INTERVAL_MS: '50', LOG_LEVEL: 'info' };
const clock = { now_ms: () => Date.now() };

let nonce = 0;
function transaction(from: string, to: string, type: TransactionType, amount_units: bigint): Transaction {
  nonce += 1;
  return pendingTransaction({
    from, to, amount_units, token: 'TAB', type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: Math.floor(Date.now() / 1000),
  });
}

const account = (index: number) => `account-${index}`;

/** Genesis and a sealed block of opening mints, then BLOCK_TXS pending transfers (some overdrawing, so some fail). */
async function preload(store: LedgerStore): Promise<string[]> {
  const producer = new BlockProducer(store, clock, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: BLOCK_TXS });
  await producer.ensureGenesis();
  await store.appendPending(Array.from({ length: ACCOUNTS }, (_, index) => ({ transaction: transaction('treasury', account(index), 'mint', 1000n), idempotency: null })));
  await producer.drain();
  const hashes: string[] = [];
  for (let start = 0; start < BLOCK_TXS; start += APPEND_BATCH) {
    const batch = Array.from({ length: Math.min(APPEND_BATCH, BLOCK_TXS - start) }, (_, offset) => {
      const index = start + offset;
      return transaction(account(index % ACCOUNTS), account((index * 7 + 1) % ACCOUNTS), 'transfer', BigInt(1 + (index % 97)));
    });
    await store.appendPending(batch.map((tx) => ({ transaction: tx, idempotency: null })));
    hashes.push(...batch.map((tx) => tx.tx_hash));
  }
  return hashes;
}

/** What the tables hold: sealed transactions, those of them outside any stored block, and the transactions the blocks count. */
type SealState = { sealed: number; orphaned: number; in_blocks: number };

const SEAL_STATE_SQL = {
  sealed: "SELECT count(*) AS n FROM transactions WHERE status <> 'pending'",
  orphaned: "SELECT count(*) AS n FROM transactions WHERE status <> 'pending' AND (block_number IS NULL OR block_number NOT IN (SELECT number FROM blocks))",
  in_blocks: 'SELECT coalesce(sum(transactions_count), 0) AS n FROM blocks',
};
/** The same on PostgreSQL, whose outcomes are rows of their own (schema.ts, version 11). */
const POSTGRES_SEAL_STATE_SQL = {
  sealed: 'SELECT count(*) AS n FROM transaction_outcomes',
  orphaned: 'SELECT count(*) AS n FROM transaction_outcomes WHERE block_number NOT IN (SELECT number FROM blocks) OR seq NOT IN (SELECT seq FROM transactions)',
  in_blocks: SEAL_STATE_SQL.in_blocks,
};

async function sealState(database: TestDatabase): Promise<SealState> {
  if (database.kind === 'sqlite') {
    // Opening it read-write recovers the write-ahead log as the service would (an unfinished transaction is dropped).
    const db = new Database(path.join(database.dir, 'ledger.db'));
    try {
      const count = (sql: string) => Number((db.prepare(sql).get() as { n: number | bigint }).n);
      return { sealed: count(SEAL_STATE_SQL.sealed), orphaned: count(SEAL_STATE_SQL.orphaned), in_blocks: count(SEAL_STATE_SQL.in_blocks) };
    } finally {
      db.close();
    }
  }
  const client = await connectToSchema(database);
  try {
    const count = async (sql: string) => Number((await client.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
    return { sealed: await count(POSTGRES_SEAL_STATE_SQL.sealed), orphaned: await count(POSTGRES_SEAL_STATE_SQL.orphaned), in_blocks: await count(POSTGRES_SEAL_STATE_SQL.in_blocks) };
  } finally {
    await client.end();
  }
}

/** Resolves with what was seen once the big block's commit is under way, or 'fallback' when it was not seen in time. */
async function commitUnderWay(database: TestDatabase, exited: () => boolean): Promise<string> {
  const deadline = Date.now() + KILL_FALLBACK_MS;
  if (database.kind === 'sqlite') {
    const wal = path.join(database.dir, 'ledger.db-wal');
    while (Date.now() < deadline && !exited()) {
      const size = fs.existsSync(wal) ? fs.statSync(wal).size : 0;
      if (size > WAL_BYTES_SEALING) return `write-ahead log at ${size} bytes`;
      await delay(2);
    }
    return 'fallback';
  }
  // The block insert's trigger takes the chain lock; it is held until the block's transaction ends.
  const client = await connectToSchema(database);
  try {
    while (Date.now() < deadline && !exited()) {
      const held = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = hashtext($2)::oid",
        [LOCK_CLASS.chain, database.postgres!.schema],
      );
      if ((held.rows[0]?.n ?? 0) > 0) return 'chain lock held by the block insert';
      await delay(5);
    }
    return 'fallback';
  } finally {
    await client.end();
  }
}

type RunningService = { child: ChildProcess; exited: Promise<number | null>; has_exited: boolean; stderr(): string };

/** `node dist/main.js` on the test database, on a port of its own; its stdout (the log) is not kept. */
function startService(database: TestDatabase): RunningService {
  const env = { ...ENV, DATABASE_URL: database.url, NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', PATH: process.env.PATH ?? '' };
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'main.js')], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const running: RunningService = {
    child,
    has_exited: false,
    stderr: () => stderr,
    exited: new Promise((resolve) => child.once('close', (code) => {
      running.has_exited = true;
      resolve(code);
    })),
  };
  return running;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe.each<StoreKind>(['sqlite', 'postgres'])('the sealer killed in the middle of a 100,000-transaction block (%s)', (kind) => {
  let database: TestDatabase | undefined;
  let running: RunningService | undefined;

  afterEach(async () => {
    if (running !== undefined && !running.has_exited) {
      running.child.kill('SIGKILL');
      await running.exited;
    }
    await database?.drop();
  });

  it('leaves nothing half-sealed, and the next sealer seals the block whole', async () => {
    database = await createTestDatabase(kind);
    const preloaded = await database.open();
    let hashes: string[];
    try {
      hashes = await preload(preloaded);
    } finally {
      await preloaded.close();
    }
    const before = await sealState(database);
    expect(before).toEqual({ sealed: ACCOUNTS, orphaned: 0, in_blocks: ACCOUNTS });

    // The first run: the service picks the 100,000 pending transfers up at once and is killed while writing them.
    const first = startService(database);
    running = first;
    const seen = await commitUnderWay(database, () => first.has_exited);
    expect(first.has_exited, `the service exited on its own: ${first.stderr()}`).toBe(false);
    first.child.kill('SIGKILL');
    await first.exited;

    // Nothing half-sealed: the big block is all there or not at all, and every sealed transaction is in a block.
    const after_kill = await sealState(database);
    expect(after_kill.orphaned, seen).toBe(0);
    expect(after_kill.sealed).toBe(after_kill.in_blocks);
    expect([ACCOUNTS, ACCOUNTS + BLOCK_TXS], `sealed after the kill (${seen})`).toContain(after_kill.sealed);

    // The restart seals what is pending, whole, and stops cleanly. (Readiness is not waited for: on
    // SQLite the seal of a block this large holds the event loop for seconds at a time.)
    const second = startService(database);
    running = second;
    const deadline = Date.now() + 90_000;
    for (;;) {
      const state = await sealState(database);
      if (state.sealed === ACCOUNTS + BLOCK_TXS) break;
      if (second.has_exited || Date.now() > deadline) throw new Error(`not sealed after the restart: ${JSON.stringify(state)}\n${second.stderr()}`);
      await delay(200);
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    const store = await database.open();
    try {
      const audit = await auditChain(store);
      expect(audit.sealed.size).toBe(ACCOUNTS + BLOCK_TXS);
      for (const tx_hash of hashes) expect(audit.sealed.has(tx_hash)).toBe(true);
      const big = await store.getBlock(audit.latest_block_number);
      expect(big?.transactions.length).toBe(BLOCK_TXS);
      expect(audit.latest_block_number).toBe(2);
      const keys = Array.from({ length: ACCOUNTS }, (_, index) => ({ user_id: account(index), token: 'TAB' }));
      const stored = new Map((await store.balancesOf(keys)).map((balance) => [balance.user_id, balance.units]));
      for (const { user_id } of keys) expect(stored.get(user_id) ?? 0n, user_id).toBe(audit.book.get(user_id, 'TAB'));
      expect(await store.pendingCount()).toBe(0);
    } finally {
      await store.close();
    }
  }, 240_000);
});
