/**
 * SHA-256 bindings of the shared algorithms for Node: synchronous node:crypto, used on the write
 * path. The algorithms themselves are in chain-verification.ts and merkle.ts, shared with the SDK.
 */
import { hash } from 'node:crypto';
import { blockHashSteps, transactionHashSteps, transactionsRootSteps } from './chain-verification.js';
import type { BlockPreimage, TransactionPreimage } from './encoding.js';
import type { Transaction, TransactionType } from './transaction.js';
import { runHashSteps } from './hash-steps.js';
import { hexToBytes, toHashHex } from './hex.js';
import { inclusionProof } from './merkle.js';

/** One-shot `crypto.hash`: about twice as fast as createHash() for the small inputs of Merkle trees. */
export function sha256(bytes: Uint8Array): Uint8Array {
  return hash('sha256', bytes, 'buffer');
}

export function transactionHash(tx: TransactionPreimage): string {
  return runHashSteps(transactionHashSteps(tx), sha256);
}

export function blockHash(block: BlockPreimage): string {
  return runHashSteps(blockHashSteps(block), sha256);
}

/** RFC 6962 root over the block's transaction hashes (32-byte leaves, block order). */
export function transactionsRoot(tx_hashes: readonly string[]): string {
  return runHashSteps(transactionsRootSteps(tx_hashes), sha256);
}

export function transactionsAuditPath(tx_hashes: readonly string[], index: number): string[] {
  return inclusionProof(sha256, tx_hashes.map(hexToBytes), index).map(toHashHex);
}

/** A new pending transaction: its preimage, the hash of it, and no outcome yet. */
export function pendingTransaction(preimage: TransactionPreimage & { type: TransactionType }, token_out: string | null = null): Transaction {
  return {
    ...preimage,
    min_receive_units: preimage.min_receive_units ?? null,
    tx_hash: transactionHash(preimage),
    status: 'pending',
    block_number: null,
    block_hash: null,
    position: null,
    error: null,
    amount_out_units: null,
    token_out,
  };
}
