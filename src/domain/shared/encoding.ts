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
/**
 * Blocks sealed since the market carry `native_price` (the price after the block, as the decimal text
 * of its 12-decimal units) and are hashed with `version` 2. A block without it (sealed before) keeps
 * its version-1 preimage, so every older hash still verifies; removing the price from a version-2
 * block changes its preimage, and so its hash.
 */
export const PRICED_BLOCK_VERSION = 2;

export type TransactionPreimage = {
  from: string;
  to: string;
  amount_units: bigint;
  token: string;
  type: string;
  metadata: { [key: string]: JsonValue };
  nonce: string;
  timestamp: number;
  /** Swaps only: part of their preimage (null: no minimum); absent or null for other types, which keep their encoding. */
  min_receive_units?: bigint | null | undefined;
};

export type BlockPreimage = {
  number: number;
  parent_hash: string;
  timestamp: number;
  transactions_root: string;
  /**
   * The native price after the block, as the exact decimal text the API shows (formatUnits of its
   * 12-decimal units, e.g. "1.5"); null/absent: a block from before the market (version 1).
   */
  native_price?: string | null | undefined;
};

export function transactionCanonicalText(tx: TransactionPreimage): string {
  // The same text as canonicalJson({ amount, from, metadata, nonce, timestamp, to, token, type, version })
  // (a property test checks it), written out directly: the keys are fixed and already in JCS order,
  // and this runs for every submission.
  // A swap adds "min_receive" (base units of the token received, or null), in its JCS place.
  const min_receive = tx.type === 'swap' ? `"min_receive":${tx.min_receive_units == null ? 'null' : `"${tx.min_receive_units.toString()}"`},` : '';
  return `{"amount":"${tx.amount_units.toString()}","from":${JSON.stringify(tx.from)},"metadata":${canonicalJson(tx.metadata)},${min_receive}` +
    `"nonce":${JSON.stringify(tx.nonce)},"timestamp":${canonicalJson(tx.timestamp)},"to":${JSON.stringify(tx.to)},` +
    `"token":${JSON.stringify(tx.token)},"type":${JSON.stringify(tx.type)},"version":${ENCODING_VERSION}}`;
}

export function blockCanonicalText(block: BlockPreimage): string {
  if (block.native_price != null) {
    return canonicalJson({
      native_price: block.native_price,
      number: block.number,
      parent_hash: block.parent_hash,
      timestamp: block.timestamp,
      transactions_root: block.transactions_root,
      version: PRICED_BLOCK_VERSION,
    });
  }
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
