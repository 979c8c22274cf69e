/**
 * The shared hashing test vectors (test/vectors/hashing-vectors.json), computed by the TypeScript
 * implementation itself: RFC 8785 canonical JSON of tricky inputs, transaction records as the server
 * serves them with their canonical preimages and hashes, RFC 6962 roots and audit paths for several
 * tree sizes, block hashes, and a small valid chain. The TypeScript tests check the file against this
 * builder (so a change of encoding cannot go unnoticed) and the Python client's tests check its own
 * implementation against the same file. Regenerate with `npx tsx test/vectors/generate.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAmount } from '../../src/domain/shared/amount.js';
import { buildBlock, type Block, type BlockHeader } from '../../src/domain/block.js';
import { canonicalJson, type JsonValue } from '../../src/domain/shared/canonical-json.js';
import { blockCanonicalText, transactionCanonicalText } from '../../src/domain/shared/encoding.js';
import { blockHash, pendingTransaction, sha256, transactionsAuditPath, transactionsRoot } from '../../src/domain/hashing.js';
import { toHashHex } from '../../src/domain/shared/hex.js';
import { TokenRegistry } from '../../src/domain/shared/tokens.js';
import type { Metadata, TransactionType } from '../../src/domain/transaction.js';
import { stringifyExact } from '../../src/views/exact-json.js';
import { transactionView } from '../../src/views/record-views.js';

export const VECTORS_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), 'hashing-vectors.json');

/**
 * JSON texts whose canonical form is tricky: key order by UTF-16 code units (a non-BMP key sorts
 * before U+E000, unlike code point order), escapes, numbers as ECMAScript writes them (exponent
 * thresholds, -0, the largest and smallest doubles, integers past 2^53 that a double holds exactly).
 */
const CANONICAL_JSON_INPUTS = [
  '{}',
  '[]',
  '{"b":1,"a":[true,false,null],"c":{"z":"","y":{}}}',
  '{"\\ue000":1,"\\ud83d\\ude00":2,"a":3,"A":4,"é":5,"":6,"aa":7,"a\\u0000":8}',
  '{"s":"\\u0000\\u0001\\u001f\\u007f\\b\\f\\n\\r\\t\\"\\\\/ \\u2028\\u2029"}',
  '{"unicode":"Grüße, 日本語, 😀, \\ud834\\udd1e, ﷽"}',
  '[0,-0,1,-1,0.1,-0.5,100,100.0,1E2,1e+2,123.456,0.000001,1e-7,0.0000001,1.5e-7,123e-20]',
  '[1e20,1e21,1e+21,123456789012345,999999999999999,9007199254740991,9007199254740992,1152921504606846976,12345678901234567890]',
  '[1.7976931348623157e308,5e-324,2.2250738585072014e-308,0.30000000000000004,4.35,1.0000000000000002,333333333.33333329]',
  '{"deep":[[[[{"x":[{"y":[1,{"z":null}]}]}]]]],"n":-1.25e-10}',
];

type TransactionCase = {
  name: string;
  from: string;
  to: string;
  amount: string;
  token: string;
  type: TransactionType;
  metadata: Metadata;
  nonce: string;
  timestamp: number;
  /** Swaps only: the minimum, in the token received. */
  min_receive?: string;
};

const TRANSACTION_CASES: TransactionCase[] = [
  { name: 'mint of 100 TAB (a whole amount: a JSON integer)', from: 'issuer', to: 'alice', amount: '100', token: 'TAB', type: 'mint', metadata: {}, nonce: '9f9e98c66358a4bb1867da89d975c1cf', timestamp: 1795305809 },
  { name: 'transfer of 12.5 TAB with a memo', from: 'alice', to: 'bob', amount: '12.5', token: 'TAB', type: 'transfer', metadata: { memo: 'rent' }, nonce: '0b5e2a8f1c9d4e7a6b3c2d1e0f9a8b7c', timestamp: 1795305870 },
  { name: 'one base unit of TAB', from: 'alice', to: 'bob', amount: '0.00000001', token: 'TAB', type: 'transfer', metadata: {}, nonce: '00000000000000000000000000000001', timestamp: 1795305871 },
  { name: 'the largest TAB amount (2^63 - 1 base units)', from: 'issuer', to: 'whale', amount: '92233720368.54775807', token: 'TAB', type: 'mint', metadata: {}, nonce: 'ffffffffffffffffffffffffffffffff', timestamp: 1795305872 },
  { name: 'one base unit of USDG', from: 'carol', to: 'dave', amount: '0.000001', token: 'USDG', type: 'transfer', metadata: {}, nonce: '1234567890abcdef1234567890abcdef', timestamp: 1795305873 },
  // Sent as the JSON number 90000000000.00000762, which JSON.parse reads as 90000000000: the service keeps
  // it exactly (9000000000000000762 base units, past 2^53), and every client must hash it so.
  { name: 'an amount a double cannot hold, kept exactly', from: 'issuer', to: 'erin', amount: '90000000000.00000762', token: 'TAB', type: 'mint', metadata: { order_id: '12345678901234567890', safe: 9007199254740991 }, nonce: '5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a', timestamp: 1795305874 },
  { name: 'the largest USDG amount (2^63 - 1 base units)', from: 'issuer', to: 'whale', amount: '9223372036854.775807', token: 'USDG', type: 'mint', metadata: {}, nonce: 'abcdefabcdefabcdefabcdefabcdefab', timestamp: 1795305874 },
  { name: 'an amount past 2^53 base units that a double would round', from: 'alice', to: 'bob', amount: '90071992.54740993', token: 'TAB', type: 'transfer', metadata: {}, nonce: '5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a', timestamp: 1795305875 },
  {
    name: 'burn with unicode, nested and numeric metadata', from: 'auth0|5f7c8ec7c33c6c004bbafe82', to: 'issuer', amount: '0.1', token: 'TAB', type: 'burn',
    metadata: {
      'note': 'Grüße 日本語 😀', '😀': 'emoji key', '\ue000': 'private use key', 'nested': { b: [1, 2, { c: null }], a: true },
      'big_exact': 1e21, 'huge': 1e300, 'safe_max': 9007199254740991, 'safe_min': -9007199254740991, 'fraction': 0.1, 'tiny': 1.5e-7, 'negative': -0.5, 'zero': 0,
    },
    nonce: 'c0ffeec0ffeec0ffeec0ffeec0ffee00', timestamp: 1795305876,
  },
  { name: 'swap of 10 TAB with a minimum of 9.85 USDG (min_receive in the preimage)', from: 'alice', to: 'alice', amount: '10', token: 'TAB', type: 'swap', min_receive: '9.85', metadata: {}, nonce: '5ba95ba95ba95ba95ba95ba95ba95ba9', timestamp: 1795305878 },
  { name: 'swap of USDG with no minimum (min_receive null in the preimage)', from: 'bob', to: 'carol', amount: '2.5', token: 'USDG', type: 'swap', metadata: {}, nonce: '5ba95ba95ba95ba95ba95ba95ba95baa', timestamp: 1795305879 },
  { name: 'user ids with e-mail and unicode', from: 'ana.maría@example.com', to: 'Zoë', amount: '3.14159265', token: 'tab', type: 'transfer', metadata: { 'quote': '"\\\n\t' }, nonce: 'deadbeefdeadbeefdeadbeefdeadbeef', timestamp: 1795305877 },
];

