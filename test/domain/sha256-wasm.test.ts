import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { merkleRoot } from '../../src/domain/merkle.js';
import { sha256, transactionsRoot } from '../../src/domain/hashing.js';
import { hexToBytes, toHashHex } from '../../src/domain/hex.js';
import { createWasmSha256 } from '../../src/domain/sha256-wasm.js';

describe('the WebAssembly SHA-256 the sealer builds Merkle trees with', () => {
  it('gives node:crypto digests for any bytes, each a fresh array', async () => {
    const wasm = await createWasmSha256();
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 300 }), (first, second) => {
      const first_digest = wasm(first);
      const kept = Uint8Array.from(first_digest);
      const second_digest = wasm(second);
      expect(Buffer.from(first_digest)).toEqual(createHash('sha256').update(first).digest());
      expect(Buffer.from(second_digest)).toEqual(createHash('sha256').update(second).digest());
      expect(first_digest).toEqual(kept);
    }), { numRuns: 500 });
    // Across the padding boundaries of a 64-byte block.
    for (let length = 0; length <= 200; length += 1) {
      const bytes = Uint8Array.from({ length }, (_, index) => (index * 31 + length) & 0xff);
      expect(Buffer.from(wasm(bytes))).toEqual(createHash('sha256').update(bytes).digest());
    }
  });

  it('builds the same transactions root as node:crypto and the shared Merkle code', async () => {
    const wasm = await createWasmSha256();
    const hashes = fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }).map(toHashHex), { maxLength: 300 });
    fc.assert(fc.property(hashes, (tx_hashes) => {
      const root = transactionsRoot(tx_hashes, wasm);
      expect(root).toBe(transactionsRoot(tx_hashes));
      expect(root).toBe(toHashHex(merkleRoot(sha256, tx_hashes.map(hexToBytes))));
    }), { numRuns: 200 });
  });
});
