/**
 * `tabula audit` on both stores, run as users run it (the built CLI, no service): an intact ledger
 * passes (exit 0), and a copy altered directly with SQL — its guarding triggers dropped or bypassed,
 * as an attacker with access to the files or the server would — fails with exit 3 naming the first
 * discrepancy: the block, the transaction and what differs.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Metadata, TransactionType } from '../../src/domain/transaction.js';
import { BalanceCommitmentKeeper } from '../../src/balance-commitments/balance-commitment-keeper.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { ROOT } from '../support/service-process.js';
import { connectToSchema, createTestDatabase, type StoreKind, type TestDatabase } from '../support/test-database.js';

const BIN = path.join(ROOT, 'dist/cli/tabula.js');
const FORGED_HASH = `0x${'ab'.repeat(32)}`;

type Run = { status: number; stdout: string; stderr: string };

function tabula(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

/** The transactions of the test ledger, by what they do. */
type Hashes = Record<'alice_to_bob' | 'bob_to_carol' | 'carol_overdraws' | 'alice_burns' | 'pending', string>;

let nonce = 0;
function tx(type: TransactionType, from: string, to: string, amount_units: bigint, token = 'TAB', metadata: Metadata = {}) {
  nonce += 1;
  return pendingTransaction({ from, to, amount_units, token, type, metadata, nonce: nonce.toString(16).padStart(32, '0'), timestamp: 1_790_000_000 + nonce });
}

/**
 * Genesis; block 1 mints; block 2 transfers (one with metadata, one that fails for insufficient funds);
 * block 3 a burn and a transfer; one transaction left pending.
 */
async function buildLedger(store: LedgerStore): Promise<Hashes> {
  await store.claimSetting('native_symbol', 'TAB');
  let now_ms = 1_790_000_000_000;
  const clock = { now_ms: () => (now_ms += 1000) };
  const commitment = new BalanceCommitmentKeeper(store, pino({ level: 'silent' }));
  const producer = new BlockProducer(store, clock, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: 100 }, { commitment });
  await producer.ensureGenesis();
  await commitment.start();
  const block = async (transactions: ReturnType<typeof tx>[]) => {
    await store.appendPending(transactions.map((transaction) => ({ transaction, idempotency: null })));
    expect(await producer.sealNext()).not.toBeNull();
  };
  await block([tx('mint', 'treasury', 'alice', 1000_00000000n), tx('mint', 'treasury', 'bob', 500_000000n, 'USDG'), tx('mint', 'treasury', 'bob', 10_00000000n)]);
  const alice_to_bob = tx('transfer', 'alice', 'bob', 300_00000000n);
  const bob_to_carol = tx('transfer', 'bob', 'carol', 50_000000n, 'USDG', { memo: 'rent', lines: [1, 2.5, 'three'] });
  const carol_overdraws = tx('transfer', 'carol', 'alice', 5_00000000n);
  await block([alice_to_bob, bob_to_carol, carol_overdraws]);
  const alice_burns = tx('burn', 'alice', 'treasury', 100_00000000n);
  await block([alice_burns, tx('transfer', 'bob', 'carol', 1_00000000n)]);
  const pending = tx('transfer', 'alice', 'dave', 1n);
  await store.appendPending([{ transaction: pending, idempotency: null }]);
  return { alice_to_bob: alice_to_bob.tx_hash, bob_to_carol: bob_to_carol.tx_hash, carol_overdraws: carol_overdraws.tx_hash, alice_burns: alice_burns.tx_hash, pending: pending.tx_hash };
}

type Tampering = {
  name: string;
  /** On PostgreSQL a transaction's outcome is a row of transaction_outcomes (schema.ts, version 11). */
  sql: (hashes: Hashes, kind: StoreKind) => string;
  expected: (hashes: Hashes) => { code: string; block_number: number | null; tx_hash: string | null };
  reason: RegExp;
  /** Only on these stores (the alteration has no counterpart on the others); absent: on both. */
  stores?: StoreKind[];
};

