import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../src/domain/canonical-json.js';
import { ENCODING_VERSION, transactionCanonicalText } from '../../src/domain/encoding.js';
import { transactionHash, transactionsAuditPath, transactionsRoot, sha256 } from '../../src/domain/hashing.js';
import { bytesToHex, hexToBytes, toHashHex } from '../../src/domain/hex.js';
import { inclusionProof, merkleRoot } from '../../src/domain/merkle.js';
import { NoncePool } from '../../src/service/nonce-pool.js';
import { createHash } from 'node:crypto';

const json: fc.Arbitrary<JsonValue> = fc.jsonValue() as fc.Arbitrary<JsonValue>;
const preimage = fc.record({
  from: fc.string({ minLength: 1 }),
  to: fc.string({ minLength: 1 }),
  amount_units: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
  token: fc.constantFrom('TAB', 'USDG'),
  type: fc.constantFrom('transfer', 'mint', 'burn'),
  metadata: fc.dictionary(fc.string(), json),
  nonce: fc.stringMatching(/^[0-9a-f]{32}$/),
  timestamp: fc.integer({ min: 0, max: 2 ** 40 }),
});

describe('the encodings on the write path equal their reference definitions', () => {
  it('transactionCanonicalText is JCS of the documented object', () => {
    fc.assert(fc.property(preimage, (tx) => {
      const reference = canonicalJson({
        amount: tx.amount_units.toString(), from: tx.from, metadata: tx.metadata, nonce: tx.nonce,
        timestamp: tx.timestamp, to: tx.to, token: tx.token, type: tx.type, version: ENCODING_VERSION,
      });
      expect(transactionCanonicalText(tx)).toBe(reference);
      expect(transactionHash(tx)).toBe(`0x${createHash('sha256').update(Buffer.from(reference, 'utf8')).digest('hex')}`);
    }));
  });

  it('transactionsRoot and audit paths equal the platform-neutral Merkle code over hexToBytes', () => {
    const hashes = fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }).map(toHashHex), { minLength: 1, maxLength: 40 });
    fc.assert(fc.property(hashes, fc.nat(), (tx_hashes, pick) => {
      const leaves = tx_hashes.map(hexToBytes);
      expect(transactionsRoot(tx_hashes)).toBe(toHashHex(merkleRoot(sha256, leaves)));
      const index = pick % tx_hashes.length;
      expect(transactionsAuditPath(tx_hashes, index)).toEqual(inclusionProof(sha256, leaves, index).map(toHashHex));
    }));
  });

  it('hex round-trips and refuses what is not hex', () => {
    fc.assert(fc.property(fc.uint8Array(), (bytes) => {
      expect(hexToBytes(bytesToHex(bytes))).toEqual(bytes);
      expect(bytesToHex(bytes)).toBe(Buffer.from(bytes).toString('hex'));
      expect(hexToBytes(`0x${bytesToHex(bytes).toUpperCase()}`)).toEqual(bytes);
    }));
    for (const bad of ['0x0', 'zz', '0xgg', '12 4']) expect(() => hexToBytes(bad)).toThrow(TypeError);
  });

  it('nonce pool hands out distinct 16-byte hex nonces across refills', () => {
    const pool = new NoncePool(16);
    const nonces = Array.from({ length: 10_000 }, () => pool.next());
    expect(nonces.every((nonce) => /^[0-9a-f]{32}$/.test(nonce))).toBe(true);
    expect(new Set(nonces).size).toBe(nonces.length);
  });
});
