/**
 * The balance tree (the sparse Merkle tree of src/domain/shared/balance-commitment.ts) held in memory, in
 * flat typed arrays rather than one object and one buffer per node.
 *
 * Why: the tree is persistent (an update shares every untouched node with the tree it came from, so a
 * reader keeps proving against the state it holds while the sealer prepares the next). As objects,
 * every update replaced each touched path's nodes with new ones, which lived long enough to reach
 * V8's old generation and then died there, which V8 let grow to several times the live heap: a tree
 * of 200,000 balances updated 4,000 times by blocks of 250 peaked at 1.36 GiB of RSS (354 MiB as
 * here; docs/performance.md, "Balance commitments"). Here a node is a slot of an arena (its hash,
 * and for a leaf its key and balance) with a reference count; a tree holds one reference to its root,
 * a branch one to each child, and `release()` returns the slots no tree can reach any more to the
 * arena, so the next update reuses them. A tree that is never released gives its slots back when it
 * is garbage-collected (a FinalizationRegistry), later.
 *
 * Reading a released tree is a bug: it throws.
 */
import {
  BALANCE_PROOF_SIBLINGS_MAX, BALANCE_UNITS_MAX, EMPTY_BALANCE_ROOT, balanceLeafInput, balanceNodeInput, compareKeys, keyBit, type BalanceEntry, type BalancePath,
} from './shared/balance-commitment.js';
import type { SyncHashFunction } from './shared/hash-steps.js';

const HASH_BYTES = 32;
/** No node: an empty subtree; also the end of a free list. */
const NONE = -1;
/** The `left` of a leaf slot (a branch's is a slot or NONE). */
const LEAF = -2;
const INITIAL_SLOTS = 1024;
/** Slots an arena may hold: Int32 indices, and 2^26 slots is under 3 GiB of node arrays. */
const SLOTS_MAX = 2 ** 26;

/** What an arena holds, for metrics and tests: nodes (leaves among them) and the bytes of its arrays. */
export type BalanceTreeMemory = { live_nodes: number; capacity_nodes: number; live_leaves: number; arrays_bytes: number };

/**
 * The slots of every tree that came from one `BalanceTree.empty()`. A node slot is 44 bytes: its hash,
 * `left` and `right`, and a reference count; a leaf's key and balance (40 bytes more) sit in a leaf
 * entry of their own, which the leaf slot's `right` names, because leaves are about 40 % of the nodes
 * and a key and balance in every slot cost 88 bytes a node (docs/performance.md, "The balance tree's
 * slots"). Free slots and free leaf entries are stacks threaded through `right` and `leaf_next`.
 */
class NodeArena {
  hashes = new Uint8Array(INITIAL_SLOTS * HASH_BYTES);
  /** A branch's left child (or NONE); LEAF for a leaf. */
  left = new Int32Array(INITIAL_SLOTS);
  /** A branch's right child (or NONE); a leaf's entry; a free slot's next free slot (or NONE). */
  right = new Int32Array(INITIAL_SLOTS);
  refs = new Uint32Array(INITIAL_SLOTS);
  /** By leaf entry, not slot: read them through keyOf, unitsOf, compareKey and keyBitOf. */
  private keys = new Uint8Array(INITIAL_SLOTS * HASH_BYTES);
  private units = new BigUint64Array(INITIAL_SLOTS);
  /** A free leaf entry's next free entry (or NONE). */
  private leaf_next = new Int32Array(INITIAL_SLOTS);
  private free_slot = NONE;
  private free_leaf = NONE;
  /** Slots, and leaf entries, below these were handed out at least once. */
  private used = 0;
  private leaves_used = 0;
  live = 0;
  live_leaves = 0;
  readonly hash: SyncHashFunction;
  /** Releases the root of a tree that was garbage-collected without `release()`. */
  readonly finalizer = new FinalizationRegistry<number>((root) => this.release(root));

  constructor(hash: SyncHashFunction) {
    this.hash = hash;
  }

  capacity(): number {
    return this.refs.length;
  }

  private leafCapacity(): number {
    return this.units.length;
  }

  arraysBytes(): number {
    return this.hashes.byteLength + this.left.byteLength + this.right.byteLength + this.refs.byteLength
      + this.keys.byteLength + this.units.byteLength + this.leaf_next.byteLength;
  }

  /** A leaf for a checked entry (see checkEntry): key of 32 bytes, units in 1..BALANCE_UNITS_MAX. */
  newLeaf(key: Uint8Array, units: bigint): number {
    const entry = this.allocateLeaf();
    const slot = this.allocate();
    this.left[slot] = LEAF;
    this.right[slot] = entry;
    this.keys.set(key, entry * HASH_BYTES);
    this.units[entry] = units;
    this.hashes.set(this.hash(balanceLeafInput(key, units)), slot * HASH_BYTES);
    return slot;
  }

