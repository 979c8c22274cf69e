/**
 * Turns what a store read for the event log (accepted transactions by event sequence, blocks by their
 * first sequence, and the outcomes of those blocks) into the events in sequence order. Shared by the
 * SQLite and PostgreSQL stores, so both derive the same log from the same rows.
 */
import type { BlockHeader } from '../domain/block.js';
import { assert } from '../domain/shared/errors.js';
import type { Transaction } from '../domain/transaction.js';
import type { StoredEvent } from '../service/ledger-store.js';

/**
 * Each list in its order, cut by the store at `limit` rows (`blocks` at `limit + 1`: its first block
 * may hold no event after the cursor).
 */
export type EventRows = {
  /** Transactions with an accepted event after the cursor, by event sequence. */
  accepted: ReadonlyArray<{ sequence: number; transaction: Transaction }>;
  /** Blocks with events, from the one that may hold the event after the cursor, by number. */
  blocks: ReadonlyArray<{ first_sequence: number; header: BlockHeader }>;
  /** Sealed transactions of those blocks whose outcome event is after the cursor, by block and position. */
  sealed: readonly Transaction[];
};

export function collectEvents(rows: EventRows, after: number, limit: number): StoredEvent[] {
  const blocks = new Map(rows.blocks.map((block) => [block.header.number, block]));
  const events: StoredEvent[] = rows.accepted.map(({ sequence, transaction }) => ({ sequence, type: 'transaction.accepted', transaction }));
  for (const transaction of rows.sealed) {
    const block = blocks.get(transaction.block_number ?? -1);
    assert(block !== undefined && transaction.position !== null, 'an outcome event belongs to a block that was read');
    assert(transaction.status !== 'pending', 'an outcome event is for a sealed transaction');
    const type = transaction.status === 'confirmed' ? 'transaction.confirmed' : 'transaction.failed';
    events.push({ sequence: block.first_sequence + transaction.position, type, transaction, block_timestamp: block.header.timestamp });
  }
  for (const { first_sequence, header } of rows.blocks) {
    events.push({ sequence: first_sequence + header.transactions_count, type: 'block.sealed', block: header });
  }
  events.sort((a, b) => a.sequence - b.sequence);
  const complete_through = completeThrough(rows, blocks, limit);
  const found = events.filter((event) => event.sequence > after);
  const taken: StoredEvent[] = [];
  for (const event of found) {
    const expected = after + 1 + taken.length;
    if (taken.length >= limit || expected > complete_through) break;
    assert(event.sequence === expected, `the event log has no gap or duplicate (expected ${expected}, read ${event.sequence})`);
    taken.push(event);
  }
  return taken;
}

/** The last sequence up to which every source was read whole: a list cut at `limit` may stop short of the others. */
function completeThrough(rows: EventRows, blocks: Map<number, EventRows['blocks'][number]>, limit: number): number {
  let through = Number.POSITIVE_INFINITY;
  const last_accepted = rows.accepted.at(-1);
  if (rows.accepted.length >= limit && last_accepted !== undefined) through = Math.min(through, last_accepted.sequence);
  const last_block = rows.blocks.at(-1);
  if (rows.blocks.length > limit && last_block !== undefined) {
    through = Math.min(through, last_block.first_sequence + last_block.header.transactions_count);
  }
  const last_sealed = rows.sealed.at(-1);
  if (rows.sealed.length >= limit && last_sealed !== undefined) {
    const block = blocks.get(last_sealed.block_number ?? -1);
    if (block !== undefined) through = Math.min(through, block.first_sequence + (last_sealed.position ?? 0));
  }
  return through;
}
