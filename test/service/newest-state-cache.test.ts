import { describe, expect, it } from 'vitest';
import { NewestStateCache } from '../../src/service/newest-state-cache.js';

describe('NewestStateCache', () => {
  it('serves a value only while the block it was read at is still the newest', () => {
    const cache = new NewestStateCache<string>();
    expect(cache.get('alice', 3)).toBeUndefined();
    cache.set('alice', 3, 'at 3');
    expect(cache.get('alice', 3)).toBe('at 3');
    expect(cache.get('alice', 4)).toBeUndefined();
    expect(cache.get('alice', null)).toBeUndefined();
    cache.set('alice', 4, 'at 4');
    expect([cache.get('alice', 3), cache.get('alice', 4), cache.size]).toEqual([undefined, 'at 4', 1]);
    // Before genesis there is no block: that too is a state of its own.
    cache.set('bob', null, 'empty');
    expect(cache.get('bob', null)).toBe('empty');
  });

  it('keeps at most its bound, dropping the entry kept longest', () => {
    const cache = new NewestStateCache<number>(2);
    cache.set('a', 1, 1);
    cache.set('b', 1, 2);
    cache.set('a', 1, 3); // kept again: now the newest
    cache.set('c', 1, 4);
    expect([cache.get('a', 1), cache.get('b', 1), cache.get('c', 1), cache.size]).toEqual([3, undefined, 4, 2]);
    expect(() => new NewestStateCache(0)).toThrow(/positive integer/);
  });
});
