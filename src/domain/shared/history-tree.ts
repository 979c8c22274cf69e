/**
 * The history tree: an RFC 6962 Merkle tree whose leaves are the block hashes in order, stored as its
 * perfect (complete) subtrees. Pure: plans which stored nodes a root or proof needs (O(log n) of them),
 * assembles the answer from them, and verifies inclusion and consistency proofs (RFC 9162 §2.1.3–2.1.4)
 * as `HashSteps`, so the server, the SDK and a browser share one implementation.
 */
import { hashOne, type HashSteps } from './hash-steps.js';
import { leafInput, nodeInput } from './merkle.js';

/**
 * A perfect subtree: the 2^level leaves starting at index × 2^level. Level 0 nodes are leaf hashes
 * H(0x00 || block hash); a level l+1 node is H(0x01 || left || right) of its two level-l children.
 */
export type NodeKey = { level: number; index: number };
export type HistoryNode = NodeKey & { hash: Uint8Array };

/** The largest power of two strictly smaller than `n` (n ≥ 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
}

export function isValidSize(size: number): boolean {
  return Number.isSafeInteger(size) && size >= 0;
}

/**
 * The perfect subtrees covering leaves [start, start + size), largest first, where `start` is a multiple
 * of the smallest power of two ≥ size (true of every subtree RFC 6962's recursion visits).
 */
export function rangeNodes(start: number, size: number): NodeKey[] {
  const keys: NodeKey[] = [];
  let offset = start;
  for (let level = 52; level >= 0; level -= 1) {
    const width = 2 ** level;
    if (Math.floor(size / width) % 2 === 1) {
      keys.push({ level, index: offset / width });
      offset += width;
    }
  }
  return keys;
}

/** A proof element or root: the right fold of its perfect subtrees, H(0x01 || a || H(0x01 || b || …)). */
export type Composite = NodeKey[];

export function nodeKeyId(key: NodeKey): string {
  return `${key.level}:${key.index}`;
}

/** Every stored node that a list of composites reads, each once. */
export function nodesNeeded(composites: readonly Composite[]): NodeKey[] {
  const seen = new Map<string, NodeKey>();
  for (const composite of composites) for (const key of composite) seen.set(nodeKeyId(key), key);
  return [...seen.values()];
}

/** The history root of `size` leaves (size ≥ 1) as a composite. */
export function rootPlan(size: number): Composite {
  return rangeNodes(0, size);
}

/** RFC 6962 PATH(index, D[start : start+size]), nearest sibling first. */
function pathPlan(index: number, start: number, size: number): Composite[] {
  if (size <= 1) return [];
  const k = splitPoint(size);
  if (index < k) return [...pathPlan(index, start, k), rangeNodes(start + k, size - k)];
  return [...pathPlan(index - k, start + k, size - k), rangeNodes(start, k)];
}

/** The inclusion proof of leaf `index` in the tree of `size` leaves. */
export function inclusionPlan(index: number, size: number): Composite[] {
  if (!isValidSize(size) || !Number.isSafeInteger(index) || index < 0 || index >= size) {
    throw new RangeError(`leaf ${index} is outside a history of ${size}`);
  }
  return pathPlan(index, 0, size);
}

/** RFC 9162 SUBPROOF(m, D[start : start+size], b). */
function subproofPlan(m: number, start: number, size: number, complete: boolean): Composite[] {
  if (m === size) return complete ? [] : [rangeNodes(start, size)];
  const k = splitPoint(size);
  if (m <= k) return [...subproofPlan(m, start, k, complete), rangeNodes(start + k, size - k)];
  return [...subproofPlan(m - k, start + k, size - k, false), rangeNodes(start, k)];
}

/** The consistency proof that the history of `to` leaves extends the one of `from` (1 ≤ from ≤ to). */
export function consistencyPlan(from: number, to: number): Composite[] {
  if (!isValidSize(from) || !isValidSize(to) || from < 1 || from > to) {
    throw new RangeError(`no consistency proof from ${from} to ${to}`);
  }
  return from === to ? [] : subproofPlan(from, 0, to, true);
}

/** Folds a composite from stored node hashes; throws when one is missing (a bug or a torn store). */
export function* compositeSteps(composite: Composite, nodes: ReadonlyMap<string, Uint8Array>): HashSteps<Uint8Array> {
  const hashes = composite.map((key) => {
    const hash = nodes.get(nodeKeyId(key));
    if (hash === undefined) throw new Error(`history node ${nodeKeyId(key)} is missing`);
    return hash;
  });
  let result = hashes[hashes.length - 1];
  if (result === undefined) throw new Error('an empty composite has no hash');
  for (let position = hashes.length - 2; position >= 0; position -= 1) {
    result = yield* hashOne(nodeInput(hashes[position] as Uint8Array, result));
  }
  return result;
}

/** Every composite's hash, in order. */
export function* compositesSteps(composites: readonly Composite[], nodes: ReadonlyMap<string, Uint8Array>): HashSteps<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (const composite of composites) out.push(yield* compositeSteps(composite, nodes));
  return out;
}

/** The stored nodes that appending leaf `index` needs: the left siblings it completes, lowest first. */
export function appendSiblings(index: number): NodeKey[] {
  const keys: NodeKey[] = [];
  let level = 0;
  let position = index;
  while (position % 2 === 1) {
    keys.push({ level, index: position - 1 });
    position = (position - 1) / 2;
    level += 1;
  }
  return keys;
}

/**
 * The nodes that appending `block_hash` as leaf `index` creates: its leaf node, then each perfect
 * subtree it completes. `siblings` holds the hashes of `appendSiblings(index)`, in that order.
 */
export function* appendSteps(index: number, block_hash: Uint8Array, siblings: readonly Uint8Array[]): HashSteps<HistoryNode[]> {
  const keys = appendSiblings(index);
  if (siblings.length !== keys.length) throw new Error(`appending leaf ${index} needs ${keys.length} siblings`);
  let hash = yield* hashOne(leafInput(block_hash));
  const created: HistoryNode[] = [{ level: 0, index, hash }];
  let position = index;
  for (let level = 0; level < keys.length; level += 1) {
    hash = yield* hashOne(nodeInput(siblings[level] as Uint8Array, hash));
    position = (position - 1) / 2;
    created.push({ level: level + 1, index: position, hash });
  }
  return created;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index += 1) if (a[index] !== b[index]) return false;
  return true;
}

/**
 * RFC 9162 §2.1.4.2: true when `proof` shows that the tree of `to` leaves with root `to_root` extends
 * the one of `from` leaves with root `from_root`.
 */
export function* verifyConsistencySteps(
  from: number,
  to: number,
  from_root: Uint8Array,
  to_root: Uint8Array,
  proof: readonly Uint8Array[],
): HashSteps<boolean> {
  if (!isValidSize(from) || !isValidSize(to) || from < 1 || from > to) return false;
  if (from === to) return proof.length === 0 && equalBytes(from_root, to_root);
  const path = isPowerOfTwo(from) ? [from_root, ...proof] : [...proof];
  if (path.length === 0) return false;
  let fn = from - 1;
  let sn = to - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0] as Uint8Array;
  let sr = path[0] as Uint8Array;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = yield* hashOne(nodeInput(c, fr));
      sr = yield* hashOne(nodeInput(c, sr));
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = yield* hashOne(nodeInput(sr, c));
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalBytes(fr, from_root) && equalBytes(sr, to_root);
}

export { equalBytes };
