/**
 * RFC 6962 Merkle Tree Hash and inclusion proofs against published test vectors.
 *
 * Source of the vectors: repository transparency-dev/merkle (the Go Merkle library of Certificate
 * Transparency / Trillian):
 * - testonly/constants.go: LeafInputs() (the 8 leaves), NodeHashes() (every complete subtree) and
 *   RootHashes() (the root for every tree size 0..8);
 * - proof/verify_test.go: `inclusionProofs` (leaf numbers there are 1-based: {leaf, size, proof}) and
 *   corruptInclusionProof(), whose tampering cases are mirrored below.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToHex, hexToBytes } from '../../../src/domain/shared/hex.js';
import { bytesEqual, inclusionProof, leafHash, merkleRoot, nodeHash, rootFromInclusionProof } from '../../../src/domain/shared/merkle.js';
import { sha256 } from '../../../src/domain/hashing.js';

const h = (hex: string): Uint8Array => hexToBytes(hex);
const hex = (bytes: Uint8Array): string => bytesToHex(bytes);

/** testonly/constants.go LeafInputs() */
const LEAVES: Uint8Array[] = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map(h);

/** testonly/constants.go RootHashes(): index = tree size. */
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

/** testonly/constants.go NodeHashes(): [level][index] of every complete subtree. */
const NODES = [
  [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
    '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
    '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
    'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
    'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
    '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1',
  ],
  [
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
    '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
    'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
  ],
  [
    'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
  ],
  ['5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328'],
];

