// The balance tree in its arena: roots equal an independent recursive definition, released trees give every slot back, shared nodes survive.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { balanceKey, balanceLeafInput, balanceNodeInput, compareKeys, keyBit, type BalanceEntry } from '../../src/domain/shared/balance-commitment.js';
import { BalanceTree, balanceRootHex } from '../../src/domain/balance-tree.js';
import { sha256 } from '../../src/domain/hashing.js';

const users = fc.constantFrom(...Array.from({ length: 60 }, (_, index) => `user-${index}`));
const change = fc.record({ user_id: users, token: fc.constantFrom('TAB', 'USDG'), units: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 1_000_000n })) });
const blocks = fc.array(fc.array(change, { maxLength: 40 }), { minLength: 1, maxLength: 10 });

type Change = { user_id: string; token: string; units: bigint };

function entries(changes: readonly Change[]): BalanceEntry[] {
  return changes.map((item) => ({ key: balanceKey(sha256, item.user_id, item.token), units: item.units }));
}

/** The definition of docs/api.md "Balance proofs", written out recursively: the root and the number of nodes of a state. */
function reference(state: ReadonlyMap<string, BalanceEntry>): { root: string; nodes: number; leaves: number } {
  const leaves = [...state.values()].filter((entry) => entry.units !== 0n).sort((a, b) => compareKeys(a.key, b.key));
  function subtree(items: readonly BalanceEntry[], depth: number): { hash: Uint8Array; nodes: number } {
    if (items.length === 0) return { hash: new Uint8Array(32), nodes: 0 };
    if (items.length === 1) {
      const leaf = items[0] as BalanceEntry;
      return { hash: sha256(balanceLeafInput(leaf.key, leaf.units)), nodes: 1 };
    }
    const left = subtree(items.filter((item) => keyBit(item.key, depth) === 0), depth + 1);
    const right = subtree(items.filter((item) => keyBit(item.key, depth) === 1), depth + 1);
    return { hash: sha256(balanceNodeInput(left.hash, right.hash)), nodes: 1 + left.nodes + right.nodes };
  }
  const { hash, nodes } = subtree(leaves, 0);
  return { root: `0x${Buffer.from(hash).toString('hex')}`, nodes, leaves: leaves.length };
}

function apply(state: Map<string, BalanceEntry>, block: readonly BalanceEntry[]): void {
  for (const entry of block) state.set(Buffer.from(entry.key).toString('hex'), entry);
}

