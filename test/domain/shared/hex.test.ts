import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToHex, hexToBytes, toHashHex } from '../../../src/domain/shared/hex.js';

describe('hex', () => {
  it('decodes what it encodes, with or without 0x, in either case', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const hex = bytesToHex(bytes);
      expect(hexToBytes(hex)).toEqual(bytes);
      expect(hexToBytes(`0x${hex}`)).toEqual(bytes);
      expect(hexToBytes(hex.toUpperCase())).toEqual(bytes);
    }));
    expect(toHashHex(hexToBytes(`0x${'Ab'.repeat(32)}`))).toBe(`0x${'ab'.repeat(32)}`);
  });

  it('refuses an odd number of digits and every character that is not a hex digit, wherever it is', () => {
    expect(() => hexToBytes('0xabc')).toThrow('not hex');
    const not_digit = fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((char) => !/^[0-9a-fA-F]$/.test(char));
    fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 32 }), fc.nat(), not_digit, (bytes, at, char) => {
      const hex = bytesToHex(bytes);
      const index = at % hex.length;
      expect(() => hexToBytes(`${hex.slice(0, index)}${char}${hex.slice(index + 1)}`)).toThrow('not hex');
    }));
    // Characters whose low byte is a digit's ('ı' is U+0131, '1' is U+0031).
    expect(() => hexToBytes('\u0131\u0130')).toThrow('not hex');
  });
});