  /** A branch over two subtrees (each NONE or a slot), holding a reference to each. */
  newBranch(left: number, right: number): number {
    const slot = this.allocate();
    this.left[slot] = left;
    this.right[slot] = right;
    this.retain(left);
    this.retain(right);
    this.hashes.set(this.hash(balanceNodeInput(this.hashView(left), this.hashView(right))), slot * HASH_BYTES);
    return slot;
  }

  isLeaf(slot: number): boolean {
    return this.left[slot] === LEAF;
  }

  /** A copy of the hash of `slot` (the empty subtree's for NONE). */
  hashOf(slot: number): Uint8Array {
    if (slot === NONE) return EMPTY_BALANCE_ROOT.slice();
    return this.hashes.slice(slot * HASH_BYTES, (slot + 1) * HASH_BYTES);
  }

  /** A copy of the key of leaf `slot`. */
  keyOf(slot: number): Uint8Array {
    const entry = this.right[slot] as number;
    return this.keys.slice(entry * HASH_BYTES, (entry + 1) * HASH_BYTES);
  }

  /** The balance of leaf `slot`. */
  unitsOf(slot: number): bigint {
    return this.units[this.right[slot] as number] as bigint;
  }

  /** compareKeys(key of leaf `slot`, `key`) without copying the stored key. */
  compareKey(slot: number, key: Uint8Array): number {
    const keys = this.keys;
    const base = (this.right[slot] as number) * HASH_BYTES;
    for (let index = 0; index < HASH_BYTES; index += 1) {
      const difference = (keys[base + index] as number) - (key[index] as number);
      if (difference !== 0) return difference;
    }
    return 0;
  }

  /** Bit `depth` of the key of leaf `slot`. */
  keyBitOf(slot: number, depth: number): number {
    return ((this.keys[(this.right[slot] as number) * HASH_BYTES + (depth >> 3)] as number) >> (7 - (depth & 7))) & 1;
  }

  retain(slot: number): void {
    if (slot !== NONE) this.refs[slot] = (this.refs[slot] as number) + 1;
  }

  /** Drops one reference to `slot`; a slot nothing refers to any more is freed, and so on down. */
  release(slot: number): void {
    const stack = [slot];
    while (stack.length > 0) {
      const current = stack.pop() as number;
      if (current === NONE) continue;
      const refs = this.refs[current] as number;
      if (refs === 0) throw new Error(`balance tree slot ${current} released more often than it was referenced`);
      this.refs[current] = refs - 1;
      if (refs > 1) continue;
      if (this.isLeaf(current)) this.freeLeaf(this.right[current] as number);
      else stack.push(this.left[current] as number, this.right[current] as number);
      this.free(current);
    }
  }

  /**
   * Room for `slots` nodes and `leaves` leaves in one growth each (a hint: past SLOTS_MAX, a growth
   * refuses). A build (a start reads every balance into an empty tree) would otherwise grow step by
   * step, each step copying the arrays while the old ones wait for V8 to collect them: building 1M
   * balances added 365 MiB to the peak RSS that way (88-byte slots then), 285 MiB sized at once.
   */
  reserve(slots: number, leaves: number): void {
    if (slots > this.capacity()) this.resizeNodes(Math.min(SLOTS_MAX, slots));
    if (leaves > this.leafCapacity()) this.resizeLeaves(Math.min(SLOTS_MAX, leaves));
  }

  /** The hash of `slot` in place: read it before the arena allocates again (growing replaces the arrays). */
  private hashView(slot: number): Uint8Array {
    return slot === NONE ? EMPTY_BALANCE_ROOT : this.hashes.subarray(slot * HASH_BYTES, (slot + 1) * HASH_BYTES);
  }

  private allocate(): number {
    let slot = this.free_slot;
    if (slot !== NONE) {
      this.free_slot = this.right[slot] as number;
    } else {
      if (this.used === this.capacity()) this.resizeNodes(grownLength(this.capacity()));
      slot = this.used;
      this.used += 1;
    }
    this.refs[slot] = 0;
    this.live += 1;
    return slot;
  }

  private allocateLeaf(): number {
    let entry = this.free_leaf;
    if (entry !== NONE) {
      this.free_leaf = this.leaf_next[entry] as number;
    } else {
      if (this.leaves_used === this.leafCapacity()) this.resizeLeaves(grownLength(this.leafCapacity()));
      entry = this.leaves_used;
      this.leaves_used += 1;
    }
    this.live_leaves += 1;
    return entry;
  }

