/**
 * Serialised answers for records that never change once sealed: a sealed transaction (confirmed or
 * failed) and a block. Kept as the exact bytes sent, with a strong ETag (SHA-256 of those bytes), so a
 * hot read costs a map look-up instead of a store read and a serialisation. Bounded by bytes
 * (READ_CACHE_MAX_BYTES); the least recently used answers are dropped first. Pending transactions,
 * balances, pages and statistics are never put here: they change. An account's history page is made
 * from its transactions' answers kept here, its pending ones read afresh; a page whose transactions are
 * all sealed is kept under its account's newest transaction, final as long as that is the newest
 * (src/http/sealed-answers.ts).
 */
import { hash } from 'node:crypto';
import { assert } from '../domain/shared/errors.js';

export type CachedAnswer = { readonly body: string; readonly etag: string };

/** What an entry costs beyond its body: the key, the ETag, and the map's own bookkeeping (an estimate). */
const ENTRY_OVERHEAD_BYTES = 160;
/** One answer may take at most this share of the budget: a few huge blocks never push out everything else. */
const ENTRY_SHARE_MAX = 8;

export const READ_CACHE_DEFAULT_BYTES = 32 * 1024 * 1024;
/** The largest READ_CACHE_MAX_BYTES accepted: 1 GiB. */
export const READ_CACHE_LIMIT_BYTES = 1024 * 1024 * 1024;

export class SealedRecordCache {
  /** Insertion order is recency: a hit moves its entry to the end; eviction takes from the start. */
  private readonly entries = new Map<string, CachedAnswer>();
  private bytes_used = 0;
  private hit_count = 0;
  private miss_count = 0;

  /** `bytes_max` 0 turns the cache off (every look-up misses, nothing is kept). */
  constructor(readonly bytes_max: number) {
    assert(Number.isSafeInteger(bytes_max) && bytes_max >= 0, 'the read cache budget is a whole number of bytes');
  }

  get(key: string): CachedAnswer | undefined {
    const found = this.entries.get(key);
    if (found === undefined) {
      this.miss_count += 1;
      return undefined;
    }
    this.hit_count += 1;
    this.entries.delete(key);
    this.entries.set(key, found);
    return found;
  }

  /** Keeps `body` as the answer for `key` (if it fits the budget) and returns it with its ETag either way. */
  put(key: string, body: string): CachedAnswer {
    const answer: CachedAnswer = { body, etag: etagOf(body) };
    const cost = entryCost(key, body);
    if (cost > this.bytes_max / ENTRY_SHARE_MAX) return answer;
    const previous = this.entries.get(key);
    if (previous !== undefined) this.remove(key, previous);
    this.entries.set(key, answer);
    this.bytes_used += cost;
    for (const [oldest_key, oldest] of this.entries) {
      if (this.bytes_used <= this.bytes_max) break;
      this.remove(oldest_key, oldest);
    }
    assert(this.bytes_used <= this.bytes_max, 'the read cache stays within its budget');
    return answer;
  }

  get bytes(): number {
    return this.bytes_used;
  }

  get size(): number {
    return this.entries.size;
  }

  get hits(): number {
    return this.hit_count;
  }

  get misses(): number {
    return this.miss_count;
  }

  private remove(key: string, answer: CachedAnswer): void {
    this.entries.delete(key);
    this.bytes_used -= entryCost(key, answer.body);
  }
}

function entryCost(key: string, body: string): number {
  // Answers are ASCII JSON (ids may not be: counted at their UTF-16 length, an upper bound of V8's storage).
  return body.length * (isOneByte(body) ? 1 : 2) + key.length + ENTRY_OVERHEAD_BYTES;
}

function isOneByte(text: string): boolean {
  return !/[^\u0000-\u00ff]/.test(text);
}

/** A strong validator: the same bytes always give the same tag, on every instance. */
export function etagOf(body: string): string {
  return `"${hash('sha256', body, 'base64url').slice(0, 27)}"`;
}

/**
 * Whether an `If-None-Match` header (RFC 9110 section 13.1.2) matches `etag`: `*`, or a list of tags
 * one of which is the same (weak comparison: a `W/` prefix is ignored).
 */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const trimmed = header.trim();
  if (trimmed === '*') return true;
  return trimmed.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