const TAMPERINGS: Tampering[] = [
  {
    name: "a sealed transaction's amount",
    sql: (h) => `UPDATE transactions SET amount = amount + 1 WHERE tx_hash = '${h.alice_to_bob}'`,
    expected: (h) => ({ code: 'transaction_hash_mismatch', block_number: 2, tx_hash: h.alice_to_bob }),
    reason: /does not hash to its tx_hash/,
  },
  {
    name: 'a balance',
    sql: () => "UPDATE balances SET units = units + 1 WHERE user_id = 'bob' AND token = 'TAB'",
    expected: () => ({ code: 'balance_mismatch', block_number: 3, tx_hash: null }),
    reason: /^balance of bob in TAB is stored as 30900000001 base units, but the replay gives 30900000000 \(the account's last confirmed transaction is in block 3\)$/,
  },
  {
    name: "a block's balance root",
    sql: () => `UPDATE balance_roots SET root = '${FORGED_HASH}' WHERE number = 2`,
    expected: () => ({ code: 'balance_root_mismatch', block_number: 2, tx_hash: null }),
    reason: /^the stored balance root is 0xabab.*, but the balances replayed up to this block give 0x[0-9a-f]{64}$/,
  },
  {
    name: "a block's hash",
    sql: () => `UPDATE blocks SET hash = '${FORGED_HASH}' WHERE number = 2`,
    expected: () => ({ code: 'block_hash_mismatch', block_number: 2, tx_hash: null }),
    reason: /hash does not match the header/,
  },
  {
    name: "a failed transaction's outcome",
    sql: (h, kind) => kind === 'sqlite'
      ? `UPDATE transactions SET status = 'confirmed', error = NULL WHERE tx_hash = '${h.carol_overdraws}'`
      : `UPDATE transaction_outcomes SET error = NULL WHERE seq = (SELECT seq FROM transactions WHERE tx_hash = '${h.carol_overdraws}')`,
    expected: (h) => ({ code: 'outcome_mismatch', block_number: 2, tx_hash: h.carol_overdraws }),
    reason: /^stored as confirmed, but it replays as failed \(insufficient_funds\)$/,
  },
  {
    name: "a block's running totals",
    sql: () => 'UPDATE blocks SET total_users = total_users + 1 WHERE number = 3',
    expected: () => ({ code: 'totals_mismatch', block_number: 3, tx_hash: null }),
    reason: /^stored total_users is 5, but the chain up to this block gives 4$/,
  },
  {
    name: "a block's transfer volume",
    sql: () => `UPDATE blocks SET transfer_volume_totals = '{"TAB":"30000000000","USDG":"50000001"}' WHERE number = 2`,
    expected: () => ({ code: 'totals_mismatch', block_number: 2, tx_hash: null }),
    reason: /transfer volume of USDG/,
  },
  {
    name: "an account's last transfer",
    sql: () => "UPDATE accounts SET last_transfer_at = last_transfer_at - 86400 WHERE user_id = 'carol'",
    expected: () => ({ code: 'account_mismatch', block_number: null, tx_hash: null }),
    reason: /^account carol has last_transfer_at \d+, but the replay gives \d+$/,
  },
  {
    name: 'a node of the history tree (issue 12)',
    sql: () => 'UPDATE history_nodes SET hash = (SELECT hash FROM history_nodes WHERE level = 0 AND idx = 3) WHERE level = 1 AND idx = 0',
    expected: () => ({ code: 'history_tree_mismatch', block_number: 1, tx_hash: null }),
    reason: /^history node 1:0 \(level:index\) is stored as 0x[0-9a-f]{64}, but the blocks give 0x[0-9a-f]{64}$/,
  },
  {
    name: 'a pending transaction',
    sql: (h) => `UPDATE transactions SET to_id = 'mallory' WHERE tx_hash = '${h.pending}'`,
    expected: (h) => ({ code: 'transaction_hash_mismatch', block_number: null, tx_hash: h.pending }),
    reason: /pending transaction does not hash/,
  },
  {
    // PostgreSQL queues pending transactions in a table of their own; SQLite's queue is the rows without a block.
    name: "a pending transaction's place in the sealer's queue",
    sql: (h) => `DELETE FROM pending_transactions WHERE seq = (SELECT seq FROM transactions WHERE tx_hash = '${h.pending}')`,
    expected: (h) => ({ code: 'transaction_not_queued', block_number: null, tx_hash: h.pending }),
    reason: /^the transaction is in no block and not in the sealer's queue: it would never be sealed$/,
    stores: ['postgres'],
  },
];

/** Where one copy of the ledger lives, and how to alter it with SQL. */
type Copy = { url: string; alter(sql: string): Promise<void>; drop(): Promise<void> };

/** SQLite: one ledger file, copied for each alteration; the triggers that refuse changes are dropped in the copy. */
async function sqliteCopies(): Promise<{ hashes: Hashes; copy(): Promise<Copy>; drop(): Promise<void> }> {
  const database = await createTestDatabase('sqlite');
  const store = await database.open();
  const hashes = await buildLedger(store);
  await store.close();
  const file = database.url.slice('sqlite:'.length);
  let copies = 0;
  return {
    hashes,
    drop: () => database.drop(),
    copy: async () => {
      copies += 1;
      const copy = path.join(database.dir, `copy-${copies}.db`);
      fs.copyFileSync(file, copy);
      return {
        url: copy,
        alter: async (sql) => {
          const db = new Database(copy);
          for (const trigger of ['blocks_immutable', 'transactions_sealed_once', 'transactions_sealed_into_newest', 'balance_roots_immutable']) db.exec(`DROP TRIGGER ${trigger}`);
          expect(db.prepare(sql).run().changes).toBe(1);
          db.close();
        },
        drop: async () => fs.rmSync(copy, { force: true }),
      };
    },
  };
}

/** PostgreSQL: a new ledger schema for each alteration; triggers bypassed with session_replication_role. */
async function postgresCopies(): Promise<{ hashes: Hashes; copy(): Promise<Copy>; drop(): Promise<void> }> {
  const build = async (): Promise<{ database: TestDatabase; hashes: Hashes }> => {
    const database = await createTestDatabase('postgres');
    const store = await database.open();
    nonce = 0;
    const hashes = await buildLedger(store);
    await store.close();
    return { database, hashes };
  };
  const first = await build();
  return {
    hashes: first.hashes,
    drop: () => first.database.drop(),
    copy: async () => {
      const { database, hashes } = await build();
      expect(hashes).toEqual(first.hashes);
      return {
        url: database.url,
        alter: async (sql) => {
          const client = await connectToSchema(database);
          try {
            await client.query('SET session_replication_role = replica');
            expect((await client.query(sql)).rowCount).toBe(1);
          } finally {
            await client.end();
          }
        },
        drop: () => database.drop(),
      };
    },
  };
}

describe.each<StoreKind>(['sqlite', 'postgres'])('tabula audit on %s', (kind) => {
  let ledger: Awaited<ReturnType<typeof sqliteCopies>>;

  beforeAll(async () => {
    nonce = 0;
    ledger = kind === 'sqlite' ? await sqliteCopies() : await postgresCopies();
  });
  afterAll(async () => {
    await ledger?.drop();
  });

  it('passes an intact ledger, replaying every transaction and checking every balance and account', async () => {
    const copy = await ledger.copy();
    try {
      const text = await tabula(['audit', '--database-url', copy.url]);
      expect(text.status, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/^audited .+: blocks 0\.\.3 \(4 blocks\), 8 transactions replayed from genesis, 1 pending, in \d+\.\d s$/m);
      expect(text.stdout).toMatch(/^the 5 stored balances and 4 accounts are exactly the replayed ones$/m);
      expect(text.stdout).toMatch(/^the 4 stored balance roots are those of the replayed balances$/m);
      expect(text.stdout).toMatch(/^head  block 3  0x[0-9a-f]{64}$/m);
      const json = await tabula(['audit', '--json'], { DATABASE_URL: kind === 'sqlite' ? `sqlite:${copy.url}` : copy.url });
      expect(json.status, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({ audited: true, blocks: 4, transactions_replayed: 8, unsealed_transactions: 1, balances: 5, accounts: 4, balance_roots: 4 });
      const shown = await tabula(['audit', '--database-url', copy.url, '--progress']);
      expect(shown.stderr).toMatch(/\[#{30}\] 100% 8\/8 transactions replayed\n$/);
    } finally {
      await copy.drop();
    }
  });

  it.each(TAMPERINGS.filter((tampering) => tampering.stores?.includes(kind) ?? true))('exits 3 naming the first discrepancy when $name is altered', async (tampering) => {
    const copy = await ledger.copy();
    try {
      await copy.alter(tampering.sql(ledger.hashes, kind));
      const expected = tampering.expected(ledger.hashes);
      const run = await tabula(['audit', '--database-url', copy.url, '--json']);
      expect(run.status, run.stderr).toBe(3);
      const record = JSON.parse(run.stdout) as { audited: boolean; code: string; block_number: number | null; tx_hash: string | null; reason: string };
      expect(record).toMatchObject({ audited: false, ...expected });
      expect(record.reason).toMatch(tampering.reason);
      const where = expected.block_number === null ? '' : ` at block ${expected.block_number}`;
      const transaction = expected.tx_hash === null ? '' : `transaction ${expected.tx_hash}: `;
      expect(run.stderr).toBe(`audit FAILED${where}: ${transaction}${record.reason} [${expected.code}]\n`);
    } finally {
      await copy.drop();
    }
  });
});

describe('tabula audit and backup refuse what they cannot do', () => {
  it('names a missing SQLite file and an unreachable database (exit 1), and bad usage (exit 2)', async () => {
    const missing = await tabula(['audit', '--database-url', path.join(ROOT, 'no-such-folder', 'ledger.db')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/^error: cannot open the SQLite ledger .*no-such-folder.*ledger\.db/);
    expect((await tabula(['audit', '--database-url', 'postgres://postgres@127.0.0.1:1/test'])).status).toBe(1);
    expect((await tabula(['audit', 'extra'])).status).toBe(2);
    expect((await tabula(['audit', '--database-url', 'mysql://x'])).status).toBe(2);
    expect((await tabula(['backup'])).status).toBe(2);
  });

  it('backup on PostgreSQL prints the pg_dump commands and exits 2 rather than pretending', async () => {
    const run = await tabula(['backup', 'ledger.dump', '--database-url', 'postgres://tabula:secret@db.internal:5432/ledger?schema=books']);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain("pg_dump --format=custom --schema=books --file=ledger.dump 'postgres://tabula@db.internal:5432/ledger'");
    expect(run.stderr).toContain('pg_restore --exit-on-error');
    expect(run.stderr).toContain("tabula audit --database-url '<url of the restored database>?schema=books'");
    expect(run.stderr).not.toContain('secret');
  });
});
