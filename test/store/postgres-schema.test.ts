/**
 * The PostgreSQL schema defends the chain by itself: these tests write to the tables directly, as a
 * buggy or stale instance (or a person with psql) might, and expect refusals. They also check that
 * migrations are safe when instances start together, and that every read has an index path (with
 * sequential scans priced out, no read plans a Seq Scan or a Sort), which is what keeps stats and
 * block pages cheap at any history length.
 */
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBlock, genesisBlock } from '../../src/domain/block.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { FAILURE_BUDGET_SQL } from '../../src/store/postgres/postgres-failure-budget.js';
import { SQL } from '../../src/store/postgres/postgres-store.js';
import { MIGRATIONS } from '../../src/store/postgres/schema.js';
import { connectToSchema, createTestDatabase, type TestDatabase } from '../support/test-database.js';

const T0 = 1_800_000_000;

function mint(index: number) {
  const preimage = { from: 'issuer', to: `user${index}`, amount_units: 10n, token: 'TAB', type: 'mint' as const, metadata: {}, nonce: index.toString(16).padStart(32, '0'), timestamp: T0 };
  return pendingTransaction(preimage);
}

describe('PostgreSQL schema', () => {
  let database: TestDatabase;
  let store: LedgerStore;
  let sql: pg.Client;

  beforeEach(async () => {
    database = await createTestDatabase('postgres');
    store = await database.open();
    sql = await connectToSchema(database);
    await store.commitBlock({ header: genesisBlock(T0), totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], balances: [], new_users: [], active_users: [] });
    const tx = mint(1);
    await store.appendPending([{ transaction: tx, idempotency: null }, { transaction: mint(2), idempotency: null }]);
    const genesis = (await store.latestBlock())!;
    const header = buildBlock(genesis, [tx.tx_hash], T0 + 10);
    await store.commitBlock({
      header, totals: { transactions: 1, users: 1, transfer_volume_units: {} },
      outcomes: [{ tx_hash: tx.tx_hash, position: 0, status: 'confirmed', error: null }],
      balances: [{ user_id: 'user1', token: 'TAB', units: 10n }], new_users: ['user1'], active_users: [],
    });
  });
  afterEach(async () => {
    await sql.end();
    await store.close();
    await database.drop();
  });

  const refuses = (statement: string, values: unknown[] = []) => expect(sql.query(statement, values)).rejects.toThrow();

  it('never changes, deletes or truncates a block', async () => {
    await refuses("UPDATE blocks SET timestamp = timestamp + 1 WHERE number = 1");
    await refuses('DELETE FROM blocks WHERE number = 1');
    await refuses('TRUNCATE blocks CASCADE');
    expect((await sql.query('SELECT COUNT(*)::int AS count FROM blocks')).rows[0].count).toBe(2);
  });

  it('never changes a transaction or its outcome, and never deletes either', async () => {
    await refuses('UPDATE transactions SET amount = 1 WHERE seq = (SELECT seq FROM pending_transactions)');
    await refuses('UPDATE transactions SET nonce = nonce');
    await refuses("UPDATE transaction_outcomes SET error = 'insufficient_funds'");
    await refuses('UPDATE transaction_outcomes SET position = position');
    await refuses('DELETE FROM transactions WHERE seq = (SELECT seq FROM pending_transactions)');
    await refuses('DELETE FROM transaction_outcomes');
    await refuses('UPDATE pending_transactions SET seq = seq + 100');
    for (const table of ['transactions', 'transaction_outcomes', 'pending_transactions']) await refuses(`TRUNCATE ${table} CASCADE`);
    expect((await sql.query('SELECT COUNT(*)::int AS count FROM transaction_outcomes')).rows[0].count).toBe(1);
  });

  it('seals a pending transaction once, only into the newest block, and only as it leaves the pending queue', async () => {
    const seal = (block_number: number, amount_out: number | null = null) => `WITH dequeued AS (DELETE FROM pending_transactions RETURNING seq)
      INSERT INTO transaction_outcomes (seq, block_number, position, error, amount_out) SELECT seq, ${block_number}, 1, NULL, ${amount_out} FROM dequeued`;
    await refuses(seal(0));
    // No block 7 (the guard is the newest-block check, once per statement, not a foreign key per row).
    await refuses(seal(7));
    // A payout is a swap's only (the pending transaction is a mint).
    await refuses(seal(1, 5));
    // An outcome for a transaction still queued, for one sealed already, for one that does not exist.
    await refuses('INSERT INTO transaction_outcomes (seq, block_number, position) SELECT seq, 1, 1 FROM pending_transactions');
    await refuses('INSERT INTO transaction_outcomes (seq, block_number, position) SELECT seq, 1, 1 FROM transaction_outcomes');
    await refuses('INSERT INTO transaction_outcomes (seq, block_number, position) VALUES (1000, 1, 1)');
    // Taken off the queue without an outcome: it would never be sealed.
    await refuses('DELETE FROM pending_transactions');
    // A position before the block's first (a status without its error cannot be written: the status is the error's absence).
    await refuses(`WITH dequeued AS (DELETE FROM pending_transactions RETURNING seq)
      INSERT INTO transaction_outcomes (seq, block_number, position, error, amount_out) SELECT seq, 1, -1, NULL, NULL FROM dequeued`);
    expect((await sql.query('SELECT COUNT(*)::int AS count FROM pending_transactions')).rows[0].count).toBe(1);
    // The sealing statement itself, into the newest block, is what the schema lets through.
    await sql.query(seal(1));
    expect((await sql.query('SELECT COUNT(*)::int AS count FROM pending_transactions')).rows[0].count).toBe(0);
  });

  it('refuses a block that goes back in time, skips a number, or declares transactions it does not seal', async () => {
    const latest = (await sql.query('SELECT hash FROM blocks WHERE number = 1')).rows[0].hash as string;
    const insert = 'INSERT INTO blocks (number, hash, parent_hash, timestamp, transactions_count, transactions_root, total_transactions, total_users, transfer_volume_totals) VALUES ($1, $2, $3, $4, $5, $6, 0, 0, \'{}\')';
    const hash = `0x${'cd'.repeat(32)}`;
    await refuses(insert, [2, hash, latest, T0, 1, hash]);
    await refuses(insert, [3, hash, latest, T0 + 20, 1, hash]);
    await refuses(insert, [2, hash, latest, T0 + 20, 0, hash]);
    // Declares one transaction but seals none: refused when the transaction commits.
    await refuses(insert, [2, hash, latest, T0 + 20, 1, hash]);
    expect((await sql.query('SELECT MAX(number)::int AS number FROM blocks')).rows[0].number).toBe(1);
  });

  it('refuses a negative balance', async () => {
    await refuses("UPDATE balances SET units = -1 WHERE user_id = 'user1'");
    await refuses("INSERT INTO balances (user_id, token, units) VALUES ('x', 'TAB', -5)");
  });

  it('applies migrations once when instances start together', async () => {
    const fresh = await createTestDatabase('postgres');
    try {
      const stores = await Promise.all(Array.from({ length: 4 }, () => fresh.open()));
      const versions = await Promise.all(stores.map(async (opened) => opened.getSetting('anything')));
      expect(versions).toEqual([null, null, null, null]);
      await Promise.all(stores.map((opened) => opened.close()));
      const reopened = await fresh.open();
      await reopened.close();
      const check = await connectToSchema(fresh);
      const rows = (await check.query('SELECT version FROM schema_migrations ORDER BY version')).rows;
      await check.end();
      expect(rows).toEqual(MIGRATIONS.map((migration) => ({ version: migration.version })));
    } finally {
      await fresh.drop();
    }
  });

  describe('query plans', () => {
    const SAMPLES: Partial<Record<keyof typeof SQL, unknown[]>> = {
      getTransaction: [`0x${'ab'.repeat(32)}`],
      accountHistory: ['alice', 1_000_000, 21],
      newestAccountSeqs: [['alice', 'bob'], [1_000_000, 5]],
      newestSeq: [],
      transactionsByHash: [[`0x${'ab'.repeat(32)}`, `0x${'cd'.repeat(32)}`]],
      findIdempotency: ['alice', 'k'],
      findIdempotencies: [['alice'], ['k']],
      countIdempotencyKeys: ['alice', ['k', 'l']],
      pendingTransactions: [100],
      pendingPostings: [100],
      balancesOf: [['alice'], ['TAB']],
      balancesOfUser: ['alice'],
      pricedBalances: ['alice'],
      knownUsers: [['alice', 'bob']],
      latestBlock: [],
      blockAtOrBefore: [T0],
      getBlock: [1],
      listBlocks: [1_000_000, 20],
      blockTransactionHashes: [1],
      activeUsers: [T0],
      getSetting: ['native_symbol'],
      pendingCount: [],
      pendingCountUpTo: [100_001],
    };

    it.each(Object.keys(SAMPLES))('%s has an index path, without a sort', async (name) => {
      await sql.query('SET enable_seqscan = off');
      const plan = (await sql.query(`EXPLAIN ${SQL[name as keyof typeof SQL]}`, SAMPLES[name as keyof typeof SQL])).rows
        .map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
      expect(plan).not.toMatch(/Seq Scan/);
      // A Sort node, not the "Sort Key" of a Merge Append (which merges inputs already in order). An
      // account's history sorts its page only: the next test holds each side to `limit` rows.
      if (name !== 'accountHistory') expect(plan).not.toMatch(/\bSort\b(?! Key)/);
      expect(plan).toMatch(/Index|Result/);
    });

    it("reads an account's history and newest transaction from the account's own indexes, in custom and generic plans, when one account sends or receives most of the ledger", async () => {
      // With every row's from_id the same, statistics said "from_id = $1 matches every row": the plan
      // took the primary key backwards with a filter, and an account that never sent read the table whole.
      await sql.query('BEGIN');
      const plans: string[] = [];
      try {
        await sql.query(`INSERT INTO transactions (tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp)
          SELECT '0x' || encode(sha256(('m' || g)::bytea), 'hex'), 'issuer', 'user-' || g, 10, 'TAB', 'mint', '{}', g::text, ${T0} FROM generate_series(1, 5000) g
          UNION ALL
          SELECT '0x' || encode(sha256(('t' || g)::bytea), 'hex'), 'user-' || g, 'sink', 1, 'TAB', 'transfer', '{}', g::text, ${T0} FROM generate_series(1, 5000) g`);
        await sql.query('ANALYZE transactions');
        await sql.query(`PREPARE account_history (text, bigint, int) AS ${SQL.accountHistory}`);
        await sql.query(`PREPARE newest_account_seqs (text[], bigint[]) AS ${SQL.newestAccountSeqs}`);
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          await sql.query(`SET LOCAL plan_cache_mode = ${mode}`);
          for (const account of ['nobody', 'user-7', 'issuer', 'sink']) {
            for (const statement of [`account_history ('${account}', 1000000, 21)`, `newest_account_seqs ('{${account}}', '{1000000}')`]) {
              const plan = (await sql.query(`EXPLAIN EXECUTE ${statement}`)).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
              plans.push(`${mode} ${statement}\n${plan}`);
            }
          }
        }
      } finally {
        await sql.query('ROLLBACK');
      }
      for (const plan of plans) {
        expect(plan).not.toMatch(/transactions_pkey|Seq Scan on transactions|Bitmap/);
        expect(plan).toMatch(/Index (Only )?Scan Backward using transactions_by_from/);
        expect(plan).toMatch(/Index (Only )?Scan Backward using transactions_by_to/);
        // The page's sort takes each side's `limit` rows at the most.
        if (plan.includes('account_history')) expect(plan).toMatch(/Sort[\s\S]*Limit[\s\S]*Index Scan Backward using transactions_by_from[\s\S]*Limit[\s\S]*Index Scan Backward using transactions_by_to/);
      }
    });

    it("reads sealed events from the cursor on, in the generic plan too: the index seek starts at (block, position), not at the first row of the cursor's block", async () => {
      // Prepared statements run a generic plan after five executions; it must seek as the custom one does.
      await sql.query(`PREPARE sealed_events (bigint, bigint, int, int) AS ${SQL.sealedEventTransactions}`);
      try {
        await sql.query('SET plan_cache_mode = force_generic_plan');
        const plan = (await sql.query('EXPLAIN EXECUTE sealed_events (1, 1, 5000, 1000)')).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
        expect(plan).toMatch(/Index Cond: \(\(ROW\(block_number, "position"\) > ROW\(\$1, \$3\)\)/);
        expect(plan).not.toMatch(/Filter/);
      } finally {
        await sql.query('RESET plan_cache_mode');
        await sql.query('DEALLOCATE sealed_events');
      }
    });

    it("judges a group commit's debits by one primary-key seek per account, never by reading the balances whole", async () => {
      // With a thousand accounts analysed (rolled back after), a join hashed the table whole.
      await sql.query('BEGIN');
      let plan: string;
      try {
        await sql.query(`INSERT INTO balances (user_id, token, units) SELECT 'user-' || g, 'TAB', 100 FROM generate_series(1, 1000) g`);
        await sql.query('ANALYZE balances');
        // The generic plan, as a prepared statement runs after five executions (it guesses 10 rows per array).
        await sql.query(`PREPARE judged_commit AS ${SQL.insertIfCovered}`);
        await sql.query('SET LOCAL plan_cache_mode = force_generic_plan');
        plan = (await sql.query(`EXPLAIN EXECUTE judged_commit ('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', 'channel', '{}', '{}', 0, '{alice}', '{TAB}', '{5}')`))
          .rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
      } finally {
        await sql.query('ROLLBACK');
        await sql.query('DEALLOCATE judged_commit');
      }
      expect(plan).toMatch(/Index Scan using balances_pkey on balances b/);
      expect(plan).not.toMatch(/Seq Scan on balances/);
    });

    it.each(['appendedBetween', 'sealedBetween'] as const)("catches an instance's pending debits up by %s from the index of event sequences, not by reading the transactions whole", async (name) => {
      await sql.query('SET enable_seqscan = off');
      try {
        const plan = (await sql.query(`EXPLAIN ${FAILURE_BUDGET_SQL[name]}`, [10, 20])).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
        expect(plan).not.toMatch(/Seq Scan on transactions/);
        expect(plan).toMatch(name === 'appendedBetween' ? /transactions_by_event/ : /block_events/);
      } finally {
        await sql.query('RESET enable_seqscan');
      }
    });

    it.each(['sealTransactions', 'sealTransactionsBySeq'] as const)("%s reads a block's outcomes once, writing each from the queue's DELETE (no join of two CTEs: it was planned quadratic)", async (name) => {
      // 10,000 swaps took 5–6 s to seal when the INSERT joined the outcomes' CTE with the DELETE's.
      const samples = {
        sealTransactions: [7, [`0x${'ab'.repeat(32)}`], [0], [null], ['5']],
        sealTransactionsBySeq: [7, [1], [`0x${'ab'.repeat(32)}`], [0], [null], ['5']],
      };
      const plan = (await sql.query(`EXPLAIN ${SQL[name]}`, samples[name])).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
      expect(plan).not.toMatch(/CTE Scan on s\b/);
      expect(plan).toMatch(/CTE Scan on dequeued/);
    });

    it.each(['pendingTransactions', 'pendingPostings'] as const)('%s takes pending transactions from the queue of pending ones, in its order', async (name) => {
      await sql.query('SET enable_seqscan = off');
      const plan = (await sql.query(`EXPLAIN ${SQL[name]}`, [10])).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index (Only )?Scan using pending_transactions_pkey/);
    });
  });
});

