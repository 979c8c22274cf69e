/**
 * Property tests of the ledger core: random sequences of mints, transfers and burns go through the
 * real BlockProducer into a real SqliteStore, and the resulting chain is checked against an
 * independent Map-based reference model and the ledger's invariants.
 */
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { UNITS_MAX } from '../../src/domain/shared/amount.js';
import { checkBlock, type Block, type BlockHeader } from '../../src/domain/block.js';
import { pendingTransaction, sha256, transactionHash, transactionsAuditPath } from '../../src/domain/hashing.js';
import { hexToBytes, toHashHex, ZERO_HASH } from '../../src/domain/shared/hex.js';
import { rootFromInclusionProof } from '../../src/domain/shared/merkle.js';
import type { Transaction, TransactionType } from '../../src/domain/transaction.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import type { Clock } from '../../src/service/clock.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const USERS = ['alice', 'bob', 'carol', 'dave', 'issuer'] as const;
const TOKENS = ['TAB', 'USDG'] as const;
const NOW_MS = 1_700_000_000_000;
const clock: Clock = { now_ms: () => NOW_MS };
const logger = pino({ level: 'silent' });

type Op = { type: TransactionType; from: string; to: string; amount_units: bigint; token: string };
type Scenario = { block_txs_max: number; batches: Op[][] };

const amountArb = fc.oneof(
  { weight: 6, arbitrary: fc.bigInt(1n, 300n) },
  { weight: 2, arbitrary: fc.bigInt(301n, 3_000n) },
  { weight: 1, arbitrary: fc.bigInt(UNITS_MAX - 500n, UNITS_MAX) },
);
const userArb = fc.constantFrom(...USERS);
const tokenArb = fc.constantFrom(...TOKENS);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ type: fc.constant<TransactionType>('mint'), from: userArb, to: userArb, amount_units: amountArb, token: tokenArb }) },
  {
    weight: 5,
    arbitrary: fc
      .tuple(userArb, userArb, amountArb, tokenArb)
      .filter(([from, to]) => from !== to)
      .map(([from, to, amount_units, token]): Op => ({ type: 'transfer', from, to, amount_units, token })),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant<TransactionType>('burn'), from: userArb, to: userArb, amount_units: amountArb, token: tokenArb }) },
);
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  block_txs_max: fc.integer({ min: 1, max: 7 }),
  batches: fc.array(fc.array(opArb, { maxLength: 12 }), { minLength: 1, maxLength: 5 }),
});

function makeTransaction(op: Op, seq: number): Transaction {
  const preimage = { ...op, metadata: { seq }, nonce: seq.toString(16).padStart(32, '0'), timestamp: Math.floor(NOW_MS / 1000) };
  return pendingTransaction(preimage);
}

/** The reference model: a plain replay over a Map, written from the contract, not from src/. */
function referenceOutcomes(ops: readonly Op[]) {
  const balances = new Map<string, bigint>();
  const key = (user: string, token: string): string => JSON.stringify([user, token]);
  const get = (user: string, token: string): bigint => balances.get(key(user, token)) ?? 0n;
  const outcomes = ops.map((op) => {
    const debits = op.type !== 'mint';
    const credits = op.type !== 'burn';
    if (debits && get(op.from, op.token) < op.amount_units) return { status: 'failed', error: 'insufficient_funds' } as const;
    if (credits && get(op.to, op.token) + op.amount_units > UNITS_MAX) return { status: 'failed', error: 'balance_overflow' } as const;
    if (debits) balances.set(key(op.from, op.token), get(op.from, op.token) - op.amount_units);
    if (credits) balances.set(key(op.to, op.token), get(op.to, op.token) + op.amount_units);
    return { status: 'confirmed', error: null } as const;
  });
  return { outcomes, balance: get };
}

type Run = {
  transactions: Transaction[];
  sealed: Transaction[];
  blocks: Block[];
  balances: Map<string, Map<string, bigint>>;
  totals: NonNullable<Awaited<ReturnType<SqliteStore['latestBlock']>>>['totals'];
  negativeSeen: string[];
};

