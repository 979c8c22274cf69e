/**
 * RFC 6962 (Certificate Transparency) Merkle Tree Hash, inclusion proofs and their verification.
 * Leaf hash = H(0x00 || leaf), node hash = H(0x01 || left || right), the tree is split at the largest
 * power of two smaller than its size, and the empty tree hashes to H(""). Pure: each algorithm is one
 * `HashSteps` generator (see hash-steps.ts) with a synchronous entry point for the server and an
 * `…Async` one for WebCrypto, so the same code runs in the server, the verifier and a browser.
 */
import { hashOne, runHashSteps, runHashStepsAsync, type HashFunction, type HashSteps, type SyncHashFunction } from './hash-steps.js';

export type { HashFunction, SyncHashFunction } from './hash-steps.js';

/** The first byte of a leaf's preimage and of an interior node's (RFC 6962 domain separation). */
export const LEAF_PREFIX = 0x00;
export const NODE_PREFIX = 0x01;

/** The preimage of a leaf hash: 0x00 || leaf. */
export function leafInput(leaf: Uint8Array): Uint8Array {
  const input = new Uint8Array(leaf.length + 1);
  input[0] = LEAF_PREFIX;
  input.set(leaf, 1);
  return input;
}

/** The preimage of an interior node hash: 0x01 || left || right. */
export function nodeInput(left: Uint8Array, right: Uint8Array): Uint8Array {
  const input = new Uint8Array(left.length + right.length + 1);
  input[0] = NODE_PREFIX;
  input.set(left, 1);
  input.set(right, 1 + left.length);
  return input;
}

export function leafHash(hash: SyncHashFunction, leaf: Uint8Array): Uint8Array {
  return hash(leafInput(leaf));
}

export function nodeHash(hash: SyncHashFunction, left: Uint8Array, right: Uint8Array): Uint8Array {
  return hash(nodeInput(left, right));
}

/** The node preimages of the level above `level`, pairing left to right. */
function pairInputs(level: readonly Uint8Array[]): Uint8Array[] {
  const inputs: Uint8Array[] = [];
  for (let index = 0; index + 1 < level.length; index += 2) {
    inputs.push(nodeInput(level[index] as Uint8Array, level[index + 1] as Uint8Array));
  }
  return inputs;
}

/** The level above `level` from its paired digests; an odd last node is carried up unchanged. */
function nextLevel(level: readonly Uint8Array[], paired: readonly Uint8Array[]): readonly Uint8Array[] {
  return level.length % 2 === 1 ? [...paired, level[level.length - 1] as Uint8Array] : paired;
}

/**
 * Merkle Tree Hash of `leaves`, bottom-up in O(n) hashes, one batch per level. Pairing left to right
 * and carrying an odd last node up unchanged yields exactly the RFC 6962 split-at-largest-power-of-two
 * tree.
 */
export function* merkleRootSteps(leaves: readonly Uint8Array[]): HashSteps<Uint8Array> {
  if (leaves.length === 0) return yield* hashOne(new Uint8Array(0));
  let level = yield leaves.map(leafInput);
  while (level.length > 1) level = nextLevel(level, yield pairInputs(level));
  return level[0] as Uint8Array;
}

/** RFC 6962 PATH(m, D[n]): the audit path for the leaf at `index`, nearest sibling first. */
export function* inclusionProofSteps(leaves: readonly Uint8Array[], index: number): HashSteps<Uint8Array[]> {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) {
    throw new RangeError(`leaf index ${index} outside a tree of ${leaves.length}`);
  }
  const path: Uint8Array[] = [];
  let level = yield leaves.map(leafInput);
  let position = index;
  while (level.length > 1) {
    const sibling = position ^ 1;
    if (sibling < level.length) path.push(level[sibling] as Uint8Array);
    level = nextLevel(level, yield pairInputs(level));
    position >>= 1;
  }
  return path;
}

/**
 * Recomputes the root from a leaf and its audit path (RFC 9162 section 2.1.3.2) and returns it, or
 * null when the path's length does not fit the index and tree size.
 */
export function* rootFromInclusionProofSteps(
  leaf: Uint8Array,
  index: number,
  tree_size: number,
  path: readonly Uint8Array[],
): HashSteps<Uint8Array | null> {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(tree_size) || index < 0 || index >= tree_size) return null;
  let fn = index;
  let sn = tree_size - 1;
  let result = yield* hashOne(leafInput(leaf));
  for (const sibling of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      result = yield* hashOne(nodeInput(sibling, result));
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      result = yield* hashOne(nodeInput(result, sibling));
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? result : null;
}

export function merkleRoot(hash: SyncHashFunction, leaves: readonly Uint8Array[]): Uint8Array {
  return runHashSteps(merkleRootSteps(leaves), hash);
}

export function merkleRootAsync(hash: HashFunction, leaves: readonly Uint8Array[]): Promise<Uint8Array> {
  return runHashStepsAsync(merkleRootSteps(leaves), hash);
}

export function inclusionProof(hash: SyncHashFunction, leaves: readonly Uint8Array[], index: number): Uint8Array[] {
  return runHashSteps(inclusionProofSteps(leaves, index), hash);
}

export function inclusionProofAsync(hash: HashFunction, leaves: readonly Uint8Array[], index: number): Promise<Uint8Array[]> {
  return runHashStepsAsync(inclusionProofSteps(leaves, index), hash);
}

export function rootFromInclusionProof(
  hash: SyncHashFunction,
  leaf: Uint8Array,
  index: number,
  tree_size: number,
  path: readonly Uint8Array[],
): Uint8Array | null {
  return runHashSteps(rootFromInclusionProofSteps(leaf, index, tree_size, path), hash);
}

export function rootFromInclusionProofAsync(
  hash: HashFunction,
  leaf: Uint8Array,
  index: number,
  tree_size: number,
  path: readonly Uint8Array[],
): Promise<Uint8Array | null> {
  return runHashStepsAsync(rootFromInclusionProofSteps(leaf, index, tree_size, path), hash);
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index += 1) difference |= (a[index] as number) ^ (b[index] as number);
  return difference === 0;
}
