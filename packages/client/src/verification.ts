/**
 * Client-side verification with WebCrypto. The rules and encodings are the server's own
 * (src/domain/shared/chain-verification.ts, encoding.ts, merkle.ts, compiled into this package): one
 * implementation, driven here by `crypto.subtle.digest` instead of node:crypto. Every function
 * recomputes from the record and throws a `VerificationError` on the first mismatch.
 */
import { parseAmount } from '../../../src/domain/shared/amount.js';
import {
  blockCheckSteps,
  blockContentCheckSteps,
  checkLink,
  inclusionCheckSteps,
  type CheckResult,
} from '../../../src/domain/shared/chain-verification.js';
import { transactionHashSteps } from '../../../src/domain/shared/chain-hashes.js';
import { runHashStepsAsync } from '../../../src/domain/shared/hash-steps.js';
import { NATIVE_DECIMALS, USDG_DECIMALS, USDG_SYMBOL } from '../../../src/domain/shared/tokens.js';
import { VerificationError } from './errors.js';
import type { Block, BlockHeader, InclusionProof, Transaction } from './types.js';

/** SHA-256 with WebCrypto (browsers, Node ≥ 20, Deno, Bun…). */
export async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  const input = bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes);
  return new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', input));
}

function raise(result: CheckResult, where: { block_number?: number | null; tx_hash?: string | null }): void {
  if (!result.ok) throw new VerificationError(result.code, result.reason, where);
}

/** The block by itself: its list matches `transactions_count`, its root the list, its hash the header. */
export async function verifyBlock(block: Block, parent?: BlockHeader): Promise<void> {
  raise(await runHashStepsAsync(blockContentCheckSteps(block), sha256), { block_number: block.number });
  if (parent !== undefined) raise(checkLink(block, parent), { block_number: block.number });
  else if (block.number === 0) raise(checkLink(block, null), { block_number: 0 });
}

/** One block of a chain: everything `verifyBlock` checks, plus the link to `parent` (null: genesis). */
export async function verifyChainLink(block: Block, parent: BlockHeader | null): Promise<void> {
  raise(await runHashStepsAsync(blockCheckSteps(block, parent), sha256), { block_number: block.number });
}

/** An inclusion proof against a header; the header's hash is recomputed too. */
export async function verifyInclusionAgainst(proof: InclusionProof, header: BlockHeader): Promise<void> {
  raise(await runHashStepsAsync(inclusionCheckSteps(proof, header), sha256), { block_number: header.number, tx_hash: proof.tx_hash });
}

/** Decimals of a token symbol: 6 for USDG, 8 for the native token (whatever its symbol). */
export function tokenDecimals(symbol: string): number {
  return symbol.toUpperCase() === USDG_SYMBOL ? USDG_DECIMALS : NATIVE_DECIMALS;
}

/** Exact base units of a record's amount, from its decimal text. */
export function amountUnits(amount_text: string, token: string): bigint {
  return parseAmount(amount_text, tokenDecimals(token));
}

/** A swap's `min_receive` in base units of the token it receives (part of its hash), from the exact text. */
function minReceiveUnits(tx: Transaction): bigint | null {
  if (tx.min_receive == null || tx.token_out == null) return null;
  // The exact text when the record was parsed with it; else the number's own text (exact up to 15 digits).
  const text = tx.min_receive_text ?? String(tx.min_receive);
  try {
    return amountUnits(text, tx.token_out);
  } catch (error) {
    throw new VerificationError('malformed_record', `min_receive ${text} is not an exact amount of ${tx.token_out}: ${(error as Error).message}`, { tx_hash: tx.tx_hash });
  }
}

/** Recomputes `tx_hash` from the record's fields (the exact amount text, never the double). */
export async function verifyTransaction(tx: Transaction): Promise<void> {
  let amount_units: bigint;
  try {
    amount_units = amountUnits(tx.amount_text, tx.token);
  } catch (error) {
    throw new VerificationError('malformed_record', `amount ${tx.amount_text} is not an exact amount of ${tx.token}: ${(error as Error).message}`, { tx_hash: tx.tx_hash });
  }
  const preimage = {
    from: tx.from, to: tx.to, amount_units, token: tx.token, type: tx.type, metadata: tx.metadata, nonce: tx.nonce, timestamp: tx.timestamp,
    ...(tx.type === 'swap' ? { min_receive_units: minReceiveUnits(tx) } : {}),
  };
  const recomputed = await runHashStepsAsync(transactionHashSteps(preimage), sha256);
  if (recomputed !== tx.tx_hash) {
    throw new VerificationError('transaction_hash_mismatch', `the record hashes to ${recomputed}`, { tx_hash: tx.tx_hash, block_number: tx.block_number });
  }
}
