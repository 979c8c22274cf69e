/**
 * The ledger's events: what each one says, its stable id, and its one byte encoding. Every delivery
 * (the SSE stream, webhooks, NATS) sends exactly these bytes, so a consumer sees the same event, with
 * the same id, sequence and bytes, on every instance, on every delivery, after any restart.
 *
 * Order: `sequence` is gap-free and strictly increasing over the whole ledger. A transaction's
 * `transaction.accepted` comes when it is durably stored; a block's `transaction.confirmed` /
 * `transaction.failed` events come in block position order and are followed by that block's
 * `block.sealed`, so `block.sealed` closes its block.
 */
import type { Transaction } from '../domain/transaction.js';
import type { TokenRegistry } from '../domain/shared/tokens.js';
import type { StoredEvent } from '../service/ledger-store.js';
import { stringifyExact } from '../views/exact-json.js';
import { blockHeaderView, transactionView } from '../views/record-views.js';

export const EVENT_TYPES = ['transaction.accepted', 'transaction.confirmed', 'transaction.failed', 'block.sealed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The version of the event object's shape; it changes only when a field changes meaning or goes away. */
export const EVENT_SCHEMA_VERSION = 1;

/** An event ready to send: its coordinates, the accounts it touches (for filters), and its bytes. */
export type EncodedEvent = {
  sequence: number;
  id: string;
  type: EventType;
  occurred_at: number;
  /** The `from` and `to` of a transaction event; empty for `block.sealed`. */
  accounts: readonly string[];
  /** The event object `{id, sequence, type, occurred_at, schema_version, data}` as JSON. */
  json: string;
};

/** Where every delivery reads the log from (implemented by the event hub). */
export interface EventFeed {
  /** The last sequence this instance knows to be committed (0 before the first event). */
  head(): number;
  /**
   * Up to `limit` events after `after`, in sequence order, with no gap. Throws `CursorExpiredError`
   * when the event after `after` is older than the retention.
   */
  read(after: number, limit: number): Promise<EncodedEvent[]>;
  /** Calls `listener` whenever the head may have moved; returns the function that stops it. */
  onAdvance(listener: (head: number) => void): () => void;
}

const EVENT_ID_PATTERN = /^evt_([1-9][0-9]{0,15})_[0-9a-f]{12}$/;

/** `evt_<sequence>_<12 hex digits of the transaction or block hash>`: unique, and the same everywhere. */
export function eventId(sequence: number, subject_hash: string): string {
  return `evt_${sequence}_${subject_hash.slice(2, 14)}`;
}

/** The sequence an event id names, or null when `id` is not an event id. */
export function sequenceOfEventId(id: string): number | null {
  const match = EVENT_ID_PATTERN.exec(id);
  if (match === null) return null;
  const sequence = Number(match[1]);
  return Number.isSafeInteger(sequence) ? sequence : null;
}

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

export function encodeEvent(event: StoredEvent, tokens: TokenRegistry): EncodedEvent {
  if (event.type === 'block.sealed') {
    const block = event.block;
    return finish(event.sequence, event.type, block.hash, block.timestamp, [], blockHeaderView(block));
  }
  const tx = event.transaction;
  const accepted = event.type === 'transaction.accepted';
  // The accepted event shows the record as it was while pending, whatever became of it since.
  const record = accepted ? asPending(tx) : tx;
  const occurred_at = event.type === 'transaction.accepted' ? tx.timestamp : event.block_timestamp;
  const accounts = tx.from === tx.to ? [tx.from] : [tx.from, tx.to];
  return finish(event.sequence, event.type, tx.tx_hash, occurred_at, accounts, transactionView(record, tokens));
}

/**
 * The record as it was while pending. Field by field, not a spread: on Node 20 a spread with further
 * fields takes V8's generic path, several µs an event.
 */
function asPending(tx: Transaction): Transaction {
  return {
    tx_hash: tx.tx_hash, from: tx.from, to: tx.to, amount_units: tx.amount_units, token: tx.token, type: tx.type, metadata: tx.metadata,
    nonce: tx.nonce, timestamp: tx.timestamp, status: 'pending', block_number: null, block_hash: null, position: null, error: null,
    min_receive_units: tx.min_receive_units, amount_out_units: null, token_out: tx.token_out,
  };
}

function finish(sequence: number, type: EventType, subject_hash: string, occurred_at: number, accounts: string[], data: unknown): EncodedEvent {
  const id = eventId(sequence, subject_hash);
  const json = stringifyExact({ id, sequence, type, occurred_at, schema_version: EVENT_SCHEMA_VERSION, data });
  return { sequence, id, type, occurred_at, accounts, json };
}
