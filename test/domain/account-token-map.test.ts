import { describe, expect, it } from 'vitest';
import { AccountTokenMap } from '../../src/domain/account-token-map.js';

describe('AccountTokenMap', () => {
  it('keeps one value per account and token, counts them, and forgets them', () => {
    const map = new AccountTokenMap<number>();
    map.set('alice', 'TAB', 1);
    map.set('alice', 'USDG', 2);
    map.set('alice', 'TAB', 3);
    // An id that would collide with another pair if the two were joined into one string.
    map.set('alice\u0000TAB', '', 4);
    expect([map.get('alice', 'TAB'), map.get('alice', 'USDG'), map.get('bob', 'TAB'), map.size]).toEqual([3, 2, undefined, 3]);
    expect([...map.values()].sort()).toEqual([2, 3, 4]);
    map.delete('alice', 'TAB');
    map.delete('alice', 'TAB');
    map.delete('nobody', 'XYZ');
    expect([map.get('alice', 'TAB'), map.size]).toEqual([undefined, 2]);
    map.clear();
    expect([map.size, [...map.values()]]).toEqual([0, []]);
  });
});
