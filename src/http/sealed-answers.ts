/**
 * Answers for records that never change once sealed (src/read-cache): served from the cache of
 * serialised bytes with their ETag and `Cache-Control: immutable`, or 304 when the client already
 * holds them; a record still pending is read every time and sent `no-store`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { matchesIfNoneMatch, type CachedAnswer, type SealedRecordCache } from '../read-cache/sealed-record-cache.js';
import { assert } from '../domain/shared/errors.js';
import type { Transaction } from '../domain/transaction.js';
import type { HistoryEntry } from '../service/ledger-store.js';
import type { AccountHistoryPage } from '../service/ledger-service.js';
import { stringifyExact } from '../views/exact-json.js';
import type { TurnGathering } from './turn-gathering.js';

/** Private: every answer needs a token, so a shared cache must not hand it to a caller without one. */
export const SEALED_CACHE_CONTROL = 'private, max-age=31536000, immutable';
/** A pending transaction changes when it is sealed: never reused without asking again. */
export const PENDING_CACHE_CONTROL = 'no-store';
const JSON_TYPE = 'application/json; charset=utf-8';

/** Where a sealed record's answer is kept, and the turn's lookups answered together (turn-gathering.ts). */
export type KeptAnswers = { cache: SealedRecordCache; gathering: TurnGathering };

/**
 * Answers the record `key` names, with the turn's other lookups (after the first of the turn, at the
 * turn's end): from the cache when it holds it; otherwise `load`s it, and keeps and sends it with its
 * ETag when it is sealed, or sends it `no-store` when it may still change.
 */
export async function sendRecord(
  request: FastifyRequest, reply: FastifyReply, { cache, gathering }: KeptAnswers, key: string,
  load: () => Promise<{ view: unknown; sealed: boolean }>,
): Promise<FastifyReply> {
  const turn_end = gathering.wait();
  if (turn_end !== null) await turn_end;
  const kept = cache.get(key);
  if (kept !== undefined) return sendSealed(request, reply, kept);
  const { view, sealed } = await load();
  if (!sealed) return reply.header('cache-control', PENDING_CACHE_CONTROL).type(JSON_TYPE).send(stringifyExact(view));
  return sendSealed(request, reply, cache.put(key, stringifyExact(view)));
}

function sendSealed(request: FastifyRequest, reply: FastifyReply, answer: CachedAnswer): FastifyReply {
  reply.header('etag', answer.etag).header('cache-control', SEALED_CACHE_CONTROL);
  if (matchesIfNoneMatch(request.headers['if-none-match'], answer.etag)) return reply.code(304).send();
  return reply.type(JSON_TYPE).send(answer.body);
}

/** The cache's key of a transaction's answer: every answer that carries the record shares it. */
export function transactionKey(tx_hash: string): string {
  return `transaction:${tx_hash}`;
}

/**
 * Each transaction's JSON as `GET /transactions/{hash}` answers it, in the order of `entries`: a sealed
 * one from the cache when it holds it; the others `load`ed in one read (which answers every hash it is
 * given, in its order: LedgerService's `transactionsByHash`) and written by `write`, and kept when sealed
 * by then. A pending one is read every time: it changes when it is sealed.
 */
export async function transactionAnswers(
  cache: SealedRecordCache, entries: readonly HistoryEntry[],
  load: (tx_hashes: string[]) => Promise<readonly Transaction[]>, write: (transaction: Transaction) => string,
): Promise<string[]> {
  const bodies: Array<string | undefined> = entries.map((entry) => (entry.sealed ? cache.get(transactionKey(entry.tx_hash))?.body : undefined));
  const missing = entries.filter((_, index) => bodies[index] === undefined).map((entry) => entry.tx_hash);
  if (missing.length === 0) return bodies as string[];
  const loaded = (await load(missing)).values();
  return bodies.map((kept) => kept ?? answerOf(cache, loaded.next().value, write));
}

/** The JSON of a transaction just read, kept in the cache when it is sealed. */
function answerOf(cache: SealedRecordCache, transaction: Transaction | undefined, write: (transaction: Transaction) => string): string {
  assert(transaction !== undefined, 'every transaction of the page was loaded');
  const body = write(transaction);
  return transaction.status === 'pending' ? body : cache.put(transactionKey(transaction.tx_hash), body).body;
}

/**
 * The cache's key of a page of `user_id`'s history (`limit` entries before `before_seq`) whose newest
 * entry is `newest_seq`. No transaction stored later can be older than that entry (LedgerStore's
 * `newestAccountSeq`), so while it is still the account's newest such one, a page whose entries were all
 * sealed has the same text: a final answer, as a sealed transaction's is. The user id comes last, so
 * what it contains cannot run into the numbers.
 */
export function historyPageKey(user_id: string, limit: number, before_seq: number | null, newest_seq: number): string {
  return `history:${limit}:${before_seq ?? ''}:${newest_seq}:${user_id}`;
}

/** Whether `page`, read after its account's newest entry was found to be `newest_seq`, is final: it starts at that entry and every entry is sealed. */
export function isFinalPage(page: AccountHistoryPage, newest_seq: number): boolean {
  return page.entries[0]?.seq === newest_seq && page.entries.every((entry) => entry.sealed);
}
