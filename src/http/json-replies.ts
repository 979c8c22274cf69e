/**
 * JSON answers the routes write themselves: exact views sent as text, JSON kept per object that never
 * changes, and an account's history page put together from kept texts. The views are src/views.
 */
import type { FastifyReply } from 'fastify';
import type { AccountHistoryPage } from '../service/ledger-service.js';
import { stringifyExact } from '../views/exact-json.js';
import { historyCursor } from './parameters.js';

/**
 * A page of an account's history, `{user_id, transactions, next_cursor}`: its transactions are the JSON
 * texts `GET /transactions/{hash}` answers (sealed ones kept serialised), put in as they are.
 */
export function accountHistoryJson(page: AccountHistoryPage, transactions: readonly string[]): string {
  const next_cursor = page.next_before_seq === null ? null : historyCursor(page.next_before_seq);
  return `{"user_id":${JSON.stringify(page.user_id)},"transactions":[${transactions.join(',')}],"next_cursor":${JSON.stringify(next_cursor)}}`;
}

/** Sends a view whose amounts must keep their exact decimal text (not Fastify's number serializer). */
export function sendExact(reply: unknown, view: unknown): FastifyReply {
  return sendJsonText(reply, stringifyExact(view));
}

/**
 * `write` made to run once per object: for records that never change once made (a sealed header, the
 * statistics of one second and block), whose holders hand every request the same object. The JSON
 * lives as long as the object does.
 */
export function jsonOncePerObject<Value extends object>(write: (value: Value) => string): (value: Value) => string {
  const written = new WeakMap<Value, string>();
  return (value) => {
    let json = written.get(value);
    if (json === undefined) {
      json = write(value);
      written.set(value, json);
    }
    return json;
  };
}

/** Sends JSON text the route wrote itself (its schema's serializer is skipped: the text must be what it would write). */
export function sendJsonText(reply: unknown, json: string): FastifyReply {
  return (reply as FastifyReply).type('application/json; charset=utf-8').send(json);
}
