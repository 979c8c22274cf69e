// Property tests of the balance commitment: every key proves its balance, absent keys prove 0, an update equals a rebuild, tampering fails.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  balanceEntryJson, balanceKey, checkBalanceEntry, checkBalanceEntryAsync, type BalanceEntry,
} from '../../../src/domain/shared/balance-commitment.js';
import { BalanceTree, balanceRootHex } from '../../../src/domain/balance-tree.js';
import { sha256 } from '../../../src/domain/hashing.js';

const TOKENS = ['TAB', 'USDG'] as const;
const users = fc.constantFrom(...Array.from({ length: 40 }, (_, index) => `user-${index}`));
const change = fc.record({ user_id: users, token: fc.constantFrom(...TOKENS), units: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 9_223_372_036_854_775_807n })) });
const blocks = fc.array(fc.array(change, { maxLength: 30 }), { minLength: 1, maxLength: 8 });

function entries(changes: ReadonlyArray<{ user_id: string; token: string; units: bigint }>): BalanceEntry[] {
  return changes.map((item) => ({ key: balanceKey(sha256, item.user_id, item.token), units: item.units }));
}

/** The state a list of blocks leaves: the last value of each key. */
function finalState(history: ReadonlyArray<ReadonlyArray<{ user_id: string; token: string; units: bigint }>>): Map<string, { user_id: string; token: string; units: bigint }> {
  const state = new Map<string, { user_id: string; token: string; units: bigint }>();
  for (const block of history) for (const item of block) state.set(`${item.user_id}\u0000${item.token}`, item);
  return state;
}

describe('balance commitment', () => {
  it('the empty tree has the zero root, and a tree of only zero balances is empty', () => {
    const empty = BalanceTree.empty(sha256);
    expect(balanceRootHex(empty)).toBe(`0x${'0'.repeat(64)}`);
    expect(balanceRootHex(empty.update(entries([{ user_id: 'a', token: 'TAB', units: 0n }])))).toBe(balanceRootHex(empty));
  });

  it('updating block by block gives the root of building the final state at once (one state, one root)', () => {
    fc.assert(fc.property(blocks, (history) => {
      let tree = BalanceTree.empty(sha256);
      for (const block of history) tree = tree.update(entries(block));
      const rebuilt = BalanceTree.empty(sha256).update(entries([...finalState(history).values()]));
      expect(balanceRootHex(tree)).toBe(balanceRootHex(rebuilt));
    }), { numRuns: 200 });
  });

  it('every key proves its balance and every absent key proves 0, against the root', () => {
    fc.assert(fc.property(blocks, (history) => {
      let tree = BalanceTree.empty(sha256);
      for (const block of history) tree = tree.update(entries(block));
      const root = balanceRootHex(tree);
      const state = finalState(history);
      for (let index = 0; index < 40; index += 1) {
        for (const token of TOKENS) {
          const user_id = `user-${index}`;
          const key = balanceKey(sha256, user_id, token);
          const entry = balanceEntryJson(token, key, tree.prove(key));
          const expected = state.get(`${user_id}\u0000${token}`)?.units ?? 0n;
          expect(checkBalanceEntry(sha256, user_id, entry, root)).toEqual({ ok: true, units: expected });
          expect(tree.get(key)).toBe(expected);
        }
      }
    }), { numRuns: 100 });
  });

  it('a tampered balance, leaf, sibling, key or root fails', () => {
    fc.assert(fc.property(blocks, fc.nat(), (history, pick) => {
      let tree = BalanceTree.empty(sha256);
      for (const block of history) tree = tree.update(entries(block));
      const root = balanceRootHex(tree);
      const user_id = `user-${pick % 40}`;
      const key = balanceKey(sha256, user_id, 'TAB');
      const entry = balanceEntryJson('TAB', key, tree.prove(key));
      const lie = (BigInt(entry.units) + 1n).toString();
      expect(checkBalanceEntry(sha256, user_id, { ...entry, units: lie }, root).ok).toBe(false);
      if (entry.leaf !== null) {
        expect(checkBalanceEntry(sha256, user_id, { ...entry, units: lie, leaf: { ...entry.leaf, units: lie } }, root).ok).toBe(false);
        // Dropping the leaf claims absence: the path then leads elsewhere.
        expect(checkBalanceEntry(sha256, user_id, { ...entry, units: '0', leaf: null }, root).ok).toBe(false);
      }
      if (entry.siblings.length > 0) {
        const siblings = [...entry.siblings];
        siblings[pick % siblings.length] = `0x${'ab'.repeat(32)}`;
        expect(checkBalanceEntry(sha256, user_id, { ...entry, siblings }, root).ok).toBe(false);
      }
      expect(checkBalanceEntry(sha256, `${user_id}x`, entry, root).ok).toBe(false);
      expect(checkBalanceEntry(sha256, user_id, entry, `0x${'cd'.repeat(32)}`).ok).toBe(false);
    }), { numRuns: 200 });
  });

  it('the asynchronous check (WebCrypto-style hash) agrees with the synchronous one', async () => {
    const tree = BalanceTree.empty(sha256).update(entries([{ user_id: 'alice', token: 'TAB', units: 5n }, { user_id: 'bob', token: 'USDG', units: 7n }]));
    const key = balanceKey(sha256, 'alice', 'TAB');
    const entry = balanceEntryJson('TAB', key, tree.prove(key));
    await expect(checkBalanceEntryAsync(async (bytes) => sha256(bytes), 'alice', entry, balanceRootHex(tree))).resolves.toEqual({ ok: true, units: 5n });
  });

  it('a malformed entry is refused with a reason, never thrown', () => {
    const root = `0x${'0'.repeat(64)}`;
    const bad = { token: 'TAB', key: 'nope', units: '1', leaf: null, siblings: [] };
    const result = checkBalanceEntry(sha256, 'alice', bad, root);
    expect(result).toMatchObject({ ok: false });
  });
});
