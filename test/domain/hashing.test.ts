/**
 * Golden tests of the documented hash encodings (docs/api.md, section "Hashes"). The expected
 * canonical texts are written out by hand, and the expected hashes are SHA-256 over those literal
 * strings computed here with node:crypto (and pinned as hex, computed once with `sha256sum`), so a
 * change to the encoding — a field, its order, its type, the version — fails these tests.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { blockCanonicalText, ENCODING_VERSION, transactionCanonicalText, utf8Bytes, type TransactionPreimage } from '../../src/domain/shared/encoding.js';
import { blockHash, sha256, transactionHash, transactionsAuditPath, transactionsRoot } from '../../src/domain/hashing.js';
import { bytesToHex, hexToBytes, isHash, toHashHex, ZERO_HASH } from '../../src/domain/shared/hex.js';
import { rootFromInclusionProof } from '../../src/domain/shared/merkle.js';

const sha256Hex = (text: string): string => `0x${createHash('sha256').update(text, 'utf8').digest('hex')}`;

// The example of docs/api.md: a mint of 100.5 TAB.
const MINT: TransactionPreimage = {
  from: 'issuer',
  to: 'alice',
  amount_units: 10_050_000_000n,
  token: 'TAB',
  type: 'mint',
  metadata: {},
  nonce: '9f9e98c66358a4bb1867da89d975c1cf',
  timestamp: 1795305809,
};
const MINT_TEXT =
  '{"amount":"10050000000","from":"issuer","metadata":{},"nonce":"9f9e98c66358a4bb1867da89d975c1cf","timestamp":1795305809,"to":"alice","token":"TAB","type":"mint","version":1}';
const MINT_HASH = '0x8d139bee8defcf2a744b9e1ab3a11dd85e89033740a72c33d60ffd48ecd5cf3b';

// A transfer with nested metadata (unsorted keys), non-ASCII text and an escaped newline.
const TRANSFER: TransactionPreimage = {
  from: 'auth0|5f7c8ec7c33c6c004bbafe82',
  to: 'zoë@example.com',
  amount_units: 1n,
  token: 'USDG',
  type: 'transfer',
  metadata: { ref: 'inv-7', b: [1, 2.5, true, null], a: { y: '\n', x: '€' } },
  nonce: '00000000000000000000000000000001',
  timestamp: 1700000000,
};
const TRANSFER_TEXT =
  '{"amount":"1","from":"auth0|5f7c8ec7c33c6c004bbafe82","metadata":{"a":{"x":"€","y":"\\n"},"b":[1,2.5,true,null],"ref":"inv-7"},' +
  '"nonce":"00000000000000000000000000000001","timestamp":1700000000,"to":"zoë@example.com","token":"USDG","type":"transfer","version":1}';
const TRANSFER_HASH = '0xdb9b18082b162ed573b919cc7514bc0357fe0adb0803a356dfff2c1f3ae6f969';

const BLOCK = {
  number: 1,
  parent_hash: `0x${'11'.repeat(32)}`,
  timestamp: 1795305810,
  transactions_root: `0x${'22'.repeat(32)}`,
};
const BLOCK_TEXT =
  '{"number":1,"parent_hash":"0x1111111111111111111111111111111111111111111111111111111111111111","timestamp":1795305810,' +
  '"transactions_root":"0x2222222222222222222222222222222222222222222222222222222222222222","version":1}';
const BLOCK_HASH = '0x65b1ec1e53f56a6e2335018c17a3cbd135381026c6f53cd2c317573a1e213ee0';

describe('transaction hash: golden values', () => {
  it('the encoding version is 1', () => {
    expect(ENCODING_VERSION).toBe(1);
  });

  it('the documented mint example has the exact canonical text and hash', () => {
    expect(transactionCanonicalText(MINT)).toBe(MINT_TEXT);
    expect(sha256Hex(MINT_TEXT)).toBe(MINT_HASH);
    expect(transactionHash(MINT)).toBe(MINT_HASH);
  });

  it('a transfer with metadata: keys sorted at every depth, amount as a decimal string, UTF-8 bytes hashed', () => {
    expect(transactionCanonicalText(TRANSFER)).toBe(TRANSFER_TEXT);
    expect(sha256Hex(TRANSFER_TEXT)).toBe(TRANSFER_HASH);
    expect(transactionHash(TRANSFER)).toBe(TRANSFER_HASH);
    // The hash is over UTF-8 (ë and € are multi-byte), not over UTF-16 or Latin-1.
    expect(utf8Bytes(TRANSFER_TEXT).length).toBe(Buffer.byteLength(TRANSFER_TEXT, 'utf8'));
    expect(transactionHash(TRANSFER)).not.toBe(`0x${createHash('sha256').update(TRANSFER_TEXT, 'latin1').digest('hex')}`);
  });

  it('writes amounts beyond 2^53 exactly', () => {
    const text = transactionCanonicalText({ ...MINT, amount_units: 9_223_372_036_854_775_807n });
    expect(text).toContain('"amount":"9223372036854775807"');
  });

  it('identical requests with different nonces have different hashes', () => {
    const other = { ...MINT, nonce: '9f9e98c66358a4bb1867da89d975c1d0' };
    expect(transactionHash(other)).not.toBe(transactionHash(MINT));
    expect(transactionHash({ ...MINT })).toBe(MINT_HASH);
  });

  it.each([
    ['from', { from: 'issuer2' }],
    ['to', { to: 'alice2' }],
    ['amount', { amount_units: 10_050_000_001n }],
    ['token', { token: 'USDG' }],
    ['type', { type: 'burn' }],
    ['metadata', { metadata: { a: 1 } }],
    ['timestamp', { timestamp: 1795305810 }],
  ] as Array<[string, Partial<TransactionPreimage>]>)('changing %s changes the hash', (_field, change) => {
    expect(transactionHash({ ...MINT, ...change })).not.toBe(MINT_HASH);
  });

  it('hashes are 0x + 64 lowercase hex digits', () => {
    expect(isHash(MINT_HASH)).toBe(true);
    expect(isHash(transactionHash(TRANSFER))).toBe(true);
    expect(isHash(MINT_HASH.toUpperCase())).toBe(false);
    expect(isHash(MINT_HASH.slice(2))).toBe(false);
  });
});

describe('block hash: golden values', () => {
  it('has the exact canonical text and hash', () => {
    expect(blockCanonicalText(BLOCK)).toBe(BLOCK_TEXT);
    expect(sha256Hex(BLOCK_TEXT)).toBe(BLOCK_HASH);
    expect(blockHash(BLOCK)).toBe(BLOCK_HASH);
  });

  it('commits to exactly number, parent_hash, timestamp and transactions_root', () => {
    expect(blockHash({ ...BLOCK, number: 2 })).not.toBe(BLOCK_HASH);
    expect(blockHash({ ...BLOCK, parent_hash: `0x${'12'.repeat(32)}` })).not.toBe(BLOCK_HASH);
    expect(blockHash({ ...BLOCK, timestamp: 1795305811 })).not.toBe(BLOCK_HASH);
    expect(blockHash({ ...BLOCK, transactions_root: `0x${'23'.repeat(32)}` })).not.toBe(BLOCK_HASH);
    // Fields outside the preimage (count, the hash itself) do not take part.
    const withExtras = { ...BLOCK, hash: ZERO_HASH, transactions_count: 7 };
    expect(blockHash(withExtras)).toBe(BLOCK_HASH);
  });
});

describe('transactions root and audit paths over tx hashes', () => {
  const hashes = [MINT_HASH, TRANSFER_HASH, BLOCK_HASH];

  it('the root of no transactions is SHA-256 of nothing', () => {
    expect(transactionsRoot([])).toBe('0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('leaves are the 32 raw bytes of each hash, not its hex text', () => {
    // One leaf: root = SHA-256(0x00 || 32 bytes).
    const bytes = Buffer.concat([Buffer.from([0]), Buffer.from(MINT_HASH.slice(2), 'hex')]);
    expect(transactionsRoot([MINT_HASH])).toBe(`0x${createHash('sha256').update(bytes).digest('hex')}`);
    const leaf = (hash: string): Buffer => createHash('sha256').update(Buffer.concat([Buffer.from([0]), Buffer.from(hash.slice(2), 'hex')])).digest();
    const node = (left: Buffer, right: Buffer): Buffer => createHash('sha256').update(Buffer.concat([Buffer.from([1]), left, right])).digest();
    const expected = node(node(leaf(MINT_HASH), leaf(TRANSFER_HASH)), leaf(BLOCK_HASH));
    expect(transactionsRoot(hashes)).toBe(`0x${expected.toString('hex')}`);
  });

  it('each audit path verifies to the transactions root', () => {
    const root = hexToBytes(transactionsRoot(hashes));
    hashes.forEach((hash, index) => {
      const path = transactionsAuditPath(hashes, index).map(hexToBytes);
      const computed = rootFromInclusionProof(sha256, hexToBytes(hash), index, hashes.length, path);
      expect(computed === null ? null : toHashHex(computed)).toBe(toHashHex(root));
    });
  });

  it('depends on the order of the transactions', () => {
    expect(transactionsRoot([TRANSFER_HASH, MINT_HASH])).not.toBe(transactionsRoot([MINT_HASH, TRANSFER_HASH]));
  });

  it('hex helpers round-trip and reject non-hex', () => {
    expect(bytesToHex(hexToBytes('0x00ff10'))).toBe('00ff10');
    expect(() => hexToBytes('0xabc')).toThrow(TypeError);
    expect(() => hexToBytes('zz')).toThrow(TypeError);
    expect(ZERO_HASH).toBe(`0x${'0'.repeat(64)}`);
  });
});