const MERKLE_SIZES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17];
const GENESIS_TIMESTAMP = 1795305800;

/** A deterministic 32-byte leaf: SHA-256 of its label. */
function leafHash(label: string): string {
  return toHashHex(sha256(new TextEncoder().encode(label)));
}

function canonicalJsonVectors(): Array<{ json: string; canonical: string }> {
  return CANONICAL_JSON_INPUTS.map((json) => ({ json, canonical: canonicalJson(JSON.parse(json) as JsonValue) }));
}

function transactionVectors(tokens: TokenRegistry) {
  return TRANSACTION_CASES.map((item) => {
    const token = tokens.resolve(item.token);
    const amount_units = parseAmount(item.amount, token.decimals);
    const swap = item.type === 'swap';
    const token_out = tokens.other(token);
    const min_receive = item.min_receive;
    const preimage = {
      from: item.from, to: item.to, amount_units, token: token.symbol, type: item.type, metadata: item.metadata, nonce: item.nonce, timestamp: item.timestamp,
      ...(swap ? { min_receive_units: min_receive === undefined ? null : parseAmount(min_receive, token_out.decimals) } : {}),
    };
    const transaction = pendingTransaction(preimage, swap ? token_out.symbol : null);
    return {
      name: item.name,
      record_json: stringifyExact(transactionView(transaction, tokens)),
      amount_units: amount_units.toString(),
      canonical: transactionCanonicalText(preimage),
      tx_hash: transaction.tx_hash,
    };
  });
}

function merkleVectors() {
  return MERKLE_SIZES.map((size) => {
    const leaves = Array.from({ length: size }, (_, index) => leafHash(`leaf ${index}`));
    return { size, leaves, root: transactionsRoot(leaves), audit_paths: leaves.map((_, index) => transactionsAuditPath(leaves, index)) };
  });
}

/** Genesis and three blocks of 1, 3 and 5 transactions: headers, canonical preimages, hashes and lists. */
function chainVectors() {
  const blocks: Block[] = [];
  let parent: BlockHeader | null = null;
  for (const [index, count] of [0, 1, 3, 5].entries()) {
    const transactions = Array.from({ length: count }, (_, position) => leafHash(`block ${index} transaction ${position}`));
    const header: BlockHeader = buildBlock(parent, transactions, GENESIS_TIMESTAMP + index * 2);
    blocks.push({ ...header, transactions });
    parent = header;
  }
  return blocks.map((block) => {
    const preimage = { number: block.number, parent_hash: block.parent_hash, timestamp: block.timestamp, transactions_root: block.transactions_root };
    if (blockHash(preimage) !== block.hash) throw new Error(`block ${block.number} does not hash to its own hash`);
    return { block, canonical: blockCanonicalText(preimage) };
  });
}

/** Every vector, in the order and form of the committed file. */
export function buildVectors() {
  const tokens = new TokenRegistry('TAB');
  return {
    description: 'Hashing test vectors shared by the TypeScript and Python clients; generated by test/vectors/generate.ts from the TypeScript implementation. Do not edit by hand.',
    canonical_json: canonicalJsonVectors(),
    transactions: transactionVectors(tokens),
    merkle: merkleVectors(),
    chain: chainVectors(),
  };
}

export function vectorsText(): string {
  return `${JSON.stringify(buildVectors(), null, 2)}\n`;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(VECTORS_PATH, vectorsText());
  console.log(`wrote ${VECTORS_PATH}`);
}
