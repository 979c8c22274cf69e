/**
 * The overview's price check without a browser: `PoolVerifier` over an in-memory chain verifies it,
 * goes on from the last block checked when a block is added, names the block and transaction of a
 * lie (and stays failed), and treats a failed read as "not verified yet", not as a lie.
 */
import type { Block, MarketInfo, Transaction } from '@tabula/client';
import { describe, expect, it } from 'vitest';
import { PoolVerifier, type MarketSource } from '../../explorer/src/market-verification.js';

const HASH = (n: number): string => `0x${n.toString(16).padStart(64, '0')}`;

function record(n: number, block_number: number, position: number, fields: Partial<Transaction>): Transaction {
  return {
    tx_hash: HASH(n), from: 'treasury', to: '@pool', amount: 0, amount_text: '1', token: 'TAB', type: 'mint', metadata: {}, status: 'confirmed',
    timestamp: 1, block_number, block_hash: HASH(1000 + block_number), position, error: null, nonce: 'n', min_receive: null, amount_out: null, token_out: null, ...fields,
  };
}

/** Blocks 0..2: genesis at the fallback price, liquidity (2 USD), a swap of 10 TAB. */
function chain() {
  const transactions = new Map<string, Transaction>();
  const blocks: Block[] = [];
  const add = (native_price: string, records: Array<Partial<Transaction>>): void => {
    const number = blocks.length;
    const txs = records.map((fields, position) => record(number * 10 + position, number, position, fields));
    for (const tx of txs) transactions.set(tx.tx_hash, tx);
    blocks.push({ number, hash: HASH(1000 + number), parent_hash: HASH(999 + number), timestamp: number, transactions_count: txs.length, transactions_root: HASH(0), native_price, transactions: txs.map((tx) => tx.tx_hash) });
  };
  add('2.5', []);
  add('2', [{ amount_text: '1000' }, { token: 'USDG', amount_text: '2000' }]);
  add('1.960650336633', [{ type: 'swap', from: 'alice', to: 'alice', amount_text: '10', token_out: 'USDG', amount_out: 19.74316, amount_out_text: '19.74316' }]);
  let reserves = { native: 1010, native_text: '1010', usdg: 1980.25684, usdg_text: '1980.25684' };
  const calls = { blocks: [] as number[], fail_next: false };
  const source: MarketSource = {
    getMarket: async () => {
      if (calls.fail_next) {
        calls.fail_next = false;
        throw new TypeError('fetch failed');
      }
      const newest = blocks[blocks.length - 1] as Block;
      return { pool: '@pool', fee_bps: 30, native_price: Number(newest.native_price), native_price_text: newest.native_price as string, reserves, block_number: newest.number } satisfies MarketInfo;
    },
    getBlock: async (number) => {
      calls.blocks.push(number);
      return blocks[number] as Block;
    },
    getTransaction: async (hash) => transactions.get(hash) as Transaction,
  };
  return { source, calls, add, transactions, setReserves: (next: typeof reserves) => { reserves = next; } };
}

describe('PoolVerifier', () => {
  it('verifies an honest chain, then only the blocks sealed since', async () => {
    const { source, calls, add, setReserves } = chain();
    const verifier = new PoolVerifier(source);
    expect(await verifier.advance()).toEqual({ state: 'verified', to: 2, price: '1.960650336633', swaps_checked: 1, prices_checked: 2 });
    expect(calls.blocks).toEqual([0, 1, 2]);
    // a swap whose minimum the pool cannot meet: failed, nothing moves
    add('1.960650336633', [{ type: 'swap', from: 'alice', to: 'alice', amount_text: '1', token_out: 'USDG', status: 'failed', error: 'slippage_exceeded', min_receive: 1000, min_receive_text: '1000' }]);
    setReserves({ native: 1010, native_text: '1010', usdg: 1980.25684, usdg_text: '1980.25684' });
    expect(await verifier.advance()).toMatchObject({ state: 'verified', to: 3, swaps_checked: 2, prices_checked: 3 });
    expect(calls.blocks).toEqual([0, 1, 2, 3]);
  });

  it('names the block and transaction of a rewritten amount_out, and stays failed', async () => {
    const { source, transactions } = chain();
    const swap = [...transactions.values()].find((tx) => tx.type === 'swap') as Transaction;
    transactions.set(swap.tx_hash, { ...swap, amount_out: 19.74317, amount_out_text: '19.74317' });
    const verifier = new PoolVerifier(source);
    const outcome = await verifier.advance();
    expect(outcome).toMatchObject({ state: 'mismatch', block_number: 2, tx_hash: swap.tx_hash, reason: expect.stringContaining('19.74317') });
    transactions.set(swap.tx_hash, swap);
    expect(await verifier.advance()).toEqual(outcome);
  });

  it('catches a block price the replayed pool does not give, and reserves the chain does not give', async () => {
    const lying_price = chain();
    lying_price.add('1.9', []);
    expect(await new PoolVerifier(lying_price.source).advance()).toMatchObject({ state: 'mismatch', block_number: 3, tx_hash: null, reason: expect.stringContaining('1.960650336633') });
    const lying_reserves = chain();
    lying_reserves.setReserves({ native: 1010, native_text: '1010', usdg: 1980, usdg_text: '1980' });
    expect(await new PoolVerifier(lying_reserves.source).advance()).toMatchObject({ state: 'mismatch', block_number: 2 });
  });

  it('rejects on a failed read (not verified yet) and verifies on the next call', async () => {
    const { source, calls } = chain();
    const verifier = new PoolVerifier(source);
    calls.fail_next = true;
    await expect(verifier.advance()).rejects.toThrow('fetch failed');
    expect(await verifier.advance()).toMatchObject({ state: 'verified', to: 2 });
  });
});
