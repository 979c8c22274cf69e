/**
 * An account's history as the account sees it: which way each transaction went and who was on the
 * other side, and which page of the history is shown. Pure, so it is tested without a browser.
 */
import type { Transaction } from '@tabula/client';

export const HISTORY_PAGE_SIZE = 20;

/** A transfer is `sent` or `received`; a mint, a burn or a swap is named by its type. */
export type Direction = 'sent' | 'received' | 'mint' | 'burn' | 'swap';

export type Side = {
  direction: Direction;
  /** The other party: `to` when the account is `from`, else `from` (the account itself for a mint its issuer receives). */
  counterparty: string;
  /** How the counterparty reads after the direction: `to` bob when the account is `from`, else `from` carol. */
  preposition: 'to' | 'from';
};

/** How `tx` reads from `user`'s side (the user is its `from` or its `to`, as in a history page). */
export function sideOf(tx: Pick<Transaction, 'from' | 'to' | 'type'>, user: string): Side {
  const is_sender = tx.from === user;
  const direction: Direction = tx.type === 'transfer' ? (is_sender ? 'sent' : 'received') : tx.type;
  return is_sender ? { direction, counterparty: tx.to, preposition: 'to' } : { direction, counterparty: tx.from, preposition: 'from' };
}

/**
 * Which page is shown: the first (no cursor: the newest transactions, followed live) or an older one,
 * reached with the `next_cursor` of the page before it. `number` counts from 1 for the reader.
 */
export type HistoryPosition = { cursor: string | null; number: number };

export const NEWEST_PAGE: HistoryPosition = { cursor: null, number: 1 };

/** The page after `shown`, named by `shown`'s `next_cursor` (opaque: passed back as it came). */
export function olderPage(shown: HistoryPosition, next_cursor: string): HistoryPosition {
  return { cursor: next_cursor, number: shown.number + 1 };
}

/** The places, counted from the newest, of the first and last of the `count` (≥ 1) transactions of a page: 21 and 40. */
export function pageRange(position: HistoryPosition, count: number): { first: number; last: number } {
  const first = (position.number - 1) * HISTORY_PAGE_SIZE + 1;
  return { first, last: first + count - 1 };
}
