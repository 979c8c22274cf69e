/** Which events from the stream may change what each live view shows (so it loads again). */
import type { LedgerEvent } from './event-stream.js';

/** The statistics, the latest blocks and the block list change with each new block. */
export function isBlockSealed(event: LedgerEvent): boolean {
  return event.type === 'block.sealed';
}

/** A block not sealed yet (its page waits for it) exists once a block at least as high is sealed. */
export function sealsBlock(event: LedgerEvent, number: number): boolean {
  return event.type === 'block.sealed' && event.data.number >= number;
}

/** A transaction's page: its acceptance (it exists), and its outcome (confirmed or failed, in a block). */
export function concernsTransaction(event: LedgerEvent, tx_hash: string): boolean {
  return event.type !== 'block.sealed' && event.data.tx_hash.toLowerCase() === tx_hash.toLowerCase();
}

/** An account's history: a transaction that it sends or receives, new (accepted) or decided. */
export function touchesAccount(event: LedgerEvent, user: string): boolean {
  return event.type !== 'block.sealed' && (event.data.from === user || event.data.to === user);
}

/** An account's balances come from confirmed transactions only. */
export function changesBalance(event: LedgerEvent, user: string): boolean {
  return event.type === 'transaction.confirmed' && touchesAccount(event, user);
}
