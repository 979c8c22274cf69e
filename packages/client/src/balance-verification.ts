/**
 * Verification of balance proofs (`GET /api/balance/{userId}?proof=true`): every entry's path leads
 * to the proof's balance root, and the balances the answer states are exactly the proven ones. The
 * algorithm is the server's own (src/domain/shared/balance-commitment.ts), run on WebCrypto.
 */
import { checkBalanceEntryAsync, type BalanceProofJson } from '../../../src/domain/shared/balance-commitment.js';
import { base64Decode, parseCheckpointNote } from '../../../src/domain/shared/checkpoint.js';
import { bytesToHex } from '../../../src/domain/shared/hex.js';
import { USDG_SYMBOL } from '../../../src/domain/shared/tokens.js';
import { VerificationError } from './errors.js';
import type { Balance } from './types.js';
import { amountUnits, sha256 } from './verification.js';

export type BalanceProof = BalanceProofJson;
export type BalanceProofEntry = BalanceProofJson['entries'][number];

/** What a verified balance proof established: each token's base units after `block_number`, under `balance_root`. */
export type ProvenBalances = { block_number: number; balance_root: string; units: Record<string, bigint> };

const HASH = /^0x[0-9a-f]{64}$/;

/**
 * Verifies `proof` for `userId`, and that `balance` (the answer's amounts, with their exact texts)
 * states exactly the proven balances. Pure: the root is taken from the proof; check it against a root
 * you trust (a signed checkpoint, or `GET /api/blocks/{n}/balance-root`). Throws a `VerificationError`:
 * `balance_proof_invalid` (malformed, or a path that does not lead to the root) or `balance_mismatch`.
 */
export async function verifyBalanceProof(userId: string, balance: Pick<Balance, 'user_id' | 'native_text' | 'usdg_text'>, proof: BalanceProof): Promise<ProvenBalances> {
  const where = { block_number: Number.isSafeInteger(proof?.block_number) ? proof.block_number : null };
  if (typeof proof !== 'object' || proof === null || !Number.isSafeInteger(proof.block_number) || proof.block_number < 0) {
    throw new VerificationError('balance_proof_invalid', 'the balance proof has no block number');
  }
  if (typeof proof.balance_root !== 'string' || !HASH.test(proof.balance_root)) throw new VerificationError('balance_proof_invalid', 'the balance proof has no 0x-hex balance root', where);
  if (!Array.isArray(proof.entries) || proof.entries.length !== 2) throw new VerificationError('balance_proof_invalid', 'the balance proof must hold one entry per token of the ledger (2)', where);
  const units: Record<string, bigint> = {};
  for (const entry of proof.entries) {
    const checked = await checkBalanceEntryAsync(sha256, userId, entry, proof.balance_root);
    if (!checked.ok) throw new VerificationError('balance_proof_invalid', `the balance proof of ${userId} does not verify: ${checked.reason}`, where);
    if (entry.token in units) throw new VerificationError('balance_proof_invalid', `the balance proof proves ${entry.token} twice`, where);
    units[entry.token] = checked.units;
  }
  const native = proof.entries.find((entry) => entry.token.toUpperCase() !== USDG_SYMBOL);
  if (native === undefined || !(USDG_SYMBOL in units)) throw new VerificationError('balance_proof_invalid', `the balance proof must prove the native token and ${USDG_SYMBOL}`, where);
  if (balance.user_id !== userId) throw new VerificationError('balance_mismatch', `asked for the balance of ${userId}, got ${balance.user_id}'s`, where);
  expectStated(balance.native_text, native.token, units[native.token] as bigint, where);
  expectStated(balance.usdg_text, USDG_SYMBOL, units[USDG_SYMBOL] as bigint, where);
  return { block_number: proof.block_number, balance_root: proof.balance_root, units };
}

function expectStated(text: string, token: string, proven: bigint, where: { block_number: number | null }): void {
  let stated: bigint | null;
  try {
    // parseAmount refuses zero (no transaction moves nothing); a balance may be zero.
    stated = /^0(\.0*)?$/.test(text) ? 0n : amountUnits(text, token);
  } catch {
    stated = null;
  }
  if (stated !== proven) {
    throw new VerificationError('balance_mismatch', `the answer states ${text} ${token}, but the proof proves ${proven} base units`, where);
  }
}

/**
 * The balance root a signed checkpoint's note states for `block_number` (its `balances <block> <base64
 * root>` extension line), as 0x-hex; null when the note has no such line (e.g. a block sealed before
 * balance commitments). Read the note only after its signature verified.
 */
export function noteBalanceRoot(note: string, block_number: number): string | null {
  const parsed = parseCheckpointNote(note);
  if (parsed === null) return null;
  for (const line of parsed.extensions) {
    const match = /^balances (0|[1-9][0-9]{0,15}) ([A-Za-z0-9+/]{43}=)$/.exec(line);
    if (match === null || Number(match[1]) !== block_number) continue;
    const root = base64Decode(match[2] as string);
    if (root !== null && root.length === 32) return `0x${bytesToHex(root)}`;
  }
  return null;
}
