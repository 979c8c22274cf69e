/**
 * The balance commitment's line in signed checkpoints: `balances <block> <base64 root>`, the root of
 * the balance tree after the newest block of the checkpoint's history (size − 1). A block sealed
 * before balance commitments has no root, and its checkpoint no line. Every instance answers the same
 * line for a size: the root is read from the store.
 */
import { base64Encode } from '../domain/shared/checkpoint.js';
import { hexToBytes } from '../domain/shared/hex.js';
import type { LedgerStore } from '../service/ledger-store.js';

/** The extension line's keyword; the SDK reads it back with `noteBalanceRoot`. */
export const BALANCES_EXTENSION = 'balances';

export function balanceCheckpointExtension(store: LedgerStore): (size: number) => Promise<string[]> {
  return async (size) => {
    if (size < 1) return [];
    const block_number = size - 1;
    const root = await store.balanceRoot(block_number);
    return root === null ? [] : [`${BALANCES_EXTENSION} ${block_number} ${base64Encode(hexToBytes(root))}`];
  };
}
