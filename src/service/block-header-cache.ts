/**
 * Sealed block headers never change (the stores refuse updates to a sealed block), so once read a
 * header can be served from memory: a page of the chain is then one cheap look-up of the newest block
 * number plus map reads. Bounded: when full, the header cached first goes first.
 */
import type { BlockHeader } from '../domain/block.js';

export const BLOCK_HEADERS_CACHED_MAX = 10_000;

export class BlockHeaderCache {
  private readonly headers = new Map<number, BlockHeader>();
  private readonly headers_max: number;

  constructor(headers_max = BLOCK_HEADERS_CACHED_MAX) {
    if (!Number.isSafeInteger(headers_max) || headers_max < 1) throw new Error(`headers_max must be a positive integer, got ${headers_max}`);
    this.headers_max = headers_max;
  }

  /** Headers `from_number`, `from_number − 1`, … (`limit` of them, fewer at genesis), or null if any is not cached. */
  page(from_number: number, limit: number): BlockHeader[] | null {
    const count = Math.min(limit, from_number + 1);
    const page: BlockHeader[] = new Array(count);
    for (let index = 0; index < count; index += 1) {
      const header = this.headers.get(from_number - index);
      if (header === undefined) return null;
      page[index] = header;
    }
    return page;
  }

  /** Caches `headers` (as read from the store) and returns them. */
  remember(headers: BlockHeader[]): BlockHeader[] {
    for (const header of headers) {
      if (this.headers.has(header.number)) continue;
      if (this.headers.size >= this.headers_max) this.evictOldest();
      this.headers.set(header.number, header);
    }
    return headers;
  }

  get size(): number {
    return this.headers.size;
  }

  private evictOldest(): void {
    const oldest = this.headers.keys().next();
    if (oldest.done !== true) this.headers.delete(oldest.value);
  }
}