  private free(slot: number): void {
    this.right[slot] = this.free_slot;
    this.free_slot = slot;
    this.live -= 1;
  }

  private freeLeaf(entry: number): void {
    this.leaf_next[entry] = this.free_leaf;
    this.free_leaf = entry;
    this.live_leaves -= 1;
  }

  private resizeNodes(slots: number): void {
    this.hashes = grown(this.hashes, slots * HASH_BYTES);
    this.left = grown(this.left, slots);
    this.right = grown(this.right, slots);
    this.refs = grown(this.refs, slots);
  }

  private resizeLeaves(leaves: number): void {
    this.keys = grown(this.keys, leaves * HASH_BYTES);
    this.units = grown(this.units, leaves);
    this.leaf_next = grown(this.leaf_next, leaves);
  }
}

/**
 * The next length of arrays of `length` entries: by half, not double. The arrays are outside V8's heap
 * but in the process's memory; a doubling leaves up to half of them unused, by half at most a third,
 * and a growth briefly holds the old arrays and the new together. What all growths copy stays under
 * twice the final size.
 */
function grownLength(length: number): number {
  if (length >= SLOTS_MAX) throw new RangeError(`the balance tree would need more than ${SLOTS_MAX} nodes`);
  return Math.min(SLOTS_MAX, length + Math.max(length >> 1, INITIAL_SLOTS));
}

/**
 * Nodes in a tree of `entries` random keys: the leaves and about entries / ln 2 branches (a binary trie
 * without path compression), 2.44 a balance as measured (bench/balance-tree.ts); a little more, so that
 * a build grows once.
 */
function buildNodesEstimate(entries: number): number {
  return Math.ceil(entries * 2.5) + INITIAL_SLOTS;
}

function grown<Array extends Uint8Array | Int32Array | Uint32Array | BigUint64Array>(array: Array, length: number): Array {
  const bigger = new (array.constructor as new (length: number) => Array)(length);
  bigger.set(array as never);
  return bigger;
}

/** An entry to merge (a change) or a leaf slot kept as it is. */
type Item = BalanceEntry | number;

/**
 * A balance state: `update` returns a new tree sharing every untouched node with this one. Call
 * `release()` on a tree no one will read again, so its slots are reused.
 */
export class BalanceTree {
  private readonly arena: NodeArena;
  private readonly root: number;
  private released = false;

  private constructor(arena: NodeArena, root: number) {
    this.arena = arena;
    this.root = root;
    arena.retain(root);
    if (root !== NONE) arena.finalizer.register(this, root, this);
  }

  static empty(hash: SyncHashFunction): BalanceTree {
    return new BalanceTree(new NodeArena(hash), NONE);
  }

  rootHash(): Uint8Array {
    return this.arena.hashOf(this.readable());
  }

  /** Sets each entry's balance (0 removes it); a key given twice takes its last value. O(touched paths) hashes. Always a new tree: release each one. */
  update(entries: readonly BalanceEntry[]): BalanceTree {
    const root = this.readable();
    const changes = uniqueSorted(entries);
    if (changes.length === 0) return new BalanceTree(this.arena, root);
    if (root === NONE) this.arena.reserve(this.arena.live + buildNodesEstimate(changes.length), this.arena.live_leaves + changes.length);
    return new BalanceTree(this.arena, this.updateNode(root, 0, changes, 0, changes.length));
  }

  /** The balance of `key` (0 when absent). */
  get(key: Uint8Array): bigint {
    const arena = this.arena;
    let node = this.readable();
    for (let depth = 0; node !== NONE && !arena.isLeaf(node); depth += 1) node = keyBit(key, depth) === 0 ? arena.left[node] as number : arena.right[node] as number;
    return node !== NONE && arena.compareKey(node, key) === 0 ? arena.unitsOf(node) : 0n;
  }

  prove(key: Uint8Array): BalancePath {
    const arena = this.arena;
    const siblings: Uint8Array[] = [];
    let node = this.readable();
    for (let depth = 0; node !== NONE && !arena.isLeaf(node); depth += 1) {
      const right = keyBit(key, depth) === 1;
      const left_child = arena.left[node] as number;
      const right_child = arena.right[node] as number;
      siblings.push(arena.hashOf(right ? left_child : right_child));
      node = right ? right_child : left_child;
    }
    return { siblings, leaf: node === NONE ? null : { key: arena.keyOf(node), units: arena.unitsOf(node) } };
  }

  /** Gives this tree's nodes that no other tree shares back to the arena. Idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.arena.finalizer.unregister(this);
    this.arena.release(this.root);
  }

  /** The nodes and leaves held by every tree of this arena, the arena's size in nodes, and its arrays' bytes. */
  memory(): BalanceTreeMemory {
    const arena = this.arena;
    return { live_nodes: arena.live, capacity_nodes: arena.capacity(), live_leaves: arena.live_leaves, arrays_bytes: arena.arraysBytes() };
  }

