/**
 * SHA-256 bindings of the shared algorithms for Node: synchronous node:crypto, used on the write
 * path. The algorithms themselves are in chain-hashes.ts and merkle.ts, shared with the SDK;
 * two run here in a form of their own, for speed on every submission and every block (the transaction
 * hash and the transactions root), each held to the shared one by a property test.
 */
import { hash } from 'node:crypto';
import { blockHashSteps, transactionsRootSteps } from './shared/chain-hashes.js';
import { transactionCanonicalText, type BlockPreimage, type TransactionPreimage } from './shared/encoding.js';
import type { Transaction, TransactionType } from './transaction.js';
import { runHashSteps } from './shared/hash-steps.js';
import { hexToBytes, toHashHex } from './shared/hex.js';
import { inclusionProof, LEAF_PREFIX, NODE_PREFIX } from './shared/merkle.js';
import { assert } from './shared/errors.js';

/** One-shot `crypto.hash`: about twice as fast as createHash() for the small inputs of Merkle trees. */
export function sha256(bytes: Uint8Array): Uint8Array {
  return hash('sha256', bytes, 'buffer');
}

/**
 * The hash of the transaction's canonical text (`transactionHashSteps`, the shared definition, which a
 * property test holds this to): `crypto.hash` of the text as UTF-8 with a hex result, 0.4 µs on the
 * benchmark's machine against 7–8 µs through the generator, TextEncoder and a Buffer digest. It runs for
 * every submission.
 */
export function transactionHash(tx: TransactionPreimage): string {
  return `0x${hash('sha256', transactionCanonicalText(tx), 'hex')}`;
}

export function blockHash(block: BlockPreimage): string {
  return runHashSteps(blockHashSteps(block), sha256);
}

const HASH_BYTES = 32;

/**
 * RFC 6962 root over the block's transaction hashes (32-byte leaves, block order): the sealer's form of
 * `transactionsRootSteps` (chain-hashes.ts, which the verifier, the SDK and the audit run), held
 * to it by a property test (test/domain/shared/encoding.test.ts). It builds the tree in one buffer, level by
 * level in place, and allocates only each digest's string; the shared generator allocates each leaf's
 * bytes, each preimage, each digest's Buffer and each level's arrays, which cost a 100,000-transaction
 * block more than its hashes did (docs/performance.md, "The sealer's Merkle tree in one buffer").
 */
export function transactionsRoot(tx_hashes: readonly string[]): string {
  if (tx_hashes.length === 0) return runHashSteps(transactionsRootSteps(tx_hashes), sha256);
  const level = leafHashes(tx_hashes);
  const node = Buffer.allocUnsafe(1 + 2 * HASH_BYTES);
  node[0] = NODE_PREFIX;
  // An odd last node is carried up unchanged: the RFC's split at the largest power of two.
  for (let size = tx_hashes.length; size > 1; size = (size >> 1) + (size & 1)) {
    const pairs = size >> 1;
    for (let pair = 0; pair < pairs; pair += 1) {
      level.copy(node, 1, pair * 2 * HASH_BYTES, (pair + 1) * 2 * HASH_BYTES);
      writeDigest(level, pair * HASH_BYTES, node);
    }
    if (size % 2 === 1) level.copy(level, pairs * HASH_BYTES, (size - 1) * HASH_BYTES, size * HASH_BYTES);
  }
  return toHashHex(level.subarray(0, HASH_BYTES));
}

/** The leaf hashes H(0x00 || leaf), one after another in one buffer. */
function leafHashes(tx_hashes: readonly string[]): Buffer {
  const level = Buffer.allocUnsafe(tx_hashes.length * HASH_BYTES);
  const leaf = Buffer.allocUnsafe(1 + HASH_BYTES);
  leaf[0] = LEAF_PREFIX;
  for (let index = 0; index < tx_hashes.length; index += 1) {
    const tx_hash = tx_hashes[index] as string;
    // A stored hash is always `0x` and 64 hex digits; anything else is a bug, not something to hash.
    assert(tx_hash.length === 2 + 2 * HASH_BYTES && tx_hash.startsWith('0x'), 'a transaction hash is 0x and 64 hex digits');
    assert(leaf.write(tx_hash.slice(2), 1, 'hex') === HASH_BYTES, 'a transaction hash is 0x and 64 hex digits');
    writeDigest(level, index * HASH_BYTES, leaf);
  }
  return level;
}

/**
 * SHA-256 of `input` written into `level` at `at`. Asked for a Buffer, `crypto.hash` spends more on
 * allocating it than on hashing 65 bytes; asked for a 'binary' (latin1) string, one character per
 * byte, written back byte for byte, it costs about half (docs/performance.md, "The sealer's Merkle
 * tree in one buffer").
 */
function writeDigest(level: Buffer, at: number, input: Buffer): void {
  level.write(hash('sha256', input, 'binary'), at, 'binary');
}

export function transactionsAuditPath(tx_hashes: readonly string[], index: number): string[] {
  return inclusionProof(sha256, tx_hashes.map(hexToBytes), index).map(toHashHex);
}

/**
 * A new pending transaction: its preimage, the hash of it, and no outcome yet. Written field by field:
 * on Node 20 an object spread with further fields took 17 µs here (V8's generic path), a literal 0.1.
 */
export function pendingTransaction(preimage: TransactionPreimage & { type: TransactionType }, token_out: string | null = null): Transaction {
  return {
    from: preimage.from,
    to: preimage.to,
    amount_units: preimage.amount_units,
    token: preimage.token,
    type: preimage.type,
    metadata: preimage.metadata,
    nonce: preimage.nonce,
    timestamp: preimage.timestamp,
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
