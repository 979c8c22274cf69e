/** The SDK's exact-amount reading: top-level numbers only, exactly as written, never a nested one. */
import fc from 'fast-check';
import { parseWithExactNumbers, plainDecimal, topLevelNumberTexts } from '@tabula/client';
import { describe, expect, it } from 'vitest';

describe('topLevelNumberTexts', () => {
  it('returns the source text of top-level numbers beyond double precision', () => {
    const text = '{"tx_hash":"0xab","amount":90071992.54740993,"metadata":{"amount":1},"nonce":"x"}';
    expect(topLevelNumberTexts(text, new Set(['amount']))).toEqual(new Map([['amount', '90071992.54740993']]));
    expect(parseWithExactNumbers(text, ['amount'])).toMatchObject({ amount: 90071992.54740993, amount_text: '90071992.54740993', metadata: { amount: 1 } });
  });

  it('is not fooled by keys, braces or quotes inside strings and nested values', () => {
    const text = ' { "note" : "\\"amount\\":5, {\\"x\\"}" , "list":[{"amount":2},"}"], "amount" : -0.5e3 ,"native":1}';
    expect(topLevelNumberTexts(text, new Set(['amount', 'native', 'note']))).toEqual(new Map([['amount', '-0.5e3'], ['native', '1']]));
    expect(plainDecimal('-0.5e3')).toBe('-500');
    expect(plainDecimal('1e-8')).toBe('0.00000001');
    expect(plainDecimal('12.5E1')).toBe('125');
  });

  it('property: agrees with JSON.parse on every top-level number of any object, in any layout', () => {
    const key = fc.constantFrom('amount', 'native', 'usdg', 'metadata', 'a"b', '\\', '}');
    const object = fc.dictionary(key, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 });
    fc.assert(
      fc.property(object, fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        const keys = new Set(Object.keys(value));
        const found = topLevelNumberTexts(text, keys);
        const parsed = JSON.parse(text) as Record<string, unknown>;
        for (const name of keys) {
          const member = parsed[name];
          if (typeof member === 'number') expect(Number(found.get(name))).toBe(member);
          else expect(found.has(name)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});
