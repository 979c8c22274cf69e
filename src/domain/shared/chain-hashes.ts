/**
 * The chain's records as the API answers them (a block header, a block with its transaction list, an
 * inclusion proof), and how each hash the chain commits to is computed: a transaction's, a block's and
 * a block's transactions root. Written once for the server, which builds the chain with them (node:crypto,
 * synchronous: hashing.ts), and for everyone who checks it (chain-verification.ts, the audit, the SDK with
 * WebCrypto): every function here is a `HashSteps` generator (see hash-steps.ts).
 */
import { blockCanonicalText, transactionCanonicalText, utf8Bytes, type BlockPreimage, type TransactionPreimage } from './encoding.js';
import { hashOne, type HashSteps } from './hash-steps.js';
import { hexToBytes, toHashHex } from './hex.js';
import { merkleRootSteps } from './merkle.js';

export type BlockHeaderRecord = {
  number: number;
  hash: string;
  parent_hash: string;
  timestamp: number;
  transactions_count: number;
  transactions_root: string;
  /**
   * USD per native token after this block, as exact decimal text; part of the block hash (version 2).
   * null (or absent, from older servers) on blocks sealed before the market, hashed with version 1.
   */
  native_price?: string | null | undefined;
};

export type BlockRecord = BlockHeaderRecord & { transactions: readonly string[] };

/** A transaction's RFC 6962 inclusion proof in its block: what the server answers and the verifier checks. */
export type InclusionProofRecord = {
  tx_hash: string;
  block_number: number;
  block_hash: string;
  transactions_root: string;
  leaf_index: number;
  tree_size: number;
  audit_path: string[];
};

export function* transactionHashSteps(tx: TransactionPreimage): HashSteps<string> {
  return toHashHex(yield* hashOne(utf8Bytes(transactionCanonicalText(tx))));
}

export function* blockHashSteps(block: BlockPreimage): HashSteps<string> {
  return toHashHex(yield* hashOne(utf8Bytes(blockCanonicalText(block))));
}

/** RFC 6962 root over the block's transaction hashes (32-byte leaves, block order). */
export function* transactionsRootSteps(tx_hashes: readonly string[]): HashSteps<string> {
  return toHashHex(yield* merkleRootSteps(tx_hashes.map(hexToBytes)));
}