async function run(scenario: Scenario): Promise<Run> {
  const store = SqliteStore.open({ path: ':memory:' });
  try {
    const producer = new BlockProducer(store, clock, logger, { block_interval_ms: 1000, block_txs_max: scenario.block_txs_max });
    await producer.ensureGenesis();
    const transactions: Transaction[] = [];
    const negativeSeen: string[] = [];
    for (const batch of scenario.batches) {
      // Fixed nonces: the transaction's arrival number, so two runs of a scenario hash identically.
      const made = batch.map((op, offset) => makeTransaction(op, transactions.length + offset));
      if (made.length > 0) {
        const results = await store.appendPending(made.map((transaction) => ({ transaction, idempotency: null })));
        expect(results.every((result) => result.kind === 'stored')).toBe(true);
      }
      transactions.push(...made);
      await producer.drain();
      expect(await store.pendingCount()).toBe(0);
      // (b) no balance is ever negative: checked after every drain, for every user and token.
      for (const user of USERS) {
        for (const [token, units] of await store.balances(user)) if (units < 0n) negativeSeen.push(`${user}/${token}=${units}`);
      }
    }
    const latest = await store.latestBlock();
    if (latest === null) throw new Error('no genesis block');
    const blocks: Block[] = [];
    for (let number = 0; number <= latest.number; number += 1) {
      const block = await store.getBlock(number);
      if (block === null) throw new Error(`block ${number} is missing`);
      blocks.push(block);
    }
    const sealed: Transaction[] = [];
    for (const tx of transactions) {
      const stored = await store.getTransaction(tx.tx_hash);
      if (stored === null) throw new Error(`transaction ${tx.tx_hash} is missing`);
      sealed.push(stored);
    }
    const balances = new Map<string, Map<string, bigint>>();
    for (const user of USERS) balances.set(user, await store.balances(user));
    return { transactions, sealed, blocks, balances, totals: latest.totals, negativeSeen };
  } finally {
    await store.close();
  }
}

function expectedBlockSizes(scenario: Scenario): number[] {
  const sizes: number[] = [];
  for (const batch of scenario.batches) {
    for (let start = 0; start < batch.length; start += scenario.block_txs_max) sizes.push(Math.min(scenario.block_txs_max, batch.length - start));
  }
  return sizes;
}

function checkRun(scenario: Scenario, result: Run): void {
  const ops = scenario.batches.flat();
  const { transactions, sealed, blocks, balances } = result;
  expect(transactions).toHaveLength(ops.length);

  // (c) the chain: genesis, then consecutive, linked, non-empty blocks of at most block_txs_max,
  // filled in arrival order.
  const genesis = blocks[0] as Block;
  expect(genesis.number).toBe(0);
  expect(genesis.parent_hash).toBe(ZERO_HASH);
  expect(genesis.transactions).toEqual([]);
  expect(checkBlock(genesis, null)).toEqual({ ok: true });
  let parent: BlockHeader = genesis;
  for (const block of blocks.slice(1)) {
    expect(block.number).toBe(parent.number + 1);
    expect(block.parent_hash).toBe(parent.hash);
    expect(block.timestamp).toBeGreaterThanOrEqual(parent.timestamp);
    expect(block.transactions_count).toBeGreaterThanOrEqual(1);
    expect(block.transactions_count).toBeLessThanOrEqual(scenario.block_txs_max);
    expect(checkBlock(block, parent)).toEqual({ ok: true });
    parent = block;
  }
  expect(blocks.slice(1).map((block) => block.transactions_count)).toEqual(expectedBlockSizes(scenario));
  // Every transaction is in exactly one block, in arrival order.
  expect(blocks.flatMap((block) => block.transactions)).toEqual(transactions.map((tx) => tx.tx_hash));

  // Each stored transaction records its block, position and outcome.
  const reference = referenceOutcomes(ops);
  sealed.forEach((tx, index) => {
    expect(tx.status === 'confirmed' || tx.status === 'failed').toBe(true);
    const block = blocks[tx.block_number ?? -1];
    if (block === undefined) throw new Error(`transaction ${index} has no block`);
    expect(tx.position).not.toBeNull();
    expect(block.transactions[tx.position ?? -1]).toBe(tx.tx_hash);
    expect(tx.block_hash).toBe(block.hash);
    // (d) the outcome equals the reference model's.
    const expected = reference.outcomes[index];
    expect({ status: tx.status, error: tx.error }).toEqual(expected);
    // The record still hashes to its tx_hash, and its proof verifies to the block root.
    expect(transactionHash(tx)).toBe(tx.tx_hash);
    const path = transactionsAuditPath(block.transactions, tx.position ?? -1).map(hexToBytes);
    const root = rootFromInclusionProof(sha256, hexToBytes(tx.tx_hash), tx.position ?? -1, block.transactions.length, path);
    expect(root === null ? null : toHashHex(root)).toBe(block.transactions_root);
  });
  for (const block of blocks) {
    const positions = sealed.filter((tx) => tx.block_number === block.number).map((tx) => tx.position);
    expect(positions.sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: block.transactions_count }, (_, at) => at));
  }

  // (b) and (d): no negative balance; every balance equals the reference model's.
  expect(result.negativeSeen).toEqual([]);
  for (const user of USERS) {
    for (const token of TOKENS) {
      const units = balances.get(user)?.get(token) ?? 0n;
      expect(units).toBeGreaterThanOrEqual(0n);
      expect(units).toBe(reference.balance(user, token));
    }
  }

  // (a) total supply per token = confirmed mints − confirmed burns = the sum of all balances.
  for (const token of TOKENS) {
    let supply = 0n;
    sealed.forEach((tx) => {
      if (tx.token !== token || tx.status !== 'confirmed') return;
      if (tx.type === 'mint') supply += tx.amount_units;
      if (tx.type === 'burn') supply -= tx.amount_units;
    });
    let sum = 0n;
    for (const user of USERS) sum += balances.get(user)?.get(token) ?? 0n;
    expect(sum).toBe(supply);
  }

  // Running totals carried by the latest block.
  expect(result.totals.transactions).toBe(transactions.length);
  const participants = new Set<string>();
  for (const tx of sealed) if (tx.status === 'confirmed') participants.add(tx.from).add(tx.to);
  expect(result.totals.users).toBe(participants.size);
  for (const token of TOKENS) {
    const volume = sealed
      .filter((tx) => tx.status === 'confirmed' && tx.type === 'transfer' && tx.token === token)
      .reduce((total, tx) => total + tx.amount_units, 0n);
    expect(result.totals.transfer_volume_units[token] ?? 0n).toBe(volume);
  }
}

