/**
 * The canonical encodings behind `tx_hash` and block `hash` (documented in docs/api.md, section
 * "Hashes"). Pure and platform-neutral: the writer, the verifier and the SDK all call these.
 *
 *   tx_hash    = SHA-256(UTF-8(JCS(transaction preimage)))
 *   block hash = SHA-256(UTF-8(JCS(block preimage)))
 *
 * JCS is RFC 8785; amounts are integer base units written as decimal strings, so no float is hashed.
 */
import { canonicalJson, type JsonValue } from './canonical-json.js';

export const ENCODING_VERSION = 1;

export type TransactionPreimage = {
  from: string;
  to: string;
  amount_units: bigint;
  token: string;
  type: string;
  metadata: { [key: string]: JsonValue };
  nonce: string;
  timestamp: number;
};

export type BlockPreimage = {
  number: number;
  parent_hash: string;
  timestamp: number;
  transactions_root: string;
};

export function transactionCanonicalText(tx: TransactionPreimage): string {
  // The same text as canonicalJson({ amount, from, metadata, nonce, timestamp, to, token, type, version })
  // (a property test checks it), written out directly: the keys are fixed and already in JCS order,
  // and this runs for every submission.
  return `{"amount":"${tx.amount_units.toString()}","from":${JSON.stringify(tx.from)},"metadata":${canonicalJson(tx.metadata)},` +
    `"nonce":${JSON.stringify(tx.nonce)},"timestamp":${canonicalJson(tx.timestamp)},"to":${JSON.stringify(tx.to)},` +
    `"token":${JSON.stringify(tx.token)},"type":${JSON.stringify(tx.type)},"version":${ENCODING_VERSION}}`;
}

export function blockCanonicalText(block: BlockPreimage): string {
  return canonicalJson({
    number: block.number,
    parent_hash: block.parent_hash,
    timestamp: block.timestamp,
    transactions_root: block.transactions_root,
    version: ENCODING_VERSION,
  });
}

const utf8 = new TextEncoder();

export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}
