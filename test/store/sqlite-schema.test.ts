/** The SQLite schema refuses, by itself, what would break the chain: the last line of defence. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

describe('SQLite schema guards', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-schema-'));
  const file = path.join(dir, 'ledger.db');
  let db: Database.Database;

  beforeAll(async () => {
    const store = SqliteStore.open({ path: file });
    const producer = new BlockProducer(store, { now_ms: () => 1_800_000_000_000 }, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: 10 });
    await producer.ensureGenesis();
    for (let index = 0; index < 3; index += 1) {
      const preimage = { from: 'issuer', to: `u${index}`, amount_units: 5n, token: 'TAB', type: 'mint' as const, metadata: {}, nonce: String(index).padStart(32, '0'), timestamp: 1_800_000_000 };
      await store.appendPending([{ transaction: pendingTransaction(preimage), idempotency: null }]);
      if (index < 2) await producer.sealNext();
    }
    await store.close();
    db = new Database(file);
  });
  afterAll(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const refuses = (sql: string, ...parameters: unknown[]) => expect(() => db.prepare(sql).run(...parameters)).toThrow();
  const zero = `0x${'0'.repeat(64)}`;

  it('never changes or deletes a block', () => {
    refuses("UPDATE blocks SET transactions_root = ? WHERE number = 1", zero);
    refuses('DELETE FROM blocks WHERE number = 2');
  });

  it('only appends a block that links to the newest one, moves forward in time and is not empty', () => {
    const newest = db.prepare('SELECT hash, timestamp FROM blocks WHERE number = 2').get() as { hash: string; timestamp: number };
    const insert = 'INSERT INTO blocks (number, hash, parent_hash, timestamp, transactions_count, transactions_root, total_transactions, total_users, transfer_volume_totals) VALUES (?, ?, ?, ?, ?, ?, 0, 0, \'{}\')';
    refuses(insert, 4, `0x${'4'.repeat(64)}`, newest.hash, newest.timestamp, 1, zero);
    refuses(insert, 3, `0x${'3'.repeat(64)}`, zero, newest.timestamp, 1, zero);
    refuses(insert, 3, `0x${'3'.repeat(64)}`, newest.hash, newest.timestamp - 1, 1, zero);
    refuses(insert, 3, `0x${'3'.repeat(64)}`, newest.hash, newest.timestamp, 0, zero);
  });

  it('never changes a sealed transaction, never deletes one, and seals pending ones only into the newest block', () => {
    refuses("UPDATE transactions SET status = 'failed', error = 'insufficient_funds' WHERE block_number = 1");
    refuses('DELETE FROM transactions WHERE block_number = 1');
    refuses("UPDATE transactions SET status = 'confirmed', block_number = 1, position = 1 WHERE status = 'pending'");
    refuses("UPDATE transactions SET amount = 6 WHERE status = 'pending'");
  });

  it('never lets a balance go below zero', () => {
    refuses("UPDATE balances SET units = -1 WHERE user_id = 'u0'");
  });
});
