/**
 * The SQLite schema refuses, by itself, what would break the chain: the last line of defence; and a
 * ledger made by an earlier version gains what later migrations add when it is opened.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import { MIGRATIONS } from '../../src/store/sqlite/schema.js';
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

  /** Thrown to roll back what a test wrote. */
  class RolledBack extends Error {}
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

  it('keeps a transaction hash once in its index (of prefixes, which need not be unique), and never changes or deletes an entry', () => {
    const stored = db.prepare('SELECT * FROM transactions WHERE seq = 1').get() as Record<string, unknown>;
    const columns = Object.keys(stored).filter((name) => name !== 'seq');
    const insert = db.prepare(`INSERT INTO transactions (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
    const pending: Record<string, unknown> = { ...stored, status: 'pending', block_number: null, position: null, error: null, event_seq: null };
    const row = (tx_hash: string) => Number(insert.run(...columns.map((name) => (name === 'tx_hash' ? tx_hash : pending[name]))).lastInsertRowid);
    const entry = db.prepare('INSERT INTO transaction_hashes (prefix, seq) VALUES (substr(?, 3, 16), ?)');
    const tx_hash = String(stored.tx_hash);
    expect(() => db.transaction(() => {
      entry.run(tx_hash, 1);
      // The table takes a second row with the hash (the store refuses it before it appends:
      // sqlite-hash-index.test.ts); the index does not.
      expect(() => entry.run(tx_hash, row(tx_hash))).toThrow(/stored once/);
      // The same first 64 bits, another hash: its entry goes in beside it.
      const neighbour = `${tx_hash.slice(0, 18)}${'f'.repeat(48)}`;
      entry.run(neighbour, row(neighbour));
      expect(db.prepare('SELECT count(*) FROM transaction_hashes WHERE prefix = substr(?, 3, 16)').pluck().get(neighbour)).toBe(2);
      expect(() => db.prepare('DELETE FROM transaction_hashes').run()).toThrow(/never deleted/);
      expect(() => db.prepare('UPDATE transaction_hashes SET seq = seq + 100').run()).toThrow(/never changed/);
      db.prepare('UPDATE transaction_hashes_merged SET through_seq = 3').run();
      expect(() => db.prepare('UPDATE transaction_hashes_merged SET through_seq = 2').run()).toThrow(/only moves forward/);
      expect(() => db.prepare('DELETE FROM transaction_hashes_merged').run()).toThrow(/never deleted/);
      throw new RolledBack();
    })()).toThrow(RolledBack);
  });

  it('never lets a balance go below zero', () => {
    refuses("UPDATE balances SET units = -1 WHERE user_id = 'u0'");
  });
});

describe('SQLite migrations', () => {
  /** A new ledger file as a version of the store before `version` left it: the migrations before it applied and recorded. */
  function ledgerBefore(file: string, version: number): Database.Database {
    const old = new Database(file);
    old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    for (const migration of MIGRATIONS.filter((candidate) => candidate.version < version)) {
      old.exec(migration.sql);
      old.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(migration.version);
    }
    return old;
  }

  it('gives a ledger made before the history indexes its indexes on start, over the transactions it already holds', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-migrate-'));
    const file = path.join(dir, 'ledger.db');
    try {
      const old = ledgerBefore(file, 3);
      const preimage = { from: 'issuer', to: 'bob', amount_units: 5n, token: 'TAB', type: 'mint' as const, metadata: {}, nonce: '1'.padStart(32, '0'), timestamp: 1_800_000_000 };
      const tx = pendingTransaction(preimage);
      old.prepare(`INSERT INTO transactions (tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status)
        VALUES (?, ?, ?, ?, ?, ?, '{}', ?, ?, 'pending')`).run(tx.tx_hash, tx.from, tx.to, tx.amount_units, tx.token, tx.type, tx.nonce, tx.timestamp);
      old.close();

      const store = SqliteStore.open({ path: file });
      expect(await store.accountHistory('bob', null, 10)).toEqual([{ seq: 1, tx_hash: tx.tx_hash, sealed: false }]);
      expect(await store.transactionsByHash([tx.tx_hash])).toEqual([tx]);
      await store.close();
      const upgraded = new Database(file, { readonly: true });
      const indexes = upgraded.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'transactions_by_%' ORDER BY name").pluck().all();
      const history_indexes = upgraded.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'transactions_%_by_%' ORDER BY name").pluck().all();
      const versions = upgraded.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
      upgraded.close();
      expect(indexes).toEqual(['transactions_by_block', 'transactions_by_event']);
      expect(history_indexes).toEqual(['transactions_sealed_by_from', 'transactions_sealed_by_to']);
      expect(versions).toEqual(MIGRATIONS.map((migration) => migration.version));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rebuilds the transactions table of a ledger made before the hash-prefix index: every row and its number kept, the guards made again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-migrate-'));
    const file = path.join(dir, 'ledger.db');
    const hash = (digit: string) => `0x${digit.repeat(64)}`;
    const objects = (db: Database.Database) => db.prepare("SELECT type, name FROM sqlite_master WHERE tbl_name = 'transactions' ORDER BY type, name").all();
    try {
      const old = ledgerBefore(file, 13);
      old.prepare(`INSERT INTO blocks (number, hash, parent_hash, timestamp, transactions_count, transactions_root, total_transactions, total_users, transfer_volume_totals)
        VALUES (0, ?, ?, 1800000000, 0, ?, 0, 0, '{}')`).run(hash('1'), hash('0'), hash('0'));
      const insert = old.prepare(`INSERT INTO transactions (seq, tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error, event_seq, min_receive, amount_out, token_out)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1800000000, ?, ?, ?, ?, ?, ?, ?, ?)`);
      insert.run(4, hash('a'), 'issuer', 'alice', 500, 'TAB', 'mint', '{}', 'n1', 'confirmed', 0, 0, null, 1, null, null, null);
      insert.run(7, hash('b'), 'alice', 'bob', 900, 'TAB', 'transfer', '{"memo":"x"}', 'n2', 'failed', 0, 1, 'insufficient_funds', 2, null, null, null);
      insert.run(9, hash('c'), 'alice', 'alice', 100, 'TAB', 'swap', '{}', 'n3', 'pending', null, null, null, 3, 7, null, 'USDG');
      const rows = old.prepare('SELECT * FROM transactions ORDER BY seq').all();
      const before = objects(old);
      old.close();

      const store = SqliteStore.open({ path: file });
      expect((await store.transactionsByHash([hash('a'), hash('b'), hash('c'), hash('d')])).map((tx) => tx.tx_hash).sort()).toEqual([hash('a'), hash('b'), hash('c')]);
      expect((await store.getTransaction(hash('b')))?.error).toBe('insufficient_funds');
      await store.close();

      const upgraded = new Database(file);
      try {
        expect(upgraded.prepare('SELECT * FROM transactions ORDER BY seq').all()).toEqual(rows);
        expect(upgraded.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'transactions'").pluck().get()).toBe(9);
        expect(upgraded.prepare("SELECT sql FROM sqlite_master WHERE name = 'transactions'").pluck().get()).not.toMatch(/UNIQUE/);
        const after = objects(upgraded);
        // Migration 13's prefix index and its trigger, since replaced by the hash index's table (migration 15).
        expect(after.filter((object) => !before.some((old_object) => JSON.stringify(old_object) === JSON.stringify(object)))).toEqual([]);
        expect(before.filter((object) => !after.some((new_object) => JSON.stringify(new_object) === JSON.stringify(object))))
          .toEqual([{ type: 'index', name: expect.stringMatching(/^sqlite_autoindex_transactions_/) }]);
        // The guards of migrations 8 and 12, made again: a sealed row never changes, none is deleted.
        expect(() => upgraded.prepare("UPDATE transactions SET error = 'other' WHERE seq = 7").run()).toThrow(/never changes/);
        expect(() => upgraded.prepare('DELETE FROM transactions WHERE seq = 9').run()).toThrow(/never deleted/);
        // Every row's hash in the index, the mark after the newest.
        expect(upgraded.prepare('SELECT prefix, seq FROM transaction_hashes ORDER BY seq').raw().all())
          .toEqual([[hash('a').slice(2, 18), 4], [hash('b').slice(2, 18), 7], [hash('c').slice(2, 18), 9]]);
        expect(upgraded.prepare('SELECT through_seq FROM transaction_hashes_merged').pluck().get()).toBe(9);
      } finally {
        upgraded.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('moves the idempotency keys of a ledger made before they were kept in order: every key kept, still one per caller and key', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-migrate-'));
    const file = path.join(dir, 'ledger.db');
    const columns = 'caller, key, request_hash, tx_hash, timestamp, created_at';
    try {
      const old = ledgerBefore(file, 14);
      const insert = old.prepare(`INSERT INTO idempotency_keys (${columns}) VALUES (?, ?, ?, ?, ?, ?)`);
      insert.run('bob', 'order-2', `0x${'2'.repeat(64)}`, `0x${'b'.repeat(64)}`, 1_800_000_002, 1_800_000_002);
      insert.run('alice', 'order-1', `0x${'1'.repeat(64)}`, `0x${'a'.repeat(64)}`, 1_800_000_001, 1_800_000_001);
      const keys = old.prepare(`SELECT ${columns} FROM idempotency_keys ORDER BY caller, key`).all();
      old.close();

      const store = SqliteStore.open({ path: file });
      expect(await store.findIdempotency('alice', 'order-1')).toEqual({ caller: 'alice', key: 'order-1', request_hash: `0x${'1'.repeat(64)}`, tx_hash: `0x${'a'.repeat(64)}`, timestamp: 1_800_000_001 });
      expect(await store.countIdempotencyKeys('bob', ['order-2', 'order-3'])).toBe(1);
      await store.close();

      const upgraded = new Database(file);
      try {
        expect(upgraded.prepare(`SELECT ${columns} FROM idempotency_keys ORDER BY caller, key`).all()).toEqual(keys);
        // Rows in the order they were claimed; the key's uniqueness held by its index, as the claim's ON CONFLICT needs.
        expect(upgraded.prepare('SELECT caller FROM idempotency_keys ORDER BY rowid').pluck().all()).toEqual(['alice', 'bob']);
        expect(() => upgraded.prepare(`INSERT INTO idempotency_keys (${columns}) VALUES ('alice', 'order-1', 'x', 'y', 0, 0)`).run()).toThrow(/UNIQUE/);
        expect(upgraded.prepare(`INSERT INTO idempotency_keys (${columns}) VALUES ('alice', 'order-1', 'x', 'y', 0, 0) ON CONFLICT (caller, key) DO NOTHING`).run().changes).toBe(0);
        expect(upgraded.prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'idempotency_keys' AND name NOT LIKE 'sqlite_%'").pluck().all()).toEqual(['idempotency_keys', 'idempotency_keys_by_age']);
      } finally {
        upgraded.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