  private readable(): number {
    if (this.released) throw new Error('a released balance tree was read');
    return this.root;
  }

  private updateNode(node: number, depth: number, changes: readonly BalanceEntry[], start: number, end: number): number {
    if (start === end) return node;
    const arena = this.arena;
    if (node === NONE || arena.isLeaf(node)) return this.build(this.mergeLeaf(node, changes, start, end), depth);
    const middle = splitAt(start, end, (index) => keyBit((changes[index] as BalanceEntry).key, depth));
    const left = this.updateNode(arena.left[node] as number, depth + 1, changes, start, middle);
    const right = this.updateNode(arena.right[node] as number, depth + 1, changes, middle, end);
    return this.branch(left, right);
  }

  /** The subtree at `depth` holding exactly `items` (sorted, distinct, non-zero). */
  private build(items: readonly Item[], depth: number): number {
    if (items.length === 0) return NONE;
    if (items.length === 1) return this.leaf(items[0] as Item);
    if (depth >= BALANCE_PROOF_SIBLINGS_MAX) throw new Error('two distinct balance keys cannot share every bit');
    const middle = splitAt(0, items.length, (index) => this.itemBit(items[index] as Item, depth));
    return this.branch(this.build(items.slice(0, middle), depth + 1), this.build(items.slice(middle), depth + 1));
  }

  private itemBit(item: Item, depth: number): number {
    return typeof item === 'number' ? this.arena.keyBitOf(item, depth) : keyBit(item.key, depth);
  }

  private leaf(item: Item): number {
    return typeof item === 'number' ? item : this.arena.newLeaf(item.key, item.units);
  }

  /** A node over two subtrees, collapsed when it would hold one leaf or none. */
  private branch(left: number, right: number): number {
    const arena = this.arena;
    if (left === NONE && (right === NONE || arena.isLeaf(right))) return right;
    if (right === NONE && left !== NONE && arena.isLeaf(left)) return left;
    return arena.newBranch(left, right);
  }

  /** The non-zero items of a subtree that held leaf `leaf` (or nothing) once `changes[start..end)` apply. */
  private mergeLeaf(leaf: number, changes: readonly BalanceEntry[], start: number, end: number): Item[] {
    const arena = this.arena;
    const merged: Item[] = [];
    let kept = leaf;
    for (let index = start; index < end; index += 1) {
      const change = changes[index] as BalanceEntry;
      if (kept !== NONE && arena.compareKey(kept, change.key) < 0) {
        merged.push(kept);
        kept = NONE;
      }
      if (kept !== NONE && arena.compareKey(kept, change.key) === 0) {
        if (change.units === arena.unitsOf(kept)) merged.push(kept);
        else if (change.units !== 0n) merged.push(change);
        kept = NONE;
        continue;
      }
      if (change.units !== 0n) merged.push(change);
    }
    if (kept !== NONE) merged.push(kept);
    return merged;
  }
}

export function balanceRootHex(tree: BalanceTree): string {
  let text = '0x';
  for (const byte of tree.rootHash()) text += byte.toString(16).padStart(2, '0');
  return text;
}

/** Refuses an entry no leaf can hold, before an update allocates anything (a throw midway would strand slots). */
function checkEntry(entry: BalanceEntry): void {
  if (entry.key.length !== HASH_BYTES) throw new RangeError('a balance key is 32 bytes');
  if (entry.units < 0n || entry.units > BALANCE_UNITS_MAX) throw new RangeError(`balance ${entry.units} outside 0..${BALANCE_UNITS_MAX}`);
}

/** Entries sorted by key, the last value of each key kept. */
function uniqueSorted(entries: readonly BalanceEntry[]): BalanceEntry[] {
  for (const entry of entries) checkEntry(entry);
  const sorted = entries.map((entry, index) => ({ entry, index }));
  sorted.sort((a, b) => compareKeys(a.entry.key, b.entry.key) || a.index - b.index);
  const unique: BalanceEntry[] = [];
  for (const { entry } of sorted) {
    const last = unique[unique.length - 1];
    if (last !== undefined && compareKeys(last.key, entry.key) === 0) unique[unique.length - 1] = entry;
    else unique.push(entry);
  }
  return unique;
}

/** The first index in start..end whose bit is 1 (`bitAt`, over keys sorted so that the 0s come first). */
function splitAt(start: number, end: number, bitAt: (index: number) => number): number {
  let low = start;
  let high = end;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (bitAt(middle) === 0) low = middle + 1;
    else high = middle;
  }
  return low;
}