describe('PostgreSQL migration 11: outcomes out of the transactions', () => {
  it("moves a ledger's outcomes and pending rows, and the ledger reads and seals as before", async () => {
    const database = await createTestDatabase('postgres');
    const sql = await connectToSchema(database);
    try {
      // The ledger as version 10 stored it: a block with a confirmed and a failed transaction, and a pending one.
      await sql.query(`CREATE SCHEMA ${database.postgres?.schema}`);
      await sql.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
      for (const migration of MIGRATIONS.filter((candidate) => candidate.version < 11)) {
        await sql.query(migration.sql);
        await sql.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [migration.version]);
      }
      const [confirmed, failed, pending] = [mint(1), mint(2), mint(3)];
      const genesis = genesisBlock(T0);
      const block = buildBlock(genesis, [confirmed.tx_hash, failed.tx_hash], T0 + 10);
      const insertBlock = `INSERT INTO blocks (number, hash, parent_hash, timestamp, transactions_count, transactions_root, total_transactions, total_users, transfer_volume_totals)
        VALUES ($1, $2, $3, $4, $5, $6, 0, 0, '{}')`;
      const insertTransaction = `INSERT INTO transactions (tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error)
        VALUES ($1, $2, $3, $4, $5, $6, '{}', $7, $8, $9, $10, $11, $12)`;
      const row = (tx: ReturnType<typeof mint>, status: string, position: number | null, error: string | null) => [
        tx.tx_hash, tx.from, tx.to, tx.amount_units.toString(), tx.token, tx.type, tx.nonce, tx.timestamp, status, position === null ? null : 1, position, error,
      ];
      await sql.query('BEGIN');
      for (const header of [genesis, block]) {
        await sql.query(insertBlock, [header.number, header.hash, header.parent_hash, header.timestamp, header.transactions_count, header.transactions_root]);
      }
      await sql.query(insertTransaction, row(confirmed, 'confirmed', 0, null));
      await sql.query(insertTransaction, row(failed, 'failed', 1, 'insufficient_funds'));
      await sql.query(insertTransaction, row(pending, 'pending', null, null));
      await sql.query('COMMIT');

      const store = await database.open();
      try {
        expect(await store.getTransaction(confirmed.tx_hash)).toMatchObject({ status: 'confirmed', block_number: 1, block_hash: block.hash, position: 0, error: null });
        expect(await store.getTransaction(failed.tx_hash)).toMatchObject({ status: 'failed', block_number: 1, position: 1, error: 'insufficient_funds' });
        expect(await store.getTransaction(pending.tx_hash)).toMatchObject({ status: 'pending', block_number: null, block_hash: null, position: null, error: null });
        expect(await store.pendingCount()).toBe(1);
        expect((await store.pendingTransactions(10)).map((tx) => tx.tx_hash)).toEqual([pending.tx_hash]);
        const next = buildBlock(block, [pending.tx_hash], T0 + 20);
        await store.commitBlock({
          header: next, totals: { transactions: 3, users: 1, transfer_volume_units: {} },
          outcomes: [{ tx_hash: pending.tx_hash, position: 0, status: 'confirmed', error: null }],
          balances: [{ user_id: 'user3', token: 'TAB', units: 10n }], new_users: ['user3'], active_users: [],
        });
        expect(await store.getTransaction(pending.tx_hash)).toMatchObject({ status: 'confirmed', block_number: 2, block_hash: next.hash, position: 0 });
        expect(await store.pendingCount()).toBe(0);
      } finally {
        await store.close();
      }
      const versions = (await sql.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((stored: { version: number }) => stored.version);
      expect(versions).toEqual(MIGRATIONS.map((migration) => migration.version));
      // The old columns are gone, so that nothing reads a status that no longer changes.
      const columns = (await sql.query("SELECT column_name FROM information_schema.columns WHERE table_name = 'transactions' AND table_schema = current_schema()")).rows
        .map((column: { column_name: string }) => column.column_name);
      expect(columns).not.toContain('status');
      expect(columns).not.toContain('block_number');
    } finally {
      await sql.end();
      await database.drop();
    }
  });
});
