import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatUnits, parseAmount, rescaleUnits, UNITS_MAX } from '../../../src/domain/shared/amount.js';
import { InvalidRequestError } from '../../../src/domain/shared/errors.js';

const NATIVE = 8;
const USDG = 6;

/** The error code parseAmount throws for `value`, or 'ok' when it parses. */
function codeOf(value: unknown, decimals: number): string {
  try {
    parseAmount(value, decimals);
    return 'ok';
  } catch (error) {
    if (error instanceof InvalidRequestError) return error.code;
    throw error;
  }
}

describe('parseAmount: fractional digits up to the token decimals', () => {
  it.each([
    ['1', NATIVE, 100_000_000n],
    ['0.00000001', NATIVE, 1n],
    ['1.23456789', NATIVE, 123_456_789n],
    ['0.000001', USDG, 1n],
    ['1.234567', USDG, 1_234_567n],
    ['100.5', NATIVE, 10_050_000_000n],
    ['007.5', USDG, 7_500_000n],
  ])('%s with %i decimals is %s units', (text, decimals, units) => {
    expect(parseAmount(text, decimals)).toBe(units);
  });

  it('accepts exactly `decimals` fractional digits and rejects one more', () => {
    expect(parseAmount('0.12345678', NATIVE)).toBe(12_345_678n);
    expect(codeOf('0.123456789', NATIVE)).toBe('amount_too_precise');
    expect(parseAmount('0.123456', USDG)).toBe(123_456n);
    expect(codeOf('0.1234567', USDG)).toBe('amount_too_precise');
    expect(codeOf(0.1234567, USDG)).toBe('amount_too_precise');
    expect(codeOf(0.000000001, NATIVE)).toBe('amount_too_precise');
    expect(codeOf('0.000000001', NATIVE)).toBe('amount_too_precise');
  });

  it('never rounds silently: 1.000000005 (USDG) and 1.0000000001 (native) are too precise', () => {
    expect(codeOf('1.000000005', USDG)).toBe('amount_too_precise');
    expect(codeOf('1.0000000001', NATIVE)).toBe('amount_too_precise');
  });

  it('allows trailing zeros beyond the decimals, since they change nothing', () => {
    expect(parseAmount('1.50000000000', NATIVE)).toBe(150_000_000n);
    expect(parseAmount('1.50000000000', USDG)).toBe(1_500_000n);
    expect(parseAmount('2.000000000000000000000000000000', USDG)).toBe(2_000_000n);
  });
});

describe('parseAmount: exponent forms', () => {
  it('1e-8 is one base unit of the native token; 1e-9 is too precise', () => {
    expect(parseAmount('1e-8', NATIVE)).toBe(1n);
    expect(parseAmount(1e-8, NATIVE)).toBe(1n);
    expect(codeOf('1e-9', NATIVE)).toBe('amount_too_precise');
    expect(codeOf(1e-9, NATIVE)).toBe('amount_too_precise');
    expect(parseAmount('1e-6', USDG)).toBe(1n);
    expect(codeOf('1e-7', USDG)).toBe('amount_too_precise');
  });

  it('reads 2.5E3, 2.5e+3, 25e2 and 2500 as the same amount', () => {
    const expected = 2500n * 10n ** 8n;
    for (const text of ['2.5E3', '2.5e3', '2.5e+3', '25e2', '2500', '250000e-2']) {
      expect(parseAmount(text, NATIVE)).toBe(expected);
    }
    expect(parseAmount(2.5e3, NATIVE)).toBe(expected);
  });

  it('accepts a mantissa with more fractional digits when the exponent brings it back in range', () => {
    expect(parseAmount('1.23456789123e3', NATIVE)).toBe(123_456_789_123n);
    expect(codeOf('1.234567891234e3', NATIVE)).toBe('amount_too_precise');
  });
});

