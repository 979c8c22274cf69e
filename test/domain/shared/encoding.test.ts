import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../../src/domain/shared/canonical-json.js';
import { ENCODING_VERSION, transactionCanonicalText, type TransactionPreimage } from '../../../src/domain/shared/encoding.js';
import { pendingTransaction, transactionHash, transactionsAuditPath, transactionsRoot, sha256 } from '../../../src/domain/hashing.js';
import { transactionHashSteps } from '../../../src/domain/shared/chain-hashes.js';
import { runHashSteps } from '../../../src/domain/shared/hash-steps.js';
import type { TransactionType } from '../../../src/domain/transaction.js';
import { bytesToHex, hexToBytes, toHashHex } from '../../../src/domain/shared/hex.js';
import { inclusionProof, merkleRoot } from '../../../src/domain/shared/merkle.js';
import { InvariantViolation } from '../../../src/domain/shared/errors.js';
import { NoncePool } from '../../../src/service/nonce-pool.js';
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

  // Account ids go through JSON.stringify, which escapes a lone surrogate; metadata through canonicalJson,
  // which refuses one: the text hashed is always well-formed UTF-16, so TextEncoder and node:crypto agree.
  it('transactionHash equals the shared generator for any account ids, metadata and swaps', () => {
    const text = fc.string({ unit: 'binary', minLength: 1 });
    const any_preimage = fc.record({
      from: text, to: text, amount_units: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }), token: fc.constantFrom('TAB', 'USDG'),
      type: fc.constantFrom('transfer', 'mint', 'burn', 'swap'), metadata: fc.dictionary(fc.string({ unit: 'grapheme' }), json),
      nonce: fc.stringMatching(/^[0-9a-f]{32}$/), timestamp: fc.integer({ min: 0, max: 2 ** 40 }),
      min_receive_units: fc.option(fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }), { nil: null }),
    });
    fc.assert(fc.property(any_preimage, (tx) => {
      expect(transactionHash(tx)).toBe(runHashSteps(transactionHashSteps(tx), sha256));
    }), { numRuns: 500 });
    const lone = { from: '\ud800', to: 'b\udfff', amount_units: 1n, token: 'TAB', type: 'transfer', metadata: { note: '\ud83d\ude00' }, nonce: '0'.repeat(32), timestamp: 0 };
    expect(transactionHash(lone)).toBe(runHashSteps(transactionHashSteps(lone), sha256));
  });

  it('pendingTransaction has the fields, in the order, that spreading its preimage gave', () => {
    fc.assert(fc.property(preimage, fc.option(fc.bigInt({ min: 0n, max: 10n ** 20n }), { nil: null }), (tx, min_receive_units) => {
      const swap: TransactionPreimage & { type: TransactionType } = { ...tx, type: 'swap', min_receive_units };
      for (const typed of [tx as TransactionPreimage & { type: TransactionType }, swap]) {
        const token_out = typed.type === 'swap' ? 'USDG' : null;
        const reference = {
          ...typed, min_receive_units: typed.min_receive_units ?? null, tx_hash: transactionHash(typed), status: 'pending',
          block_number: null, block_hash: null, position: null, error: null, amount_out_units: null, token_out,
        };
        const made = pendingTransaction(typed, token_out);
        expect(made).toEqual(reference);
        expect(Object.keys(made)).toEqual(Object.keys(reference));
      }
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

  it('transactionsRoot, built in one buffer, equals the shared Merkle code at every tree shape up to 300 leaves', () => {
    const hashes = fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }).map(toHashHex), { minLength: 0, maxLength: 300 });
    fc.assert(fc.property(hashes, (tx_hashes) => {
      expect(transactionsRoot(tx_hashes)).toBe(toHashHex(merkleRoot(sha256, tx_hashes.map(hexToBytes))));
    }), { numRuns: 200 });
    const leaves = Array.from({ length: 257 }, (_, index) => toHashHex(sha256(Uint8Array.of(index, index >> 8))));
    for (const size of [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257]) {
      const tx_hashes = leaves.slice(0, size);
      expect(transactionsRoot(tx_hashes)).toBe(toHashHex(merkleRoot(sha256, tx_hashes.map(hexToBytes))));
    }
    expect(transactionsRoot(leaves.map((leaf) => `0x${leaf.slice(2).toUpperCase()}`))).toBe(transactionsRoot(leaves));
  });

  it('transactionsRoot stops at a transaction hash that is not 0x and 64 hex digits: an invariant, not a leaf', () => {
    const good = toHashHex(new Uint8Array(32).fill(7));
    for (const bad of [good.slice(2), `${good}00`, good.slice(0, 64), `${good.slice(0, 65)}g`, `0xzz${good.slice(4)}`, `1x${good.slice(2)}`]) {
      expect(() => transactionsRoot([good, bad])).toThrow(InvariantViolation);
    }
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
