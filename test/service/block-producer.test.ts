import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { checkBlock, type BlockHeader } from '../../src/domain/block.js';
import { InvariantViolation } from '../../src/domain/shared/errors.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import { ZERO_HASH } from '../../src/domain/shared/hex.js';
import type { Transaction, TransactionType } from '../../src/domain/transaction.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import type { Clock } from '../../src/service/clock.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const logger = pino({ level: 'silent' });
let nonce = 0;

function tx(type: TransactionType, from: string, to: string, amount_units: bigint, token = 'TAB'): Transaction {
  nonce += 1;
  const preimage = { from, to, amount_units, token, type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: 1_700_000_000 };
  return pendingTransaction(preimage);
}

async function append(store: SqliteStore, ...transactions: Transaction[]): Promise<void> {
  await store.appendPending(transactions.map((transaction) => ({ transaction, idempotency: null })));
}

const stores: SqliteStore[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function memoryStore(): SqliteStore {
  const store = SqliteStore.open({ path: ':memory:' });
  stores.push(store);
  return store;
}

function mutableClock(start_ms: number): Clock & { set(ms: number): void } {
  let now = start_ms;
  return { now_ms: () => now, set: (ms: number) => void (now = ms) };
}

describe('BlockProducer', () => {
  it('writes genesis once, in Unix seconds, and returns it again later', async () => {
    const store = memoryStore();
    const producer = new BlockProducer(store, { now_ms: () => 1_700_000_000_999 }, logger, { block_interval_ms: 1000, block_txs_max: 5 });
    const genesis = await producer.ensureGenesis();
    expect(genesis.number).toBe(0);
    expect(genesis.parent_hash).toBe(ZERO_HASH);
    expect(genesis.timestamp).toBe(1_700_000_000);
    expect(await producer.ensureGenesis()).toEqual(genesis);
    expect((await store.latestBlock())?.number).toBe(0);
  });

  it('refuses to seal before genesis', async () => {
    const store = memoryStore();
    await append(store, tx('mint', 'issuer', 'alice', 1n));
    const producer = new BlockProducer(store, { now_ms: () => 0 }, logger, { block_interval_ms: 1000, block_txs_max: 5 });
    await expect(producer.sealNext()).rejects.toThrow(InvariantViolation);
  });

  it('writes no empty block after genesis', async () => {
    const store = memoryStore();
    const producer = new BlockProducer(store, { now_ms: () => 0 }, logger, { block_interval_ms: 1000, block_txs_max: 5 });
    await producer.ensureGenesis();
    expect(await producer.sealNext()).toBeNull();
    await producer.drain();
    expect((await store.latestBlock())?.number).toBe(0);
  });

  it('seals in arrival order, at most block_txs_max per block, failed transactions included with their error', async () => {
    const store = memoryStore();
    const producer = new BlockProducer(store, { now_ms: () => 1_000_000 }, logger, { block_interval_ms: 1000, block_txs_max: 2 });
    await producer.ensureGenesis();
    const list = [
      tx('transfer', 'alice', 'bob', 1n),
      tx('mint', 'issuer', 'alice', 10n),
      tx('transfer', 'alice', 'bob', 4n),
      tx('burn', 'bob', 'issuer', 5n),
      tx('burn', 'bob', 'issuer', 4n, 'TAB'),
    ];
    await append(store, ...list);
    const first = await producer.sealNext();
    expect(first?.transactions_count).toBe(2);
    await producer.drain();
    const blocks = await Promise.all([1, 2, 3].map((number) => store.getBlock(number)));
    expect(blocks.map((block) => block?.transactions)).toEqual([
      [list[0]?.tx_hash, list[1]?.tx_hash],
      [list[2]?.tx_hash, list[3]?.tx_hash],
      [list[4]?.tx_hash],
    ]);
    const stored = await Promise.all(list.map((item) => store.getTransaction(item.tx_hash)));
    expect(stored.map((item) => [item?.status, item?.error, item?.block_number, item?.position])).toEqual([
      ['failed', 'insufficient_funds', 1, 0],
      ['confirmed', null, 1, 1],
      ['confirmed', null, 2, 0],
      ['failed', 'insufficient_funds', 2, 1],
      ['confirmed', null, 3, 0],
    ]);
    expect((await store.balances('alice')).get('TAB')).toBe(6n);
    expect((await store.balances('bob')).get('TAB')).toBe(0n);
    expect((await store.balances('issuer')).get('TAB') ?? 0n).toBe(0n);
  });

  it('never moves block timestamps backwards when the clock does', async () => {
    const store = memoryStore();
    const clock = mutableClock(2_000_000);
    const producer = new BlockProducer(store, clock, logger, { block_interval_ms: 1000, block_txs_max: 10 });
    await producer.ensureGenesis();
    const stamps: number[] = [];
    for (const ms of [1_500_000, 2_500_000, 900_000, 2_499_999, 3_000_000]) {
      clock.set(ms);
      await append(store, tx('mint', 'issuer', 'alice', 1n));
      const header = await producer.sealNext();
      stamps.push(header?.timestamp ?? -1);
    }
    expect(stamps).toEqual([2_000, 2_500, 2_500, 2_500, 3_000]);
  });

  it('keeps the chain across a restart of a file store and extends it from the stored head', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-producer-'));
    dirs.push(dir);
    const file = path.join(dir, 'ledger.db');
    const options = { block_interval_ms: 1000, block_txs_max: 3 };
    const clock = { now_ms: () => 1_700_000_000_000 };

    const first = SqliteStore.open({ path: file });
    const producer = new BlockProducer(first, clock, logger, options);
    await producer.ensureGenesis();
    await append(first, tx('mint', 'issuer', 'alice', 50n), tx('transfer', 'alice', 'bob', 20n));
    await producer.drain();
    const pending = tx('transfer', 'bob', 'carol', 5n);
    await append(first, pending);
    await first.close();

    const second = SqliteStore.open({ path: file });
    stores.push(second);
    const restarted = new BlockProducer(second, clock, logger, options);
    expect((await restarted.ensureGenesis()).number).toBe(1);
    expect(await second.pendingCount()).toBe(1);
    await restarted.drain();
    const headers: BlockHeader[] = [];
    for (let number = 0; number <= 2; number += 1) {
      const block = await second.getBlock(number);
      if (block === null) throw new Error(`block ${number} missing`);
      expect(checkBlock(block, headers[number - 1] ?? null)).toEqual({ ok: true });
      headers.push(block);
    }
    expect((await second.getTransaction(pending.tx_hash))?.status).toBe('confirmed');
    expect((await second.balances('carol')).get('TAB')).toBe(5n);
    expect((await second.balances('bob')).get('TAB')).toBe(15n);
  });

  it('does not let a second producer on the same store fork the chain', async () => {
    const store = memoryStore();
    const a = new BlockProducer(store, { now_ms: () => 0 }, logger, { block_interval_ms: 1000, block_txs_max: 1 });
    const b = new BlockProducer(store, { now_ms: () => 0 }, logger, { block_interval_ms: 1000, block_txs_max: 1 });
    await a.ensureGenesis();
    await append(store, tx('mint', 'issuer', 'alice', 1n), tx('mint', 'issuer', 'bob', 1n));
    await a.sealNext();
    await b.sealNext();
    const one = await store.getBlock(1);
    const two = await store.getBlock(2);
    if (one === null || two === null) throw new Error('blocks missing');
    expect(two.parent_hash).toBe(one.hash);
    expect(await store.pendingCount()).toBe(0);
  });
});
