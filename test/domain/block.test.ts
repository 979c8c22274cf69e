import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildBlock, checkBlock, genesisBlock, type Block, type BlockHeader } from '../../src/domain/block.js';
import { InvariantViolation } from '../../src/domain/shared/errors.js';
import { blockHash, transactionsRoot } from '../../src/domain/hashing.js';
import { ZERO_HASH } from '../../src/domain/shared/hex.js';

const EMPTY_ROOT = '0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const txHash = (n: number): string => `0x${createHash('sha256').update(`tx-${n}`).digest('hex')}`;

function withTransactions(header: BlockHeader, transactions: string[]): Block {
  return { ...header, transactions };
}

/** A block whose hash is recomputed after `change`, so only the targeted check can catch it. */
function rehashed(block: Block, change: Partial<Block>): Block {
  const changed = { ...block, ...change };
  return { ...changed, hash: blockHash(changed) };
}

describe('genesisBlock', () => {
  it('is block 0 with a zero parent, no transactions and the empty-tree root', () => {
    const genesis = genesisBlock(1_700_000_000);
    expect(genesis.number).toBe(0);
    expect(genesis.parent_hash).toBe(`0x${'0'.repeat(64)}`);
    expect(genesis.parent_hash).toBe(ZERO_HASH);
    expect(genesis.transactions_count).toBe(0);
    expect(genesis.transactions_root).toBe(EMPTY_ROOT);
    expect(genesis.timestamp).toBe(1_700_000_000);
    // SHA-256 over the documented preimage, written out by hand.
    const text = `{"number":0,"parent_hash":"${ZERO_HASH}","timestamp":1700000000,"transactions_root":"${EMPTY_ROOT}","version":1}`;
    expect(genesis.hash).toBe(`0x${createHash('sha256').update(text).digest('hex')}`);
    expect(genesis.hash).toBe('0x826a6e2151660c2eb754d0be2748ac8babb1fdae5415a02cdd7bf83f415e7976');
  });

  it('passes checkBlock with no parent', () => {
    expect(checkBlock(withTransactions(genesisBlock(5), []), null)).toEqual({ ok: true });
  });
});

describe('buildBlock', () => {
  const genesis = genesisBlock(1_000);

  it('links to its parent: number + 1, parent_hash = parent.hash, root over the transactions', () => {
    const txs = [txHash(1), txHash(2), txHash(3)];
    const block = buildBlock(genesis, txs, 1_001);
    expect(block.number).toBe(1);
    expect(block.parent_hash).toBe(genesis.hash);
    expect(block.transactions_count).toBe(3);
    expect(block.transactions_root).toBe(transactionsRoot(txs));
    expect(block.timestamp).toBe(1_001);
    expect(block.hash).toBe(blockHash(block));
    const next = buildBlock(block, [txHash(4)], 1_002);
    expect(next.number).toBe(2);
    expect(next.parent_hash).toBe(block.hash);
  });

  it('never moves the timestamp backwards', () => {
    const first = buildBlock(genesis, [txHash(1)], 2_000);
    const earlier = buildBlock(first, [txHash(2)], 1_500);
    expect(earlier.timestamp).toBe(2_000);
    const later = buildBlock(earlier, [txHash(3)], 2_500);
    expect(later.timestamp).toBe(2_500);
  });

  it('property: along any clock, timestamps are non-decreasing and every block checks against its parent', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 4_000_000_000 }), { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 5 }), (clock, perBlock) => {
        let parent: BlockHeader = genesisBlock(clock[0] ?? 0);
        let counter = 0;
        for (const now of clock) {
          const txs = Array.from({ length: perBlock }, () => txHash(counter++));
          const block = buildBlock(parent, txs, now);
          expect(block.timestamp).toBe(Math.max(now, parent.timestamp));
          expect(checkBlock(withTransactions(block, txs), parent)).toEqual({ ok: true });
          parent = block;
        }
      }),
      { numRuns: 100 },
    );
  });

  it('refuses an empty block after genesis', () => {
    expect(() => buildBlock(genesis, [], 1_001)).toThrow(InvariantViolation);
  });

  it('is deterministic', () => {
    const txs = [txHash(7), txHash(8)];
    expect(buildBlock(genesis, txs, 1_234)).toEqual(buildBlock(genesis, txs, 1_234));
  });
});

