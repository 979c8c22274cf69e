/** The SDK's exact-amount reading: top-level numbers only, exactly as written, never a nested one; lists record by record. */
import fc from 'fast-check';
import { parseWithExactNumbers, plainDecimal, topLevelArrayItemTexts, topLevelNumberTexts } from '@tabula/client';
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

describe('topLevelArrayItemTexts', () => {
  it('returns the source text of each record of a top-level list, so that each amount is read exactly', () => {
    const text = '{"user_id":"a","note":"\\"transactions\\":[1]","transactions":[ {"amount":90071992.54740993,"metadata":{"amount":1}} , {"amount":1e-8}],"next_cursor":"7"}';
    const items = topLevelArrayItemTexts(text, 'transactions');
    expect(items).toEqual(['{"amount":90071992.54740993,"metadata":{"amount":1}}', '{"amount":1e-8}']);
    expect(items.map((item) => parseWithExactNumbers(item, ['amount']).amount_text)).toEqual(['90071992.54740993', '0.00000001']);
    expect(topLevelArrayItemTexts('{"transactions":[]}', 'transactions')).toEqual([]);
    expect(topLevelArrayItemTexts('{"transactions":null}', 'transactions')).toEqual([]);
    expect(topLevelArrayItemTexts('[{"transactions":[1]}]', 'transactions')).toEqual([]);
  });

  it('property: each text parses to the element JSON.parse finds, in any layout', () => {
    const object = fc.record({ before: fc.jsonValue({ maxDepth: 2 }), transactions: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }), after: fc.jsonValue({ maxDepth: 2 }) });
    fc.assert(
      fc.property(object, fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        const parsed = JSON.parse(text) as { transactions: unknown[] };
        expect(topLevelArrayItemTexts(text, 'transactions').map((item) => JSON.parse(item) as unknown)).toEqual(parsed.transactions);
      }),
      { numRuns: 300 },
    );
  });
});
