import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { etagOf, matchesIfNoneMatch, SealedRecordCache } from '../../src/read-cache/sealed-record-cache.js';

describe('SealedRecordCache', () => {
  it('returns what was kept, with a tag that depends only on the bytes', () => {
    const cache = new SealedRecordCache(100_000);
    const kept = cache.put('transaction:0xaa', '{"a":1}');
    expect(kept.etag).toBe(etagOf('{"a":1}'));
    expect(etagOf('{"a":1}')).not.toBe(etagOf('{"a":2}'));
    expect(cache.get('transaction:0xaa')).toEqual(kept);
    expect(cache.get('transaction:0xbb')).toBeUndefined();
    expect({ hits: cache.hits, misses: cache.misses, size: cache.size }).toEqual({ hits: 1, misses: 1, size: 1 });
  });

  it('drops the least recently read first when over budget', () => {
    const body = 'x'.repeat(1000);
    const cache = new SealedRecordCache(8 * 1300);
    for (let index = 0; index < 8; index += 1) cache.put(`k${index}`, body);
    const held = cache.size;
    expect(held).toBeGreaterThan(4);
    cache.get('k0');
    cache.put('k8', body);
    expect(cache.get('k0')).toBeDefined();
    expect(cache.get(`k${8 - held + 1}`)).toBeUndefined();
    expect(cache.bytes).toBeLessThanOrEqual(cache.bytes_max);
  });

  it('does not keep an answer larger than an eighth of the budget (but still tags it)', () => {
    const cache = new SealedRecordCache(8000);
    const answer = cache.put('block:1', 'y'.repeat(2000));
    expect(answer.etag).toBe(etagOf('y'.repeat(2000)));
    expect(cache.size).toBe(0);
  });

  it('keeps nothing with a budget of 0', () => {
    const cache = new SealedRecordCache(0);
    cache.put('k', '{}');
    expect(cache.get('k')).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });

  it('never holds more than its budget, whatever is put and read (property)', () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 50_000 }),
      fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 30 }), fc.string({ maxLength: 3000, unit: 'binary' })), { maxLength: 200 }),
      (budget, operations) => {
        const cache = new SealedRecordCache(budget);
        const kept = new Map<string, string>();
        for (const [is_put, key_index, body] of operations) {
          const key = `k${key_index}`;
          if (is_put) {
            cache.put(key, body);
            kept.set(key, body);
          } else {
            const found = cache.get(key);
            // What is found is what was last put under that key, never another answer.
            if (found !== undefined) expect(found.body).toBe(kept.get(key));
          }
          expect(cache.bytes).toBeLessThanOrEqual(budget);
          expect(cache.bytes).toBeGreaterThanOrEqual(0);
        }
      },
    ));
  });
});

describe('matchesIfNoneMatch', () => {
  const etag = etagOf('{}');
  it.each([
    [etag, true], [`W/${etag}`, true], [`"a", ${etag}`, true], ['*', true], [' * ', true],
    ['"a"', false], ['', false], [etag.slice(1), false], [undefined, false],
  ])('%s → %s', (header, expected) => {
    expect(matchesIfNoneMatch(header, etag)).toBe(expected);
  });
});
