/**
 * The shared hashing vectors (hashing-vectors.json, also read by the Python client's tests) are what
 * the TypeScript implementation computes today: the file equals a fresh build, so a change of
 * encoding fails here instead of silently leaving the Python client checked against stale values.
 * The SDK's own verifiers accept every record, path and block of the file.
 */
import fs from 'node:fs';
import { parseWithExactNumbers, verifyChainLink, verifyTransaction, type Block, type Transaction } from '@tabula/client';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../src/domain/shared/canonical-json.js';
import { sha256 } from '../../src/domain/hashing.js';
import { hexToBytes, toHashHex } from '../../src/domain/shared/hex.js';
import { rootFromInclusionProof } from '../../src/domain/shared/merkle.js';
import { VECTORS_PATH, vectorsText, buildVectors } from './generate.js';

type Vectors = ReturnType<typeof buildVectors>;
const committed = JSON.parse(fs.readFileSync(VECTORS_PATH, 'utf8')) as Vectors;

describe('the shared hashing vectors', () => {
  it('are exactly what the TypeScript implementation computes (regenerate: npx tsx test/vectors/generate.ts)', () => {
    expect(fs.readFileSync(VECTORS_PATH, 'utf8')).toBe(vectorsText());
  });

  it('cover every kind of case', () => {
    expect(committed.canonical_json.length).toBeGreaterThanOrEqual(8);
    expect(committed.transactions.map((item) => item.record_json).join('\n')).toMatch(/"amount":92233720368\.54775807,/);
    expect(committed.merkle.map((item) => item.size)).toEqual(expect.arrayContaining([0, 1, 2, 3, 5, 8, 17]));
    expect(committed.chain.map((item) => item.block.transactions_count)).toEqual([0, 1, 3, 5]);
  });

  it('canonical JSON: each input canonicalizes to its text', () => {
    for (const item of committed.canonical_json) expect(canonicalJson(JSON.parse(item.json) as JsonValue)).toBe(item.canonical);
  });

  it("transactions: the SDK recomputes each record's hash from the served JSON", async () => {
    for (const item of committed.transactions) {
      const record = parseWithExactNumbers(item.record_json, ['amount']) as Transaction;
      expect(record.tx_hash).toBe(item.tx_hash);
      await expect(verifyTransaction(record), item.name).resolves.toBeUndefined();
      expect(toHashHex(sha256(new TextEncoder().encode(item.canonical)))).toBe(item.tx_hash);
    }
  });

  it('merkle: every audit path leads from its leaf to the root', () => {
    for (const item of committed.merkle) {
      item.leaves.forEach((leaf, index) => {
        const path = (item.audit_paths[index] as string[]).map(hexToBytes);
        const root = rootFromInclusionProof(sha256, hexToBytes(leaf), index, item.size, path);
        expect(root === null ? null : toHashHex(root), `size ${item.size}, leaf ${index}`).toBe(item.root);
      });
    }
  });

  it('chain: the SDK verifies every block and link, and each hash is SHA-256 of its canonical preimage', async () => {
    let parent: Block | null = null;
    for (const item of committed.chain) {
      await expect(verifyChainLink(item.block, parent)).resolves.toBeUndefined();
      expect(toHashHex(sha256(new TextEncoder().encode(item.canonical)))).toBe(item.block.hash);
      parent = item.block;
    }
  });
});
