/**
 * SHA-256 in WebAssembly (hash-wasm), for the sealer's Merkle tree: a block of 100,000 transactions
 * hashes about 200,000 inputs of 33 or 65 bytes, where node:crypto's fixed cost per call dominates
 * (1.5 µs on Node 20, more on Node 24, against about 0.6 µs here; docs/performance.md, "The sealer's
 * Merkle tree in one buffer"). Held to node:crypto by a property test (test/domain/sha256-wasm.test.ts);
 * the verifier, the SDK and the audit hash with node:crypto or WebCrypto, so a wrong digest here would
 * be caught by every check of the chain.
 */
import { createSHA256 } from 'hash-wasm';
import type { SyncHashFunction } from './hash-steps.js';

/** A synchronous SHA-256 whose digests are fresh arrays (the instance is reused; calls never overlap). */
export async function createWasmSha256(): Promise<SyncHashFunction> {
  const hasher = await createSHA256();
  return (bytes: Uint8Array): Uint8Array => {
    hasher.init();
    hasher.update(bytes);
    return hasher.digest('binary');
  };
}
