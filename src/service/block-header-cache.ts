/**
 * Sealed block headers never change (the stores refuse updates to a sealed block), so once read a
 * header can be served from memory: a page of the chain is then one cheap look-up of the newest block
 * number plus map reads. Bounded: when full, the header cached first goes first.
 *
 * A page (its headers, `total`, `limit` and `offset`) is fixed by the newest block number and the two
 * parameters, so until the next block the same page object is handed to every request for it, and
 * whoever writes it (the HTTP route) can write it once. Only the pages of the newest `total` seen are
 * kept, at most `PAGES_KEPT_MAX` of them.
 */
import type { BlockHeader } from '../domain/block.js';

export const BLOCK_HEADERS_CACHED_MAX = 10_000;
export const PAGES_KEPT_MAX = 1_000;

export type BlockPage = { blocks: BlockHeader[]; total: number; limit: number; offset: number };

export class BlockHeaderCache {
  private readonly headers = new Map<number, BlockHeader>();
  private readonly headers_max: number;
  private readonly pages = new Map<string, BlockPage>();
  /** The `total` (newest block number + 1) of the pages kept. */
  private pages_total = -1;

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

  /** The page kept for `total`, `limit` and `offset`, if any. */
  keptPage(total: number, limit: number, offset: number): BlockPage | undefined {
    return total === this.pages_total ? this.pages.get(pageKey(limit, offset)) : undefined;
  }

  /**
   * Keeps `page` and returns it; a page of a newer chain drops the pages kept, one of an older chain (a
   * request that read the newest number before the last block) is returned without being kept.
   */
  keepPage(page: BlockPage): BlockPage {
    if (page.total < this.pages_total) return page;
    if (page.total > this.pages_total) {
      this.pages.clear();
      this.pages_total = page.total;
    }
    if (this.pages.size >= PAGES_KEPT_MAX) this.pages.delete(this.pages.keys().next().value as string);
    this.pages.set(pageKey(page.limit, page.offset), page);
    return page;
  }

  get size(): number {
    return this.headers.size;
  }

  private evictOldest(): void {
    const oldest = this.headers.keys().next();
    if (oldest.done !== true) this.headers.delete(oldest.value);
  }
}

function pageKey(limit: number, offset: number): string {
  return `${limit}:${offset}`;
}
