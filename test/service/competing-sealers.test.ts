/**
 * The chain stays whole even when the sealer lease fails completely: two block producers that both
 * believe they hold it (each given a lease that is always held) seal the same database at once, on
 * two store handles, while transfers that often overdraw keep arriving through both. The store's
 * constraints must turn every race into one winner and a rolled-back loser, so the chain audits from
 * genesis and the balances equal its replay. Runs on each store (contract suite). On PostgreSQL the
 * two producers really race (a few commits are refused in every run, which the log line counts); in
 * one process SQLite's synchronous calls rarely interleave them, and the store contract suite's
 * "competing blocks" test makes that race happen on purpose.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { pendingTransaction } from '../../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../../src/domain/transaction.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { SoleSealerLease } from '../../src/service/sealer-lease.js';
import { auditChain } from '../support/store-chain-audit.js';
import { createTestDatabase, testStoreKind, type TestDatabase } from '../support/test-database.js';

const ACCOUNTS = 8;
const ROUNDS = 60;
const clock = { now_ms: () => Date.now() };

let nonce = 0;
function transaction(from: string, to: string, type: TransactionType, amount_units: bigint): Transaction {
  nonce += 1;
  const preimage = { from, to, amount_units, token: 'TAB', type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: Math.floor(Date.now() / 1000) };
  return pendingTransaction(preimage);
}

describe(`two sealers on one database (${testStoreKind()})`, () => {
  let database: TestDatabase;
  const stores: LedgerStore[] = [];
  const producers: BlockProducer[] = [];
  afterEach(async () => {
    for (const producer of producers.splice(0)) await producer.stop();
    for (const store of stores.splice(0)) await store.close();
    await database.drop();
  });

  it('never double-seal, skip or overdraw: the database takes one block per number', async () => {
    database = await createTestDatabase();
    for (let index = 0; index < 2; index += 1) stores.push(await database.open());
    let lost_races = 0;
    const log = new Writable({ write(chunk, _encoding, done) { if (String(chunk).includes('sealing failed')) lost_races += 1; done(); } });
    for (const store of stores) {
      producers.push(new BlockProducer(store, clock, pino({ level: 'error' }, log), { block_interval_ms: 5, block_txs_max: 7 }, { lease: new SoleSealerLease() }));
    }
    await Promise.all(producers.map((producer) => producer.ensureGenesis()));
    const account = (index: number) => `account-${index}`;
    await stores[0]!.appendPending(Array.from({ length: ACCOUNTS }, (_, index) => ({ transaction: transaction('issuer', account(index), 'mint', 20n), idempotency: null })));
    for (const producer of producers) producer.start();

    const appended: string[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const batch = Array.from({ length: 3 }, (_, offset) => {
        const from = (round + offset) % ACCOUNTS;
        return transaction(account(from), account((from + 1 + offset) % ACCOUNTS), 'transfer', BigInt(1 + ((round * 7 + offset) % 15)));
      });
      await stores[round % 2]!.appendPending(batch.map((tx) => ({ transaction: tx, idempotency: null })));
      appended.push(...batch.map((tx) => tx.tx_hash));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    for (const producer of producers) await producer.stop();
    expect(producers.map((producer) => producer.halted)).toEqual([null, null]);
    await producers[0]!.drain();

    const audit = await auditChain(stores[1]!);
    expect(await stores[0]!.pendingCount()).toBe(0);
    for (const tx_hash of appended) expect(audit.sealed.has(tx_hash)).toBe(true);
    expect(audit.sealed.size).toBe(appended.length + ACCOUNTS);
    expect([...audit.sealed.values()].some((tx) => tx.status === 'failed')).toBe(true);
    for (let index = 0; index < ACCOUNTS; index += 1) {
      expect(await stores[0]!.balances(account(index))).toEqual(new Map([['TAB', audit.book.get(account(index), 'TAB')]]));
    }
    console.info(`competing sealers (${testStoreKind()}): ${audit.latest_block_number} blocks, ${lost_races} commits refused by the store`);
    const supply = Array.from({ length: ACCOUNTS }, (_, index) => audit.book.get(account(index), 'TAB')).reduce((total, units) => total + units, 0n);
    expect(supply).toBe(20n * BigInt(ACCOUNTS));
  });
});