describe('the balance tree', () => {
  it('gives the recursive definition\'s root after every block, and holds exactly its nodes once older trees are released', () => {
    fc.assert(fc.property(blocks, (history) => {
      const state = new Map<string, BalanceEntry>();
      let tree = BalanceTree.empty(sha256);
      for (const block of history) {
        const changes = entries(block);
        apply(state, changes);
        const next = tree.update(changes);
        tree.release();
        tree = next;
        const expected = reference(state);
        expect(balanceRootHex(tree)).toBe(expected.root);
        expect(tree.memory().live_nodes).toBe(expected.nodes);
        expect(tree.memory().live_leaves).toBe(expected.leaves);
      }
      tree.release();
      expect(tree.memory().live_nodes).toBe(0);
      expect(tree.memory().live_leaves).toBe(0);
    }), { numRuns: 200 });
  });

  it('a tree kept while newer ones are made and released still proves its own state', () => {
    fc.assert(fc.property(blocks, blocks, (before, after) => {
      let tree = BalanceTree.empty(sha256);
      for (const block of before) {
        const next = tree.update(entries(block));
        tree.release();
        tree = next;
      }
      const kept = tree;
      const kept_root = balanceRootHex(kept);
      const kept_balances = Array.from({ length: 60 }, (_, index) => kept.get(balanceKey(sha256, `user-${index}`, 'TAB')));
      let newer = kept.update([]);
      for (const block of after) {
        const next = newer.update(entries(block));
        newer.release();
        newer = next;
      }
      expect(balanceRootHex(kept)).toBe(kept_root);
      expect(Array.from({ length: 60 }, (_, index) => kept.get(balanceKey(sha256, `user-${index}`, 'TAB')))).toEqual(kept_balances);
      newer.release();
      kept.release();
      expect(kept.memory().live_nodes).toBe(0);
    }), { numRuns: 100 });
  });

  it('refuses to be read once released, and a bad entry before it allocates anything', () => {
    const tree = BalanceTree.empty(sha256).update(entries([{ user_id: 'alice', token: 'TAB', units: 5n }]));
    const nodes = tree.memory().live_nodes;
    expect(() => tree.update([{ key: new Uint8Array(31), units: 1n }])).toThrow(RangeError);
    expect(() => tree.update([...entries([{ user_id: 'bob', token: 'TAB', units: 1n }]), { key: new Uint8Array(32), units: -1n }])).toThrow(RangeError);
    expect(tree.memory().live_nodes).toBe(nodes);
    tree.release();
    tree.release();
    expect(() => tree.rootHash()).toThrow(/released/);
    expect(() => tree.get(new Uint8Array(32))).toThrow(/released/);
  });

  it('reserves a build\'s nodes at once: a tree built from empty holds few more slots than nodes', () => {
    // 4,300 balances are about 10,500 nodes (2.44 a balance): growing step by step by half would end at 15,552 slots.
    const tree = BalanceTree.empty(sha256).update(Array.from({ length: 4_300 }, (_, index) => ({ key: balanceKey(sha256, `account-${index}`, 'TAB'), units: 1n })));
    const { live_nodes, capacity_nodes, live_leaves, arrays_bytes } = tree.memory();
    expect(live_nodes).toBeGreaterThan(10_368);
    expect(capacity_nodes).toBeGreaterThanOrEqual(live_nodes);
    expect(capacity_nodes).toBeLessThanOrEqual(1.2 * live_nodes);
    // A node is 44 bytes (hash, children, reference count); a leaf's key and balance 44 more, reserved for exactly the build's leaves.
    expect(live_leaves).toBe(4_300);
    expect(arrays_bytes).toBe(44 * capacity_nodes + 44 * 4_300);
  });

  it('grows its arrays by half: a tree grown past a power of two of nodes leaves at most a third of them unused', () => {
    // One balance, then ten at a time to 1,750 (no build to reserve for): a little over 4,096 nodes, where a doubling would hold 8,192 slots.
    const key = (index: number) => balanceKey(sha256, `account-${index}`, 'TAB');
    let tree = BalanceTree.empty(sha256).update([{ key: key(0), units: 1n }]);
    for (let first = 1; first < 1_750; first += 10) {
      const next = tree.update(Array.from({ length: Math.min(10, 1_750 - first) }, (_, offset) => ({ key: key(first + offset), units: 1n })));
      tree.release();
      tree = next;
    }
    const { live_nodes, capacity_nodes } = tree.memory();
    expect(live_nodes).toBeGreaterThan(4_096);
    expect(live_nodes).toBeLessThan(4_600);
    expect(capacity_nodes).toBeLessThanOrEqual(1.5 * live_nodes);
  });

  it('reuses the slots of released trees: a long run of updates stays within one and a half times the live nodes', () => {
    const keys = Array.from({ length: 2_000 }, (_, index) => balanceKey(sha256, `account-${index}`, 'TAB'));
    const state = new Map<string, BalanceEntry>();
    const first = keys.map((key) => ({ key, units: 1n }));
    apply(state, first);
    let tree = BalanceTree.empty(sha256).update(first);
    const capacity_at_start = tree.memory().capacity_nodes;
    for (let round = 0; round < 300; round += 1) {
      const block = Array.from({ length: 50 }, (_, index) => ({ key: keys[(round * 53 + index * 37) % keys.length] as Uint8Array, units: BigInt(round + 2) }));
      apply(state, block);
      const next = tree.update(block);
      tree.release();
      tree = next;
    }
    // 300 blocks made about 300 x 50 x 11 nodes; the arena holds the live ones and grew by half at most once.
    const { live_nodes, capacity_nodes, live_leaves, arrays_bytes } = tree.memory();
    expect(live_nodes).toBe(reference(state).nodes);
    expect(capacity_nodes).toBeLessThanOrEqual(1.5 * capacity_at_start);
    expect(capacity_nodes).toBeLessThan(1.5 * live_nodes + 1024);
    // The leaf entries too: 15,000 new leaves in all, in room for the 2,000 and one growth (44 bytes each).
    expect(live_leaves).toBe(2_000);
    expect(arrays_bytes - 44 * capacity_nodes).toBeLessThanOrEqual(44 * (2_000 + 1_024));
  });
});
