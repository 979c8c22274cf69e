import { describe, expect, it } from 'vitest';
import type { BlockHeader } from '../../src/domain/block.js';
import { BlockHeaderCache, PAGES_KEPT_MAX } from '../../src/service/block-header-cache.js';

const header = (number: number): BlockHeader => ({
  number, hash: `0x${String(number).padStart(64, '0')}`, parent_hash: `0x${'00'.repeat(32)}`, timestamp: 1_800_000_000 + number,
  transactions_count: 1, transactions_root: `0x${'ab'.repeat(32)}`,
});
const range = (from: number, count: number) => Array.from({ length: count }, (_, index) => header(from - index));

describe('BlockHeaderCache', () => {
  it('serves a page only when every header of it is cached, newest first, stopping at genesis', () => {
    const cache = new BlockHeaderCache();
    expect(cache.page(5, 3)).toBeNull();
    expect(cache.remember(range(5, 3))).toEqual(range(5, 3));
    expect(cache.page(5, 3)).toEqual(range(5, 3));
    expect(cache.page(4, 2)).toEqual(range(4, 2));
    expect(cache.page(6, 3)).toBeNull(); // block 6 was never read
    expect(cache.page(5, 4)).toBeNull(); // block 2 was never read
    cache.remember(range(2, 3));
    expect(cache.page(2, 20)).toEqual(range(2, 3));
  });

  it('keeps at most its bound, dropping the header cached first', () => {
    const cache = new BlockHeaderCache(4);
    cache.remember(range(3, 4));
    cache.remember([header(4), header(4)]);
    expect(cache.size).toBe(4);
    expect(cache.page(3, 1)).toBeNull(); // cached first (3, 2, 1, 0 in that order), so dropped for 4
    expect(cache.page(2, 3)).toEqual(range(2, 3));
    expect(cache.page(4, 1)).toEqual([header(4)]);
    expect(() => new BlockHeaderCache(0)).toThrow();
  });

  it('hands out one page object per newest block, limit and offset, and forgets them at the next block', () => {
    const cache = new BlockHeaderCache();
    const page = { blocks: range(5, 3), total: 6, limit: 3, offset: 0 };
    expect(cache.keptPage(6, 3, 0)).toBeUndefined();
    expect(cache.keepPage(page)).toBe(page);
    expect(cache.keptPage(6, 3, 0)).toBe(page);
    expect(cache.keptPage(6, 3, 1)).toBeUndefined();
    expect(cache.keptPage(6, 2, 0)).toBeUndefined();
    expect(cache.keptPage(7, 3, 0)).toBeUndefined(); // a newer chain: the page moved along
    // A request that read the newest number before the last block gets its page, which is not kept.
    const newer = { blocks: range(6, 3), total: 7, limit: 3, offset: 0 };
    cache.keepPage(newer);
    expect(cache.keptPage(6, 3, 0)).toBeUndefined();
    const older = { blocks: range(4, 3), total: 6, limit: 3, offset: 1 };
    expect(cache.keepPage(older)).toBe(older);
    expect(cache.keptPage(6, 3, 1)).toBeUndefined();
    expect(cache.keptPage(7, 3, 0)).toBe(newer);
  });

  it('keeps at most PAGES_KEPT_MAX pages, dropping the one kept first', () => {
    const cache = new BlockHeaderCache();
    const total = PAGES_KEPT_MAX + 10;
    for (let offset = 0; offset <= PAGES_KEPT_MAX; offset += 1) cache.keepPage({ blocks: [], total, limit: 1, offset });
    expect(cache.keptPage(total, 1, 0)).toBeUndefined();
    expect(cache.keptPage(total, 1, 1)).toMatchObject({ offset: 1 });
    expect(cache.keptPage(total, 1, PAGES_KEPT_MAX)).toMatchObject({ offset: PAGES_KEPT_MAX });
  });
});