describe('parseAmount: the storage range', () => {
  // UNITS_MAX = 2^63 − 1 base units = 92233720368.54775807 native = 9223372036854.775807 USDG.
  it('accepts UNITS_MAX exactly and rejects UNITS_MAX + 1', () => {
    expect(parseAmount('92233720368.54775807', NATIVE)).toBe(UNITS_MAX);
    expect(codeOf('92233720368.54775808', NATIVE)).toBe('amount_out_of_range');
    expect(parseAmount('9223372036854.775807', USDG)).toBe(UNITS_MAX);
    expect(codeOf('9223372036854.775808', USDG)).toBe('amount_out_of_range');
    expect(parseAmount(formatUnits(UNITS_MAX, NATIVE), NATIVE)).toBe(UNITS_MAX);
    expect(codeOf(formatUnits(UNITS_MAX + 1n, NATIVE), NATIVE)).toBe('amount_out_of_range');
  });

  it('rejects huge values, as strings and numbers, as out of range', () => {
    expect(codeOf('1e400', NATIVE)).toBe('amount_out_of_range');
    expect(codeOf('1e9999', USDG)).toBe('amount_out_of_range');
    expect(codeOf('100000000000', NATIVE)).toBe('amount_out_of_range');
    expect(codeOf(1e21, NATIVE)).toBe('amount_out_of_range');
    expect(codeOf(1e300, USDG)).toBe('amount_out_of_range');
    expect(codeOf('9'.repeat(60), USDG)).toBe('amount_out_of_range');
  });

  it('rejects a number that overflows to Infinity as invalid', () => {
    expect(codeOf(Number('1e400'), NATIVE)).toBe('invalid_amount');
  });
});

describe('parseAmount: zero and negative amounts', () => {
  it.each([0, -0, -1, -0.5, '0', '0.0', '0e5', '0.00000000', '-1', '-0', '-0.00000001', '0e-9999'])(
    '%s is amount_not_positive',
    (value) => {
      expect(codeOf(value, NATIVE)).toBe('amount_not_positive');
    },
  );
});

describe('parseAmount: values that are not amounts', () => {
  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
    ['true', true],
    ['false', false],
    ['null', null],
    ['undefined', undefined],
    ['an object', { value: 1 }],
    ['an array', [1]],
    ['a bigint', 1n],
    ['an empty string', ''],
    ['a word', 'one'],
    ['"NaN"', 'NaN'],
    ['"Infinity"', 'Infinity'],
    ['a leading plus', '+1'],
    ['a leading dot', '.5'],
    ['a trailing dot', '1.'],
    ['inner whitespace', '1 000'],
    ['surrounding whitespace', ' 1'],
    ['a hex literal', '0x10'],
    ['a comma decimal', '1,5'],
    ['two dots', '1.2.3'],
    ['an exponent without digits', '1e'],
    ['an exponent of five digits', '1e10000'],
    ['text longer than 64 characters', `1.${'0'.repeat(63)}`],
    ['two minus signs', '--1'],
    ['a minus sign before a word', '-abc'],
    ['a minus sign alone', '-'],
  ])('%s is invalid_amount', (_label, value) => {
    expect(codeOf(value, NATIVE)).toBe('invalid_amount');
  });

  it('names the field in the error', () => {
    try {
      parseAmount('x', NATIVE, 'price');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect((error as InvalidRequestError).field).toBe('price');
    }
  });
});