/** proof/verify_test.go inclusionProofs, converted to 0-based leaf indices. */
const PUBLISHED_PROOFS: Array<{ index: number; size: number; path: string[] }> = [
  { index: 0, size: 1, path: [] },
  {
    index: 0,
    size: 8,
    path: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    index: 5,
    size: 8,
    path: [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  { index: 2, size: 3, path: ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'] },
  {
    index: 1,
    size: 5,
    path: [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  },
];

// An independent reference, written straight from RFC 6962 section 2.1 (recursive, split at the
// largest power of two smaller than n), with its own SHA-256 binding.
function refHash(...parts: Uint8Array[]): Uint8Array {
  const hasher = createHash('sha256');
  for (const part of parts) hasher.update(part);
  return hasher.digest();
}
function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}
function refMth(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return refHash(new Uint8Array(0));
  if (leaves.length === 1) return refHash(Uint8Array.of(0), leaves[0] as Uint8Array);
  const k = largestPowerOfTwoBelow(leaves.length);
  return refHash(Uint8Array.of(1), refMth(leaves.slice(0, k)), refMth(leaves.slice(k)));
}
function refPath(m: number, leaves: readonly Uint8Array[]): Uint8Array[] {
  if (leaves.length <= 1) return [];
  const k = largestPowerOfTwoBelow(leaves.length);
  if (m < k) return [...refPath(m, leaves.slice(0, k)), refMth(leaves.slice(k))];
  return [...refPath(m - k, leaves.slice(k)), refMth(leaves.slice(0, k))];
}

function verifies(leaf: Uint8Array, index: number, size: number, path: readonly Uint8Array[], root: Uint8Array): boolean {
  const computed = rootFromInclusionProof(sha256, leaf, index, size, path);
  return computed !== null && bytesEqual(computed, root);
}

describe('RFC 6962 Merkle Tree Hash (transparency-dev/merkle testonly vectors)', () => {
  it('the empty tree hashes to SHA-256 of nothing', () => {
    expect(hex(merkleRoot(sha256, []))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it.each(ROOTS.map((root, size) => [size, root] as const))('the root of the first %i leaves is %s', (size, root) => {
    expect(hex(merkleRoot(sha256, LEAVES.slice(0, size)))).toBe(root);
  });

  it('leaf hashes are H(0x00 || leaf) and match the published level-0 node hashes', () => {
    LEAVES.forEach((leaf, index) => {
      expect(hex(leafHash(sha256, leaf))).toBe(NODES[0]?.[index]);
    });
  });

  it('node hashes are H(0x01 || left || right) and match every published complete subtree', () => {
    for (let level = 1; level < NODES.length; level += 1) {
      const below = NODES[level - 1] as string[];
      (NODES[level] as string[]).forEach((expected, index) => {
        const left = h(below[2 * index] as string);
        const right = h(below[2 * index + 1] as string);
        expect(hex(nodeHash(sha256, left, right))).toBe(expected);
      });
    }
  });

  it('the independent reference agrees with the published roots (so it can judge sizes beyond 8)', () => {
    ROOTS.forEach((root, size) => expect(hex(refMth(LEAVES.slice(0, size)))).toBe(root));
  });

  it('does not hash a leaf as if it were a node (second-preimage resistance of the prefixes)', () => {
    // A tree of two leaves must not equal a one-leaf tree whose leaf is the concatenated child hashes.
    const two = merkleRoot(sha256, [LEAVES[1] as Uint8Array, LEAVES[2] as Uint8Array]);
    const forged = new Uint8Array(64);
    forged.set(h(NODES[0]?.[1] as string), 0);
    forged.set(h(NODES[0]?.[2] as string), 32);
    expect(hex(merkleRoot(sha256, [forged]))).not.toBe(hex(two));
  });
});

describe('RFC 6962 inclusion proofs (transparency-dev/merkle proof/verify_test.go vectors)', () => {
  it.each(PUBLISHED_PROOFS)('PATH($index, D[$size]) is the published proof', ({ index, size, path }) => {
    expect(inclusionProof(sha256, LEAVES.slice(0, size), index).map(hex)).toEqual(path);
  });

  it.each(PUBLISHED_PROOFS)('the published proof for leaf $index of $size verifies to the published root', ({ index, size, path }) => {
    const root = h(ROOTS[size] as string);
    expect(verifies(LEAVES[index] as Uint8Array, index, size, path.map(h), root)).toBe(true);
  });

  const pairs: Array<[number, number]> = [];
  for (let size = 1; size <= 8; size += 1) for (let index = 0; index < size; index += 1) pairs.push([index, size]);

  it.each(pairs)('leaf %i of a tree of %i: proof equals RFC 6962 PATH and verifies to the published root', (index, size) => {
    const leaves = LEAVES.slice(0, size);
    const path = inclusionProof(sha256, leaves, index);
    expect(path.map(hex)).toEqual(refPath(index, leaves).map(hex));
    // Every element of an 8-leaf tree's proof is a complete subtree, so it must be a published node hash.
    if (size === 8) for (const element of path) expect(NODES.flat()).toContain(hex(element));
    const root = h(ROOTS[size] as string);
    const computed = rootFromInclusionProof(sha256, LEAVES[index] as Uint8Array, index, size, path);
    expect(computed === null ? null : hex(computed)).toBe(ROOTS[size]);
  });

  it.each(pairs)('leaf %i of a tree of %i: every tampering of the proof is rejected', (index, size) => {
    const leaves = LEAVES.slice(0, size);
    const leaf = LEAVES[index] as Uint8Array;
    const path = inclusionProof(sha256, leaves, index);
    const root = h(ROOTS[size] as string);
    const someHash = h('abacaba000000000000000000000000000000000000000000060061e00123456');
    expect(verifies(leaf, index, size, path, root)).toBe(true);

    const probes: Array<[string, () => boolean]> = [
      ['index - 1', () => verifies(leaf, index - 1, size, path, root)],
      ['index + 1', () => verifies(leaf, index + 1, size, path, root)],
      ['index ^ 2', () => verifies(leaf, index ^ 2, size, path, root)],
      ['size * 2', () => verifies(leaf, index, size * 2, path, root)],
      ['size / 2', () => verifies(leaf, index, Math.floor(size / 2), path, root)],
      ['wrong leaf', () => verifies(new TextEncoder().encode('WrongLeaf'), index, size, path, root)],
      ['empty-tree root', () => verifies(leaf, index, size, path, h(ROOTS[0] as string))],
      ['random root', () => verifies(leaf, index, size, path, someHash)],
      ['trailing garbage', () => verifies(leaf, index, size, [...path, new Uint8Array(0)], root)],
      ['trailing root', () => verifies(leaf, index, size, [...path, root], root)],
      ['preceding garbage', () => verifies(leaf, index, size, [new Uint8Array(0), ...path], root)],
      ['preceding root', () => verifies(leaf, index, size, [root, ...path], root)],
    ];
    path.forEach((_, position) => {
      probes.push([
        `proof[${position}] bit 3 flipped`,
        () => verifies(leaf, index, size, path.map((element, at) => (at === position ? flipBit(element, 0, 8) : element)), root),
      ]);
    });
    if (path.length > 0) probes.push(['removed last element', () => verifies(leaf, index, size, path.slice(0, -1), root)]);
    if (path.length > 1) {
      probes.push(['inserted element', () => verifies(leaf, index, size, [path[0] as Uint8Array, someHash, ...path.slice(1)], root)]);
      probes.push(['swapped elements', () => verifies(leaf, index, size, [path[1] as Uint8Array, path[0] as Uint8Array, ...path.slice(2)], root)]);
    }
    const accepted = probes.filter(([, probe]) => probe()).map(([label]) => label);
    expect(accepted).toEqual([]);
  });

  it('rejects indices outside the tree and empty trees', () => {
    const leaf = LEAVES[0] as Uint8Array;
    expect(rootFromInclusionProof(sha256, leaf, 0, 0, [])).toBeNull();
    expect(rootFromInclusionProof(sha256, leaf, 1, 1, [])).toBeNull();
    expect(rootFromInclusionProof(sha256, leaf, -1, 4, [])).toBeNull();
    expect(rootFromInclusionProof(sha256, leaf, 0.5, 4, [])).toBeNull();
    expect(rootFromInclusionProof(sha256, leaf, 0, Number.NaN, [])).toBeNull();
    expect(() => inclusionProof(sha256, LEAVES, 8)).toThrow(RangeError);
    expect(() => inclusionProof(sha256, LEAVES, -1)).toThrow(RangeError);
    expect(() => inclusionProof(sha256, [], 0)).toThrow(RangeError);
  });

  it('a one-leaf tree has an empty proof and its root is the leaf hash', () => {
    const root = rootFromInclusionProof(sha256, LEAVES[3] as Uint8Array, 0, 1, []);
    expect(root === null ? null : hex(root)).toBe(NODES[0]?.[3]);
    expect(rootFromInclusionProof(sha256, LEAVES[3] as Uint8Array, 0, 1, [h(ROOTS[1] as string)])).toBeNull();
  });
});

function flipBit(bytes: Uint8Array, at: number, mask: number): Uint8Array {
  const copy = new Uint8Array(bytes);
  copy[at] = (copy[at] as number) ^ mask;
  return copy;
}

describe('Merkle properties on random trees of 1..300 leaves', () => {
  // Sizes uniform over 1..300 (fast-check's default sizing would keep arrays to about ten elements).
  const leavesArb = fc
    .integer({ min: 1, max: 300 })
    .chain((size) => fc.uniqueArray(fc.uint8Array({ minLength: 0, maxLength: 40 }), { minLength: size, maxLength: size, selector: (leaf) => bytesToHex(leaf) }));

  it('merkleRoot equals the recursive RFC 6962 definition', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 300 }).chain((size) => fc.array(fc.uint8Array({ maxLength: 8 }), { minLength: size, maxLength: size })), (leaves) => {
        expect(hex(merkleRoot(sha256, leaves))).toBe(hex(refMth(leaves)));
      }),
      { numRuns: 40 },
    );
  });

  it('every proof verifies to the root, and flipping any byte of any path element fails', () => {
    fc.assert(
      fc.property(
        leavesArb,
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 0, max: 31 }),
        fc.integer({ min: 1, max: 255 }),
        (leaves, pickIndex, pickElement, byte, mask) => {
          const root = merkleRoot(sha256, leaves);
          leaves.forEach((leaf, index) => {
            const path = inclusionProof(sha256, leaves, index);
            expect(verifies(leaf, index, leaves.length, path, root)).toBe(true);
          });
          const index = pickIndex % leaves.length;
          const path = inclusionProof(sha256, leaves, index);
          expect(path.map(hex)).toEqual(refPath(index, leaves).map(hex));
          const leaf = leaves[index] as Uint8Array;
          if (path.length === 0) {
            expect(leaves.length).toBe(1);
            return;
          }
          const element = pickElement % path.length;
          const tampered = path.map((node, at) => (at === element ? flipBit(node, byte, mask) : node));
          expect(verifies(leaf, index, leaves.length, tampered, root)).toBe(false);
          // Every byte of that element, each flipped alone, is caught.
          for (let at = 0; at < 32; at += 1) {
            const flipped = path.map((node, position) => (position === element ? flipBit(node, at, 0x01) : node));
            expect(verifies(leaf, index, leaves.length, flipped, root)).toBe(false);
          }
          // The leaves are distinct, so the proof cannot place this leaf at a neighbouring index.
          if (leaves.length > 1) expect(verifies(leaf, (index + 1) % leaves.length, leaves.length, path, root)).toBe(false);
        },
      ),
      { numRuns: 15 },
    );
  });
});
