import { describe, expect, it } from 'vitest';
import type { BlockHeader } from '../../src/domain/block.js';
import { BlockHeaderCache } from '../../src/service/block-header-cache.js';

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
});
