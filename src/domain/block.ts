/** Blocks: the genesis block, a new block built on its parent (header hash and transactions root), and a block checked against its parent. */
import { assert } from './shared/errors.js';
import type { BlockHeaderRecord } from './shared/chain-hashes.js';
import { blockCheckSteps } from './shared/chain-verification.js';
import { runHashSteps } from './shared/hash-steps.js';
import { blockHash, sha256, transactionsRoot } from './hashing.js';
import { ZERO_HASH } from './shared/hex.js';

/** A block's header: the fields its hash commits to, plus its hash (one definition, shared with the SDK). */
export type BlockHeader = BlockHeaderRecord;

export type Block = BlockHeader & { transactions: string[] };

export function genesisBlock(timestamp: number, native_price?: string): BlockHeader {
  return buildBlock(null, [], timestamp, native_price);
}

/** The next block after `parent` holding `tx_hashes` in order; its timestamp never goes backwards. */
export function buildBlock(parent: BlockHeader | null, tx_hashes: readonly string[], now_s: number, native_price?: string): BlockHeader {
  assert(parent === null || tx_hashes.length > 0, 'no empty blocks after genesis');
  const number = parent === null ? 0 : parent.number + 1;
  const parent_hash = parent === null ? ZERO_HASH : parent.hash;
  const timestamp = parent === null ? now_s : Math.max(now_s, parent.timestamp);
  const transactions_root = transactionsRoot(tx_hashes);
  const hash = blockHash({ number, parent_hash, timestamp, transactions_root, native_price: native_price ?? null });
  return { number, hash, parent_hash, timestamp, transactions_count: tx_hashes.length, transactions_root, ...(native_price === undefined ? {} : { native_price }) };
}

export type BlockCheck = { ok: true } | { ok: false; reason: string };

/** Recomputes a block's root and hash from its transactions and checks the link to its parent (null: genesis). */
export function checkBlock(block: Block, parent: BlockHeader | null): BlockCheck {
  const result = runHashSteps(blockCheckSteps(block, parent), sha256);
  return result.ok ? result : { ok: false, reason: result.reason };
}
