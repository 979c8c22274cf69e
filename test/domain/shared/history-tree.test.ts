import { describe, expect, it } from 'vitest';
import { runHashSteps } from '../../../src/domain/shared/hash-steps.js';
import { sha256 } from '../../../src/domain/hashing.js';
import {
  appendSiblings,
  appendSteps,
  compositeSteps,
  compositesSteps,
  consistencyPlan,
  inclusionPlan,
  nodeKeyId,
  nodesNeeded,
  rootPlan,
  verifyConsistencySteps,
} from '../../../src/domain/shared/history-tree.js';
import { inclusionProof, merkleRoot, rootFromInclusionProof } from '../../../src/domain/shared/merkle.js';

/** Builds the stored nodes of a history by appending, as the sealer does. */
function buildHistory(count: number): { leaves: Uint8Array[]; nodes: Map<string, Uint8Array> } {
  const leaves: Uint8Array[] = [];
  const nodes = new Map<string, Uint8Array>();
  for (let index = 0; index < count; index += 1) {
    const leaf = sha256(new Uint8Array([index & 255, index >> 8]));
    leaves.push(leaf);
    const siblings = appendSiblings(index).map((key) => nodes.get(nodeKeyId(key)) as Uint8Array);
    for (const node of runHashSteps(appendSteps(index, leaf, siblings), sha256)) nodes.set(nodeKeyId(node), node.hash);
  }
  return { leaves, nodes };
}

const { leaves, nodes } = buildHistory(70);
const root = (size: number) => runHashSteps(compositeSteps(rootPlan(size), nodes), sha256);

describe('history tree', () => {
  it('has the RFC 6962 root of every prefix', () => {
    for (let size = 1; size <= 70; size += 1) expect(root(size)).toEqual(merkleRoot(sha256, leaves.slice(0, size)));
  });

  it('gives the RFC 6962 inclusion proof of every leaf, which verifies', () => {
    for (const size of [1, 2, 3, 7, 8, 9, 33, 70]) {
      for (let index = 0; index < size; index += 1) {
        const proof = runHashSteps(compositesSteps(inclusionPlan(index, size), nodes), sha256);
        expect(proof).toEqual(inclusionProof(sha256, leaves.slice(0, size), index));
        expect(rootFromInclusionProof(sha256, leaves[index] as Uint8Array, index, size, proof)).toEqual(root(size));
      }
    }
  });

  it('gives consistency proofs that verify, and rejects tampered ones', () => {
    for (let to = 1; to <= 40; to += 1) {
      for (let from = 1; from <= to; from += 1) {
        const proof = runHashSteps(compositesSteps(consistencyPlan(from, to), nodes), sha256);
        expect([from, to, runHashSteps(verifyConsistencySteps(from, to, root(from), root(to), proof), sha256)]).toEqual([from, to, true]);
        expect(proof.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(to)) + 1);
        if (from < to) {
          const wrong = Uint8Array.from(root(to));
          wrong[0] = (wrong[0] ?? 0) ^ 1;
          expect(runHashSteps(verifyConsistencySteps(from, to, root(from), wrong, proof), sha256)).toBe(false);
          const forked = Uint8Array.from(root(from));
          forked[5] = (forked[5] ?? 0) ^ 1;
          expect(runHashSteps(verifyConsistencySteps(from, to, forked, root(to), proof), sha256)).toBe(false);
          if (proof.length > 0) {
            expect(runHashSteps(verifyConsistencySteps(from, to, root(from), root(to), proof.slice(1)), sha256)).toBe(false);
          }
        }
      }
    }
  });

  it('reads O(log n) stored nodes for any proof', () => {
    const size = 4_000_000;
    for (const index of [0, 3, 1_234_567, size - 1]) expect(nodesNeeded(inclusionPlan(index, size)).length).toBeLessThanOrEqual(2 * 23);
    expect(nodesNeeded(consistencyPlan(10, size)).length).toBeLessThanOrEqual(3 * 23);
    expect(nodesNeeded([rootPlan(size)]).length).toBeLessThanOrEqual(23);
  });
});
