/**
 * The PostgreSQL store tests' ledger: a genesis block, then a block that mints 100 TAB to alice, so that
 * her debits are judged against a sealed balance; and transactions to append to it.
 */
import { buildBlock, genesisBlock, type BlockHeader } from '../../../src/domain/block.js';
import { pendingTransaction } from '../../../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../../../src/domain/transaction.js';
import type { LedgerStore, PendingAppend } from '../../../src/service/ledger-store.js';

export const HOUR = 1_800_000_000;
let nonce = 0;

/** A new pending transaction (a fresh nonce each time) of `amount_units` TAB from `from` to `to`. */
export function tx(from: string, amount_units: bigint, type: TransactionType = 'transfer', to = 'bob'): Transaction {
  nonce += 1;
  return pendingTransaction({ from, to, amount_units, token: 'TAB', type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: HOUR + 10 });
}

/** An append judged by the failure budget with none to spend: a debit that may fail is refused. */
export const refusing = (transaction: Transaction): PendingAppend => ({ transaction, idempotency: null, failure_budget: { subject: transaction.from, per_hour: 0 } });

/** Seals the genesis block and a block minting 100 TAB to alice; returns the newest block. */
export async function fundAlice(store: LedgerStore): Promise<BlockHeader> {
  const genesis = genesisBlock(HOUR);
  await store.commitBlock({ header: genesis, totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], balances: [], new_users: [], active_users: [] });
  const mint = tx('treasury', 100n, 'mint', 'alice');
  await store.appendPending([refusing(mint)]);
  const header = buildBlock(genesis, [mint.tx_hash], HOUR + 1);
  await store.commitBlock({
    header, totals: { transactions: 1, users: 1, transfer_volume_units: {} }, outcomes: [{ tx_hash: mint.tx_hash, position: 0, status: 'confirmed', error: null }],
    balances: [{ user_id: 'alice', token: 'TAB', units: 100n }], new_users: ['alice'], active_users: [],
  });
  return header;
}
