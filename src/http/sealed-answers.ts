/**
 * Answers for sealed records (src/read-cache): served from the cache of serialised bytes with their
 * ETag and `Cache-Control: immutable`, or 304 when the client already holds them.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { matchesIfNoneMatch, type CachedAnswer, type SealedRecordCache } from '../read-cache/sealed-record-cache.js';
import { stringifyExact } from './exact-json.js';

/** Private: every answer needs a token, so a shared cache must not hand it to a caller without one. */
export const SEALED_CACHE_CONTROL = 'private, max-age=31536000, immutable';
/** A pending transaction changes when it is sealed: never reused without asking again. */
export const PENDING_CACHE_CONTROL = 'no-store';

/** Serialises `view` (exact numbers kept) and keeps it as the answer for `key`. */
export function keepSealed(cache: SealedRecordCache, key: string, view: unknown): CachedAnswer {
  return cache.put(key, stringifyExact(view));
}

export function sendSealed(request: FastifyRequest, reply: FastifyReply, answer: CachedAnswer): FastifyReply {
  reply.header('etag', answer.etag).header('cache-control', SEALED_CACHE_CONTROL);
  if (matchesIfNoneMatch(request.headers['if-none-match'], answer.etag)) return reply.code(304).send();
  return reply.type('application/json; charset=utf-8').send(answer.body);
}
