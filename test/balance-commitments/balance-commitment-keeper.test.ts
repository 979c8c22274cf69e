// The balance commitment keeper on both stores: the sealer's roots equal a rebuild's, a second instance follows the newest block, an upgraded ledger gets its newest root.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BalanceCommitmentKeeper } from '../../src/balance-commitments/balance-commitment-keeper.js';
import { balanceKey, checkBalanceEntry } from '../../src/domain/shared/balance-commitment.js';
import { BalanceTree, balanceRootHex } from '../../src/domain/balance-tree.js';
import { pendingTransaction, sha256 } from '../../src/domain/hashing.js';
import type { TransactionType } from '../../src/domain/transaction.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { createTestDatabase, type StoreKind, type TestDatabase } from '../support/test-database.js';

const logger = pino({ level: 'silent' });
let nonce = 0;
function tx(type: TransactionType, from: string, to: string, amount_units: bigint, token = 'TAB') {
  nonce += 1;
  return pendingTransaction({ from, to, amount_units, token, type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: 1_790_000_000 + nonce });
}

describe.each<StoreKind>(['sqlite', 'postgres'])('the balance commitment keeper on %s', (kind) => {
  let database: TestDatabase;
  let stores: LedgerStore[];

  beforeEach(async () => {
    database = await createTestDatabase(kind);
    stores = [await database.open(), await database.open()];
  });
  afterEach(async () => {
    for (const store of stores) await store.close();
    await database.drop();
  });

  async function seal(producer: BlockProducer, store: LedgerStore, transactions: ReturnType<typeof tx>[]): Promise<void> {
    await store.appendPending(transactions.map((transaction) => ({ transaction, idempotency: null })));
    expect(await producer.sealNext()).not.toBeNull();
  }

  it('stores a root per block that a rebuild from the stored balances gives, and a follower proves against the newest', async () => {
    const [sealer_store, follower_store] = stores as [LedgerStore, LedgerStore];
    const clock = { now_ms: () => 1_790_000_000_000 + nonce * 1000 };
    const sealer = new BalanceCommitmentKeeper(sealer_store, logger);
    const producer = new BlockProducer(sealer_store, clock, logger, { block_interval_ms: 1000, block_txs_max: 100 }, { commitment: sealer });
    await producer.ensureGenesis();
    await sealer.start();
    expect(await sealer_store.balanceRoot(0)).toBe(`0x${'0'.repeat(64)}`);
    const follower = new BalanceCommitmentKeeper(follower_store, logger);
    await follower.start();

    await seal(producer, sealer_store, [tx('mint', 'treasury', 'alice', 100n), tx('mint', 'treasury', 'bob', 50n, 'USDG')]);
    expect((await follower.prove('alice', ['TAB'])).block_number).toBe(1);
    await seal(producer, sealer_store, [tx('transfer', 'alice', 'carol', 100n), tx('transfer', 'bob', 'alice', 7n, 'USDG'), tx('transfer', 'dave', 'alice', 1n)]);
    await seal(producer, sealer_store, [tx('mint', 'treasury', 'erin', 3n)]);

    for (const number of [1, 2, 3]) expect(await sealer_store.balanceRoot(number)).toMatch(/^0x[0-9a-f]{64}$/);
    const state = await sealer_store.balanceState();
    const rebuilt = BalanceTree.empty(sha256).update(state!.balances.map((balance) => ({ key: balanceKey(sha256, balance.user_id, balance.token), units: balance.units })));
    expect(await sealer_store.balanceRoot(3)).toBe(balanceRootHex(rebuilt));

    const proof = await follower.prove('alice', ['TAB', 'USDG']);
    expect(proof).toMatchObject({ block_number: 3, balance_root: balanceRootHex(rebuilt) });
    const [tab, usdg] = proof.entries;
    expect(checkBalanceEntry(sha256, 'alice', tab!, proof.balance_root)).toEqual({ ok: true, units: 0n });
    expect(checkBalanceEntry(sha256, 'alice', usdg!, proof.balance_root)).toEqual({ ok: true, units: 7n });
    // Each keeper released the trees its newer states replaced: it holds the nodes of one state, a rebuild's.
    expect(sealer.memory()?.live_nodes).toBe(rebuilt.memory().live_nodes);
    expect(follower.memory()?.live_nodes).toBe(rebuilt.memory().live_nodes);
  });

  it('an upgraded ledger (blocks without roots) gets the root of its newest block at start, and none for older ones', async () => {
    const [store] = stores as [LedgerStore];
    const clock = { now_ms: () => 1_790_000_000_000 + nonce * 1000 };
    const old = new BlockProducer(store, clock, logger, { block_interval_ms: 1000, block_txs_max: 100 });
    await old.ensureGenesis();
    await seal(old, store, [tx('mint', 'treasury', 'alice', 100n)]);
    await seal(old, store, [tx('transfer', 'alice', 'bob', 40n)]);
    expect(await store.balanceRoot(2)).toBeNull();
    const keeper = new BalanceCommitmentKeeper(store, logger);
    await keeper.start();
    expect(await store.balanceRoot(1)).toBeNull();
    const root = await store.balanceRoot(2);
    expect(root).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await keeper.prove('bob', ['TAB'])).balance_root).toBe(root);
    const producer = new BlockProducer(store, clock, logger, { block_interval_ms: 1000, block_txs_max: 100 }, { commitment: keeper });
    await seal(producer, store, [tx('transfer', 'bob', 'carol', 40n)]);
    const proof = await keeper.prove('bob', ['TAB']);
    expect(proof.block_number).toBe(3);
    expect(proof.balance_root).toBe(await store.balanceRoot(3));
    expect(checkBalanceEntry(sha256, 'bob', proof.entries[0]!, proof.balance_root)).toEqual({ ok: true, units: 0n });
  });
});
