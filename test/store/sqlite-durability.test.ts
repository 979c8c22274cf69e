/**
 * Appends commit with synchronous=NORMAL and then fsync the WAL off the event loop: an append must not
 * resolve (and so no 202 may be sent) before that fsync has completed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Transaction } from '../../src/domain/transaction.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

function pending(index: number): Transaction {
  const preimage = { from: 'alice', to: 'bob', amount_units: 1n, token: 'TAB', type: 'transfer' as const, metadata: {}, nonce: index.toString(16).padStart(32, '0'), timestamp: 1_800_000_000 };
  return pendingTransaction(preimage);
}

describe('SQLite append durability', () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('resolves an append only after the WAL file has been fsynced', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-durable-'));
    dirs.push(dir);
    const file = path.join(dir, 'ledger.db');
    const store = SqliteStore.open({ path: file });
    const probe = await fs.promises.open(file, 'r');
    const file_handle_prototype = Object.getPrototypeOf(probe) as { sync(): Promise<void> };
    await probe.close();
    const events: string[] = [];
    let release: () => void = () => undefined;
    const original = file_handle_prototype.sync;
    vi.spyOn(file_handle_prototype, 'sync').mockImplementation(async function (this: fs.promises.FileHandle) {
      events.push('fsync started');
      await new Promise<void>((resolve) => { release = resolve; });
      await original.call(this);
      events.push('fsync done');
    });
    const append = store.appendPending([{ transaction: pending(1), idempotency: null }]).then(() => events.push('append resolved'));
    await vi.waitFor(() => expect(events).toEqual(['fsync started']));
    // Committed (another connection could read it) but not yet acknowledged.
    expect(await store.pendingCount()).toBe(1);
    release();
    await append;
    expect(events).toEqual(['fsync started', 'fsync done', 'append resolved']);
    await store.close();
  });

  it('puts the connection back to synchronous=FULL after an append, for the block commits that follow', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-durable-'));
    dirs.push(dir);
    const store = SqliteStore.open({ path: path.join(dir, 'ledger.db') });
    const { db } = store as unknown as { db: { pragma(text: string, options: { simple: true }): unknown } };
    const FULL = 2;
    expect(db.pragma('synchronous', { simple: true })).toBe(FULL);
    await store.appendPending([{ transaction: pending(1), idempotency: null }]);
    await store.appendPending([{ transaction: pending(2), idempotency: null }]);
    expect(db.pragma('synchronous', { simple: true })).toBe(FULL);
    await store.close();
  });
});