describe('parseAmount: JSON numbers and exactness', () => {
  it('rejects a number with more than 15 significant digits but accepts the same text as a string', () => {
    // 123456789.12345678 has 17 significant digits; the double nearest to it is not that value.
    expect(codeOf(123456789.12345678, NATIVE)).toBe('amount_not_exact');
    expect(parseAmount('123456789.12345678', NATIVE)).toBe(12_345_678_912_345_678n);
    // 2^53 + 1 cannot be a double at all; as a string it is exact.
    expect(codeOf(9007199254740993, 0)).toBe('amount_not_exact');
    expect(parseAmount('9007199254740993', 0)).toBe(9_007_199_254_740_993n);
    expect(codeOf(0.1 + 0.2, NATIVE)).toBe('amount_not_exact');
    expect(codeOf(1234567890123456, 0)).toBe('amount_not_exact');
  });

  it('accepts a number with exactly 15 significant digits', () => {
    expect(parseAmount(1234567.12345678, NATIVE)).toBe(123_456_712_345_678n);
    expect(parseAmount(123456789012345, 0)).toBe(123_456_789_012_345n);
    expect(parseAmount(1.23456789012345e-1, 15)).toBe(123_456_789_012_345n);
  });

  it('counts trailing and leading zeros as not significant', () => {
    expect(parseAmount(1000000000, NATIVE)).toBe(100_000_000_000_000_000n);
    expect(parseAmount(0.00000001, NATIVE)).toBe(1n);
  });

  it.each([
    [1.5, '1.5'],
    [0.1, '0.1'],
    [100.5, '100.5'],
    [42, '42'],
    [0.00000001, '0.00000001'],
    [1e-7, '1e-7'],
    [12345.6789, '12345.6789'],
  ])('the number %s and the string %s give equal units', (number, text) => {
    expect(parseAmount(number, NATIVE)).toBe(parseAmount(text, NATIVE));
  });

  it('property: a number with at most 15 significant digits gives the units of its decimal text', () => {
    fc.assert(
      fc.property(fc.bigInt(1n, 999_999_999_999_999n), fc.integer({ min: 0, max: 8 }), (mantissa, scale) => {
        const text = formatUnits(mantissa, scale);
        const expected = mantissa * 10n ** BigInt(8 - scale);
        if (expected > UNITS_MAX) {
          expect(codeOf(Number(text), NATIVE)).toBe('amount_out_of_range');
          expect(codeOf(text, NATIVE)).toBe('amount_out_of_range');
          return;
        }
        expect(parseAmount(Number(text), NATIVE)).toBe(expected);
        expect(parseAmount(text, NATIVE)).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe('formatUnits', () => {
  it.each([
    [0n, 8, '0'],
    [1n, 8, '0.00000001'],
    [150_000_000n, 8, '1.5'],
    [10_050_000_000n, 8, '100.5'],
    [4_200_000_000n, 8, '42'],
    [1_234_567n, 6, '1.234567'],
    [-1_500_000n, 6, '-1.5'],
    [-1n, 6, '-0.000001'],
    [7n, 0, '7'],
    [UNITS_MAX, 8, '92233720368.54775807'],
  ])('%s units with %i decimals is %s', (units, decimals, text) => {
    expect(formatUnits(units, decimals)).toBe(text);
  });

  it('property: parseAmount(formatUnits(u, d), d) === u for every u in [1, UNITS_MAX]', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.bigInt(1n, UNITS_MAX), fc.bigInt(1n, 10_000n), fc.bigInt(UNITS_MAX - 10_000n, UNITS_MAX)),
        fc.constantFrom(NATIVE, USDG, 0, 2, 18),
        (units, decimals) => {
          const text = formatUnits(units, decimals);
          expect(text).not.toMatch(/\.\d*0$/);
          expect(parseAmount(text, decimals)).toBe(units);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('property: formatUnits(0) is "0" and zero never parses', () => {
    for (const decimals of [0, USDG, NATIVE]) {
      expect(formatUnits(0n, decimals)).toBe('0');
      expect(codeOf(formatUnits(0n, decimals), decimals)).toBe('amount_not_positive');
    }
  });
});

describe('rescaleUnits', () => {
  it.each([
    // [units, from, to, expected]
    [15n, 1, 0, 2n],
    [14n, 1, 0, 1n],
    [25n, 1, 0, 3n], // half away from zero, not half to even
    [-15n, 1, 0, -2n],
    [-14n, 1, 0, -1n],
    [-25n, 1, 0, -3n],
    [5n, 1, 0, 1n],
    [-5n, 1, 0, -1n],
    [4n, 1, 0, 0n],
    [-4n, 1, 0, 0n],
    [1_499_999n, 6, 0, 1n],
    [1_500_000n, 6, 0, 2n],
    [-1_500_000n, 6, 0, -2n],
    [123_456_789n, 8, 6, 1_234_568n],
    [123_456_749n, 8, 6, 1_234_567n],
    [123_456_750n, 8, 6, 1_234_568n],
    [0n, 8, 2, 0n],
  ])('%s from %i to %i decimals is %s', (units, from, to, expected) => {
    expect(rescaleUnits(units, from, to)).toBe(expected);
  });

  it('scales up exactly', () => {
    expect(rescaleUnits(5n, 0, 2)).toBe(500n);
    expect(rescaleUnits(-7n, 6, 8)).toBe(-700n);
    expect(rescaleUnits(42n, 6, 6)).toBe(42n);
  });

  it('property: matches exact rational rounding half away from zero, and is odd-symmetric', () => {
    fc.assert(
      fc.property(fc.bigInt(-(10n ** 30n), 10n ** 30n), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 20 }), (units, from, to) => {
        const result = rescaleUnits(units, from, to);
        expect(rescaleUnits(-units, from, to)).toBe(-result);
        if (to >= from) {
          expect(result).toBe(units * 10n ** BigInt(to - from));
          return;
        }
        const divisor = 10n ** BigInt(from - to);
        // |units − result·divisor| ≤ divisor/2, and at an exact half the magnitude rounds up.
        const error = units - result * divisor;
        const magnitude = error < 0n ? -error : error;
        expect(2n * magnitude <= divisor).toBe(true);
        if (2n * magnitude === divisor) {
          const resultMagnitude = result < 0n ? -result : result;
          const unitsMagnitude = units < 0n ? -units : units;
          expect(resultMagnitude * divisor > unitsMagnitude).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});