describe('ledger core properties (BlockProducer + SqliteStore against a reference model)', () => {
  it('conserves supply, never goes negative, seals every transaction once, and matches the reference model', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        checkRun(scenario, await run(scenario));
      }),
      { numRuns: 60 },
    );
  });

  it('is deterministic: the same input on two fresh stores gives identical blocks and outcomes', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const first = await run(scenario);
        const second = await run(scenario);
        expect(second.blocks.map((block) => block.hash)).toEqual(first.blocks.map((block) => block.hash));
        expect(second.blocks).toEqual(first.blocks);
        expect(second.sealed).toEqual(first.sealed);
        expect(second.balances).toEqual(first.balances);
      }),
      { numRuns: 25 },
    );
  });

  it('hits both failure codes and the block size limit in a fixed scenario', async () => {
    const scenario: Scenario = {
      block_txs_max: 2,
      batches: [
        [
          { type: 'mint', from: 'issuer', to: 'alice', amount_units: 100n, token: 'TAB' },
          { type: 'transfer', from: 'alice', to: 'bob', amount_units: 101n, token: 'TAB' },
          { type: 'transfer', from: 'alice', to: 'bob', amount_units: 100n, token: 'TAB' },
          { type: 'mint', from: 'issuer', to: 'carol', amount_units: UNITS_MAX, token: 'USDG' },
          { type: 'mint', from: 'issuer', to: 'carol', amount_units: 1n, token: 'USDG' },
        ],
        [],
        [{ type: 'burn', from: 'bob', to: 'issuer', amount_units: 60n, token: 'TAB' }],
      ],
    };
    const result = await run(scenario);
    checkRun(scenario, result);
    expect(result.sealed.map((tx) => tx.error)).toEqual([null, 'insufficient_funds', null, null, 'balance_overflow', null]);
    expect(result.blocks.map((block) => block.transactions_count)).toEqual([0, 2, 2, 1, 1]);
    expect(result.balances.get('bob')?.get('TAB')).toBe(40n);
    expect(result.balances.get('carol')?.get('USDG')).toBe(UNITS_MAX);
  });
});
