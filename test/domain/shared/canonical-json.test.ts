/**
 * RFC 8785 (JSON Canonicalization Scheme) behaviour of canonicalJson.
 *
 * Sources of the expected outputs:
 * - RFC 8785 section 3.2.3 (property sorting example) and Appendix B (number serialization samples,
 *   IEEE-754 bit patterns → expected text).
 * - The RFC authors' test data, repository cyberphone/json-canonicalization, files
 *   testdata/input/{weird,values,structures}.json and testdata/output/{weird,values,structures}.json.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../../src/domain/shared/canonical-json.js';

function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe('canonicalJson: the published JCS test data (cyberphone/json-canonicalization testdata)', () => {
  it('weird.json: keys sorted by UTF-16 code units, the surrogate pair before U+FB33', () => {
    const input = JSON.parse(
      '{\n  "\\u20ac": "Euro Sign",\n  "1": "One",\n  "\\u0080": "Control\\u007f",\n  "\\ud83d\\ude02": "Smiley",\n' +
        '  "\\u00f6": "Latin Small Letter O With Diaeresis",\n  "\\ufb33": "Hebrew Letter Dalet With Dagesh",\n' +
        '  "</script>": "Browser Challenge"\n}\n',
    ) as JsonValue;
    expect(canonicalJson(input)).toBe(
      '{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude02":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('values.json: numbers, escaping and literals', () => {
    const input = JSON.parse(
      '{\n  "numbers": [1E30, 4.50, 333333333.33333329, 2e-3, 0.000000000000000000000000001],\n' +
        '  "escaping": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n  "literals": [null, true, false]\n}',
    ) as JsonValue;
    expect(canonicalJson(input)).toBe(
      '{"escaping":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/","literals":[null,true,false],' +
        '"numbers":[1e+30,4.5,333333333.3333333,0.002,1e-27]}',
    );
  });

  it('structures.json: nested objects and arrays, empty key, digit keys sorted as strings', () => {
    const input = JSON.parse(
      '{\n  "1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0},\n  "10": { },\n  "": "empty",\n  "a": { },\n  "111": [ { } ],\n  "A": { }\n}',
    ) as JsonValue;
    expect(canonicalJson(input)).toBe('{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}');
  });
});

describe('canonicalJson: property ordering (RFC 8785 section 3.2.3)', () => {
  it('sorts the RFC example by UTF-16 code units', () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",' +
        '"\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    ) as JsonValue;
    // The RFC's expected order: \r, 1, U+0080, U+00F6, U+20AC, U+1F600 (as D83D DE00), U+FB33.
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('puts a non-BMP key (surrogate pair D83D…) before a BMP key above U+E000, unlike code-point order', () => {
    const astral = '\u{1F600}'; // code point 0x1F600, UTF-16 D83D DE00
    const privateUse = '\uE000';
    const dalet = '\uFB33';
    const text = canonicalJson({ [dalet]: 3, [privateUse]: 2, [astral]: 1 });
    expect(text).toBe(`{"${astral}":1,"${privateUse}":2,"${dalet}":3}`);
    // Code-point order would be the other way round; make sure the test can tell the two apart.
    expect([astral, privateUse, dalet].sort((a, b) => (a.codePointAt(0) ?? 0) - (b.codePointAt(0) ?? 0))).toEqual([privateUse, dalet, astral]);
  });

  it('orders a key before its extensions and compares code units, not locale', () => {
    expect(canonicalJson({ ab: 1, aa: 2, a: 3, B: 4, b: 5, 'a\u0000': 6 })).toBe('{"B":4,"a":3,"a\\u0000":6,"aa":2,"ab":1,"b":5}');
    expect(canonicalJson({ 'é': 1, z: 2, 'e\u0301': 3 })).toBe('{"e\u0301":3,"z":2,"é":1}');
  });

  it('sorts nested objects too but keeps array order', () => {
    expect(canonicalJson({ b: [3, 1, { z: 1, y: [{ d: 1, c: 2 }] }], a: { d: null, c: true } })).toBe(
      '{"a":{"c":true,"d":null},"b":[3,1,{"y":[{"c":2,"d":1}],"z":1}]}',
    );
  });
});

describe('canonicalJson: numbers (RFC 8785 section 3.2.2.3 and Appendix B)', () => {
  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('IEEE-754 %s serializes as %s', (bits, expected) => {
    expect(canonicalJson(fromBits(bits))).toBe(expected);
    expect(canonicalJson([fromBits(bits)])).toBe(`[${expected}]`);
  });

  it.each([
    [1e21, '1e+21'],
    [1e20, '100000000000000000000'],
    [1e-7, '1e-7'],
    [1e-6, '0.000001'],
    [-0, '0'],
    [0.1, '0.1'],
    [56.0, '56'],
    [4.5, '4.5'],
    [-1.5e-7, '-1.5e-7'],
  ])('%s serializes as %s', (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
  ])('rejects %s, also nested in arrays and objects', (_label, value) => {
    expect(() => canonicalJson(value)).toThrow(TypeError);
    expect(() => canonicalJson([1, value])).toThrow(TypeError);
    expect(() => canonicalJson({ a: { b: [value] } })).toThrow(TypeError);
    expect(() => canonicalJson({ ok: 1, '7ff0000000000000': value })).toThrow(TypeError);
  });
});

describe('canonicalJson: strings (RFC 8785 section 3.2.2.2)', () => {
  it('uses the two-character escapes for \\b \\t \\n \\f \\r, " and \\\\, and lowercase \\u00xx for other controls', () => {
    expect(canonicalJson('\b\t\n\f\r"\\')).toBe('"\\b\\t\\n\\f\\r\\"\\\\"');
    expect(canonicalJson('\u0000\u0001\u000b\u000e\u001f')).toBe('"\\u0000\\u0001\\u000b\\u000e\\u001f"');
    expect(canonicalJson('\u001F')).toBe('"\\u001f"');
  });

  it('writes everything else as is: "/", DEL, C1 controls, U+2028, non-ASCII and astral characters', () => {
    expect(canonicalJson('/')).toBe('"/"');
    expect(canonicalJson('\u007f\u0080\u009f')).toBe('"\u007f\u0080\u009f"');
    expect(canonicalJson('\u2028\u2029')).toBe('"\u2028\u2029"');
    expect(canonicalJson('€ö\u{1F600}')).toBe('"€ö\u{1F600}"');
  });

  it('escapes keys the same way as values', () => {
    expect(canonicalJson({ 'a\nb': 'c"d' })).toBe('{"a\\nb":"c\\"d"}');
  });

  it('writes literals and empty containers without whitespace', () => {
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson(true)).toBe('true');
    expect(canonicalJson(false)).toBe('false');
    expect(canonicalJson([])).toBe('[]');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson([[], {}, [[]], { a: {} }])).toBe('[[],{},[[]],{"a":{}}]');
  });

  // RFC 8785 section 3.2.2.2: lone surrogates "MUST cause a compliant JCS implementation to terminate
  // with an appropriate error". They are reachable: JSON.parse('{"note":"\\ud800"}') yields one, and
  // metadata is hashed with canonicalJson. A third-party JCS library refuses such input, so it could
  // not recompute the tx_hash. canonicalJson instead lets JSON.stringify escape it as "\ud800".
  it('regression: rejects a lone surrogate in a string value or a key (RFC 8785 section 3.2.2.2)', () => {
    const parsed = JSON.parse('{"note":"\\ud800"}') as JsonValue;
    expect(() => canonicalJson(parsed)).toThrow();
    expect(() => canonicalJson('\udc00')).toThrow();
    expect(() => canonicalJson({ 'a\ud83d': 1 })).toThrow();
    // A well-formed pair stays fine.
    expect(canonicalJson('\ud83d\ude00')).toBe('"\u{1F600}"');
  });
});

describe('canonicalJson: properties', () => {
  const json = fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<JsonValue>;

  it('is a fixed point: canonicalising the parse of canonical text gives the same text', () => {
    fc.assert(
      fc.property(json, (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(JSON.parse(text) as JsonValue)).toBe(text);
        expect(text).not.toMatch(/^\s|\s$/);
      }),
      { numRuns: 300 },
    );
  });

  /** An independent UTF-16 code-unit comparison, written out unit by unit. */
  function compareCodeUnits(a: string, b: string): number {
    const length = Math.min(a.length, b.length);
    for (let index = 0; index < length; index += 1) {
      const difference = a.charCodeAt(index) - b.charCodeAt(index);
      if (difference !== 0) return difference;
    }
    return a.length - b.length;
  }

  it('sorts keys by code units whatever their insertion order', () => {
    const pairs = fc.uniqueArray(fc.tuple(fc.string({ unit: 'binary', maxLength: 4 }), fc.integer()), {
      selector: ([key]) => key,
      maxLength: 8,
    });
    const withPermutation = pairs.chain((list) =>
      fc.tuple(fc.constant(list), fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length })),
    );
    fc.assert(
      fc.property(withPermutation, ([list, permuted]) => {
        const sorted = [...list].sort(([a], [b]) => compareCodeUnits(a, b));
        const expected = `{${sorted.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;
        expect(canonicalJson(Object.fromEntries(list))).toBe(expected);
        expect(canonicalJson(Object.fromEntries(permuted))).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });
});
