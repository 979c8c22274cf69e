/**
 * The audit rules of the chain, written once for the server (node:crypto, synchronous: block.ts, the
 * audit) and the SDK (WebCrypto, asynchronous: packages/client). Pure and platform-neutral: every
 * function here is a `HashSteps` generator (see hash-steps.ts) or hashes nothing at all; the hashes it
 * recomputes are defined in chain-hashes.ts, which the server also builds the chain with.
 *
 * Nothing is taken on trust: a root is recomputed from the transaction list, a hash from the header
 * fields, an inclusion proof's root from the leaf and its path, and all of them are compared with
 * the values the header commits to, never with a root or size the server states on the side.
 */
import { blockHashSteps, transactionsRootSteps, type BlockHeaderRecord, type BlockRecord, type InclusionProofRecord } from './chain-hashes.js';
import type { HashSteps } from './hash-steps.js';
import { hexToBytes, isHash, toHashHex, ZERO_HASH } from './hex.js';
import { rootFromInclusionProofSteps } from './merkle.js';

/** Why a check failed; stable, part of the SDK's VerificationError. */
export type CheckCode =
  | 'malformed_record'
  | 'transactions_count_mismatch'
  | 'transactions_root_mismatch'
  | 'parent_hash_mismatch'
  | 'block_number_mismatch'
  | 'timestamp_backwards'
  | 'block_hash_mismatch'
  | 'transaction_hash_mismatch'
  | 'inclusion_proof_invalid';

export type CheckFailure = { ok: false; code: CheckCode; reason: string };
export type CheckResult = { ok: true } | CheckFailure;

const OK: CheckResult = { ok: true };
/** A price as formatUnits writes it with 12 decimals: digits, an optional fraction without trailing zeros. */
const PRICE_TEXT = /^(0|[1-9][0-9]*)(\.[0-9]{0,11}[1-9])?$/;

function fail(code: CheckCode, reason: string): CheckFailure {
  return { ok: false, code, reason };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The shape every header field must have before anything is hashed. */
export function checkHeaderShape(header: BlockHeaderRecord): CheckResult {
  const hashes_ok = isHash(header.hash) && isHash(header.parent_hash) && isHash(header.transactions_root);
  const numbers_ok = isCount(header.number) && isCount(header.timestamp) && isCount(header.transactions_count);
  const price_ok = header.native_price == null || (typeof header.native_price === 'string' && PRICE_TEXT.test(header.native_price));
  return hashes_ok && numbers_ok && price_ok ? OK : fail('malformed_record', 'a header field is missing or not of its documented form');
}

/** Shape, list, count and the root recomputed from the list: the part of a block check before its hash. */
function* rootCheckSteps(block: BlockRecord): HashSteps<CheckResult> {
  const shape = checkHeaderShape(block);
  if (!shape.ok) return shape;
  if (!Array.isArray(block.transactions) || !block.transactions.every(isHash)) {
    return fail('malformed_record', 'transactions is not a list of 0x + 64 lowercase hex hashes');
  }
  if (block.transactions.length !== block.transactions_count) return fail('transactions_count_mismatch', 'transactions_count does not match the list');
  if ((yield* transactionsRootSteps(block.transactions)) !== block.transactions_root) {
    return fail('transactions_root_mismatch', 'transactions_root does not match the transactions');
  }
  return OK;
}

/**
 * The block alone: its list has `transactions_count` well-formed hashes, the root recomputed from
 * the list equals `transactions_root`, and the hash recomputed from the header equals `hash`.
 */
export function* blockContentCheckSteps(block: BlockRecord): HashSteps<CheckResult> {
  const content = yield* rootCheckSteps(block);
  if (!content.ok) return content;
  return yield* headerHashCheckSteps(block);
}

export function* headerHashCheckSteps(header: BlockHeaderRecord): HashSteps<CheckResult> {
  const recomputed = yield* blockHashSteps(header);
  return recomputed === header.hash ? OK : fail('block_hash_mismatch', 'hash does not match the header');
}

/**
 * The link to the previous block (`parent` null: the block must be genesis): parent_hash, a
 * consecutive number, and a timestamp that does not go backwards. Hashes nothing.
 */
export function checkLink(block: BlockHeaderRecord, parent: BlockHeaderRecord | null): CheckResult {
  const expected_parent = parent === null ? ZERO_HASH : parent.hash;
  if (block.parent_hash !== expected_parent) return fail('parent_hash_mismatch', 'parent_hash does not link to the previous block');
  if (block.number !== (parent === null ? 0 : parent.number + 1)) return fail('block_number_mismatch', 'block numbers are not consecutive');
  if (parent !== null && block.timestamp < parent.timestamp) return fail('timestamp_backwards', 'timestamp goes backwards');
  return OK;
}

/** Everything about one block of a chain: content, root, link to `parent` (null: genesis) and hash. */
export function* blockCheckSteps(block: BlockRecord, parent: BlockHeaderRecord | null): HashSteps<CheckResult> {
  const content = yield* rootCheckSteps(block);
  if (!content.ok) return content;
  const link = checkLink(block, parent);
  if (!link.ok) return link;
  return yield* headerHashCheckSteps(block);
}

/**
 * An RFC 6962 inclusion proof against a block header: the header hashes to its `hash`, the proof
 * names that block and hash, and the root recomputed from `tx_hash` and `audit_path` equals the
 * `transactions_root` inside the hashed header. The proof's own `transactions_root` field is only
 * compared, never used. `tree_size` must be the header's `transactions_count`.
 */
export function* inclusionCheckSteps(proof: InclusionProofRecord, header: BlockHeaderRecord): HashSteps<CheckResult> {
  const shape = checkHeaderShape(header);
  if (!shape.ok) return shape;
  const proof_ok = isHash(proof.tx_hash) && isHash(proof.block_hash) && isHash(proof.transactions_root) && isCount(proof.block_number)
    && isCount(proof.leaf_index) && isCount(proof.tree_size) && Array.isArray(proof.audit_path) && proof.audit_path.every(isHash);
  if (!proof_ok) return fail('malformed_record', 'a proof field is missing or not of its documented form');
  const header_hash = yield* headerHashCheckSteps(header);
  if (!header_hash.ok) return header_hash;
  if (proof.block_number !== header.number || proof.block_hash !== header.hash) {
    return fail('block_hash_mismatch', 'the proof names another block than the header');
  }
  if (proof.transactions_root !== header.transactions_root) return fail('transactions_root_mismatch', "the proof's transactions_root is not the header's");
  if (proof.tree_size !== header.transactions_count) return fail('transactions_count_mismatch', "the proof's tree_size is not the header's transactions_count");
  const root = yield* rootFromInclusionProofSteps(hexToBytes(proof.tx_hash), proof.leaf_index, proof.tree_size, proof.audit_path.map(hexToBytes));
  if (root === null) return fail('inclusion_proof_invalid', 'the audit path does not fit leaf_index and tree_size');
  if (toHashHex(root) !== header.transactions_root) return fail('inclusion_proof_invalid', 'the audit path does not lead to the transactions_root of the block');
  return OK;
}
