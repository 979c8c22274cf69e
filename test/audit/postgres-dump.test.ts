/**
 * The PostgreSQL backup path, as `tabula backup` prints it for a postgres:// URL (it copies SQLite
 * ledgers only and exits 2): the printed pg_dump, pg_restore and `tabula audit` commands run as printed
 * against a ledger in a schema of the test server, restored into a new, empty database.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import { ROOT } from '../support/service-process.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../support/test-database.js';

const BIN = path.join(ROOT, 'dist/cli/tabula.js');

type Run = { status: number; stdout: string; stderr: string };

function run(command: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { PATH: process.env.PATH ?? '' }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

async function onServer(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: testPostgresUrl() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

describe('backing up and restoring a PostgreSQL ledger with the commands tabula backup prints', () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-pg-dump-'));
  const restored_name = `tabula_restore_${randomBytes(4).toString('hex')}`;
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const store = await database.open();
    await store.claimSetting('native_symbol', 'TAB');
    const producer = new BlockProducer(store, { now_ms: () => Date.now() }, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: 100 });
    await producer.ensureGenesis();
    for (let block = 0; block < 3; block += 1) {
      const transactions = ['alice', 'bob'].map((to, index) => pendingTransaction({
        from: 'treasury', to, amount_units: 5n, token: 'TAB', type: 'mint', metadata: { block }, nonce: `${block}${index}`.padStart(32, '0'), timestamp: 1_790_000_000,
      }));
      await store.appendPending(transactions.map((transaction) => ({ transaction, idempotency: null })));
      await producer.sealNext();
    }
    await store.close();
  });
  afterAll(async () => {
    await onServer(`DROP DATABASE IF EXISTS ${restored_name} WITH (FORCE)`);
    await database?.drop();
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('pg_dump, pg_restore into an empty database, and tabula audit on the restored copy', async () => {
    const guidance = await run(process.execPath, [BIN, 'backup', path.join(folder, 'ledger.dump'), '--database-url', database.url], ROOT);
    expect(guidance.status).toBe(2);
    const command = (start: string): string => {
      const line = guidance.stderr.split('\n').find((text) => text.trimStart().startsWith(start));
      if (line === undefined) throw new Error(`no ${start} command in:\n${guidance.stderr}`);
      return line.trim();
    };
    const restored_url = new URL(testPostgresUrl());
    restored_url.pathname = `/${restored_name}`;

    const dump = await run('bash', ['-euo', 'pipefail', '-c', command('pg_dump')], folder);
    expect(dump.status, dump.stderr).toBe(0);
    await onServer(`CREATE DATABASE ${restored_name}`);
    const restore = await run('bash', ['-euo', 'pipefail', '-c', command('pg_restore').replace('<url of the empty database>', restored_url.toString())], folder);
    expect(restore.status, restore.stderr).toBe(0);
    const audit_line = command('tabula audit').replace('<url of the restored database>', restored_url.toString()).replace(/^tabula /, `${process.execPath} ${BIN} `);
    expect(audit_line).toContain(`?schema=${database.postgres?.schema}`);
    const audit = await run('bash', ['-euo', 'pipefail', '-c', `${audit_line} --json`], folder);
    expect(audit.status, audit.stderr).toBe(0);
    expect(JSON.parse(audit.stdout)).toMatchObject({ audited: true, blocks: 4, transactions_replayed: 6, balances: 2, accounts: 3 });
  });
});
