/**
 * A third party's audit of a whole chain, from genesis, through the store interface: every block's
 * root, hash, parent link, number and timestamp recomputed (domain/block.ts `checkBlock`, which uses
 * domain/hashing.ts), every transaction's hash recomputed from its record, every transaction in
 * exactly one block at the position it claims, and every decision replayed from empty balances.
 * Throws on the first discrepancy; returns what it replayed.
 */
import { checkBlock, type BlockHeader } from '../../src/domain/block.js';
import { transactionHash } from '../../src/domain/hashing.js';
import { BalanceBook, supplyDelta } from '../../src/domain/balance-book.js';
import type { Transaction } from '../../src/domain/transaction.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { expect } from 'vitest';

const READ_CHUNK = 200;

export type ChainAudit = {
  latest_block_number: number;
  /** Every sealed transaction, by hash. */
  sealed: Map<string, Transaction>;
  /** Balances after replaying the chain. */
  book: BalanceBook;
  /** Per token: confirmed mints minus confirmed burns. */
  issued: Map<string, bigint>;
};

export async function auditChain(store: LedgerStore): Promise<ChainAudit> {
  const latest = await store.latestBlock();
  if (latest === null) throw new Error('the chain has no genesis block');
  const sealed = new Map<string, Transaction>();
  const book = new BalanceBook();
  const issued = new Map<string, bigint>();
  let parent: BlockHeader | null = null;
  for (let number = 0; number <= latest.number; number += 1) {
    const block = await store.getBlock(number);
    if (block === null) throw new Error(`block ${number} is missing`);
    const check = checkBlock(block, parent);
    if (!check.ok) throw new Error(`block ${number}: ${check.reason}`);
    const records = await readTransactions(store, block.transactions);
    for (const [position, tx_hash] of block.transactions.entries()) {
      if (sealed.has(tx_hash)) throw new Error(`transaction ${tx_hash} is in two blocks`);
      const tx = records[position] ?? null;
      if (tx === null) throw new Error(`block ${number} names an unknown transaction ${tx_hash}`);
      if (transactionHash(tx) !== tx_hash) throw new Error(`transaction ${tx_hash} does not hash to its hash`);
      if (tx.block_number !== number || tx.position !== position || tx.block_hash !== block.hash) {
        throw new Error(`transaction ${tx_hash} claims block ${tx.block_number} position ${tx.position}, but sits in block ${number} at ${position}`);
      }
      const outcome = book.apply(tx);
      if (outcome.status !== tx.status || outcome.error !== tx.error) {
        throw new Error(`transaction ${tx_hash} is ${tx.status}/${tx.error} but replays as ${outcome.status}/${outcome.error}`);
      }
      if (outcome.status === 'confirmed') issued.set(tx.token, (issued.get(tx.token) ?? 0n) + supplyDelta(tx));
      sealed.set(tx_hash, tx);
    }
    parent = block;
  }
  return { latest_block_number: latest.number, sealed, book, issued };
}

/** Reads transactions a chunk at a time, the reads of a chunk at once (a pooled store answers them in parallel). */
async function readTransactions(store: LedgerStore, tx_hashes: readonly string[]): Promise<Array<Transaction | null>> {
  const records: Array<Transaction | null> = [];
  for (let start = 0; start < tx_hashes.length; start += READ_CHUNK) {
    records.push(...(await Promise.all(tx_hashes.slice(start, start + READ_CHUNK).map((tx_hash) => store.getTransaction(tx_hash)))));
  }
  return records;
}

/** Audits the chain of `store` (then closes it) and expects every `acknowledged` hash to be sealed in it. */
export async function expectAcknowledgedInChain(store: LedgerStore, acknowledged: Iterable<string>): Promise<ChainAudit> {
  try {
    const audit = await auditChain(store);
    for (const hash of acknowledged) expect(audit.sealed.has(hash), hash).toBe(true);
    return audit;
  } finally {
    await store.close();
  }
}
