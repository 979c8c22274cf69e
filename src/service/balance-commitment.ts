/**
 * What the service needs of the balance commitment (implemented in src/balance-commitments/): the
 * root after a block before the producer writes it, and proofs of balances against the newest root.
 */
import type { BalanceProofJson } from '../domain/shared/balance-commitment.js';
import type { BalanceChange } from './ledger-store.js';

/** The root a block's balance changes lead to; `written` is called once the block is committed. */
export type PreparedBalanceRoot = { balance_root: string; written(): void };

export interface BalanceCommitment {
  /** The root after applying `balances` to the state after block `parent_number`. */
  prepare(parent_number: number, balances: readonly BalanceChange[]): Promise<PreparedBalanceRoot>;
  /** Proofs of `user_id`'s balance in each of `tokens` against the root of the newest sealed block. */
  prove(user_id: string, tokens: readonly string[]): Promise<BalanceProofJson>;
}
