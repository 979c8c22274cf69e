/** Hex text of bytes and hashes (`0x` + 64 lowercase hex digits), both ways. */
const HASH_HEX_PATTERN = /^0x[0-9a-f]{64}$/;

const BYTE_HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

export function bytesToHex(bytes: Uint8Array): string {
  let text = '';
  for (let index = 0; index < bytes.length; index += 1) text += BYTE_HEX[bytes[index] as number];
  return text;
}

/** The value of each hex digit by its character code (below 128), -1 for every other character. */
const NIBBLE = Int8Array.from({ length: 128 }, (_, code) => {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
});

/** The value of the hex digit at `at`, or -1. */
function nibbleAt(hex: string, at: number): number {
  const code = hex.charCodeAt(at);
  return code < 128 ? (NIBBLE[code] as number) : -1;
}

/** Hex digits, with or without `0x`, to bytes; throws on anything else (the sealer decodes every leaf with it, hence the table). */
export function hexToBytes(hex: string): Uint8Array {
  const start = hex.startsWith('0x') ? 2 : 0;
  if ((hex.length - start) % 2 !== 0) throw new TypeError(`not hex: ${hex}`);
  const bytes = new Uint8Array((hex.length - start) / 2);
  for (let index = 0, at = start; index < bytes.length; index += 1, at += 2) {
    const high = nibbleAt(hex, at);
    const low = nibbleAt(hex, at + 1);
    if (high < 0 || low < 0) throw new TypeError(`not hex: ${hex}`);
    bytes[index] = (high << 4) | low;
  }
  return bytes;
}

/** `0x` + 64 lowercase hex digits: the form of every hash in the API. */
export function isHash(text: string): boolean {
  return HASH_HEX_PATTERN.test(text);
}

export function toHashHex(bytes: Uint8Array): string {
  return `0x${bytesToHex(bytes)}`;
}

export const ZERO_HASH = `0x${'0'.repeat(64)}`;