describe('checkBlock detects tampering', () => {
  const genesis = genesisBlock(1_000);
  const txs = [txHash(1), txHash(2), txHash(3), txHash(4), txHash(5)];
  const block = withTransactions(buildBlock(genesis, txs, 1_010), txs);

  it('accepts the untouched block', () => {
    expect(checkBlock(block, genesis)).toEqual({ ok: true });
  });

  it('a changed transactions_root', () => {
    const result = checkBlock({ ...block, transactions_root: transactionsRoot([txHash(9)]) }, genesis);
    expect(result).toEqual({ ok: false, reason: expect.stringContaining('transactions_root') });
  });

  it('a replaced transaction (the header still commits to the original list)', () => {
    const result = checkBlock({ ...block, transactions: [txHash(1), txHash(99), txHash(3), txHash(4), txHash(5)] }, genesis);
    expect(result).toEqual({ ok: false, reason: expect.stringContaining('transactions_root') });
  });

  it('reordered transactions', () => {
    const reordered = [txHash(2), txHash(1), txHash(3), txHash(4), txHash(5)];
    expect(checkBlock({ ...block, transactions: reordered }, genesis)).toEqual({ ok: false, reason: expect.stringContaining('transactions_root') });
  });

  it('a dropped transaction (count no longer matches)', () => {
    expect(checkBlock({ ...block, transactions: txs.slice(0, 4) }, genesis)).toEqual({
      ok: false,
      reason: expect.stringContaining('transactions_count'),
    });
  });

  it('a wrong transactions_count', () => {
    expect(checkBlock({ ...block, transactions_count: 4 }, genesis)).toEqual({ ok: false, reason: expect.stringContaining('transactions_count') });
  });

  it('a broken parent link', () => {
    const other = genesisBlock(999);
    expect(checkBlock(block, other)).toEqual({ ok: false, reason: expect.stringContaining('parent_hash') });
    expect(checkBlock(rehashed(block, { parent_hash: `0x${'ab'.repeat(32)}` }), genesis)).toEqual({
      ok: false,
      reason: expect.stringContaining('parent_hash'),
    });
  });

  it('a gap in the block numbers, even with a correctly recomputed hash', () => {
    expect(checkBlock(rehashed(block, { number: 2 }), genesis)).toEqual({ ok: false, reason: expect.stringContaining('consecutive') });
    expect(checkBlock(rehashed(block, { number: 0 }), genesis)).toEqual({ ok: false, reason: expect.stringContaining('consecutive') });
  });

  it('a timestamp before the parent, even with a correctly recomputed hash', () => {
    expect(checkBlock(rehashed(block, { timestamp: 999 }), genesis)).toEqual({ ok: false, reason: expect.stringContaining('backwards') });
  });

  it('a header field changed without recomputing the hash', () => {
    expect(checkBlock({ ...block, timestamp: 1_011 }, genesis)).toEqual({ ok: false, reason: expect.stringContaining('hash') });
    expect(checkBlock({ ...block, number: 2 }, genesis)).not.toEqual({ ok: true });
  });

  it('a forged hash', () => {
    expect(checkBlock({ ...block, hash: `0x${'00'.repeat(31)}01` }, genesis)).toEqual({ ok: false, reason: expect.stringContaining('hash') });
    expect(checkBlock({ ...block, hash: block.hash.toUpperCase().replace('0X', '0x') }, genesis)).not.toEqual({ ok: true });
  });

  it('a genesis block with a non-zero parent', () => {
    const genesisWithTxs = withTransactions(genesis, []);
    expect(checkBlock(rehashed(genesisWithTxs, { parent_hash: block.hash }), null)).toEqual({
      ok: false,
      reason: expect.stringContaining('parent_hash'),
    });
  });

  // checkBlock(block, null) treats the block as genesis (it insists on the zero parent hash) but does
  // not check that its number is 0, so a parentless "block 7" with a self-consistent hash passes.
  it('regression: a parentless block must be number 0', () => {
    const forged = rehashed(withTransactions(genesis, []), { number: 7 });
    expect(checkBlock(forged, null)).not.toEqual({ ok: true });
  });
});
