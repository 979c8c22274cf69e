const HASH_HEX_PATTERN = /^0x[0-9a-f]{64}$/;

const BYTE_HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

export function bytesToHex(bytes: Uint8Array): string {
  let text = '';
  for (let index = 0; index < bytes.length; index += 1) text += BYTE_HEX[bytes[index] as number];
  return text;
}

/** The value of one hex digit's character code, or -1. */
function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

export function hexToBytes(hex: string): Uint8Array {
  const start = hex.startsWith('0x') ? 2 : 0;
  if ((hex.length - start) % 2 !== 0) throw new TypeError(`not hex: ${hex}`);
  const bytes = new Uint8Array((hex.length - start) / 2);
  for (let index = 0; index < bytes.length; index += 1) {
    const high = nibble(hex.charCodeAt(start + index * 2));
    const low = nibble(hex.charCodeAt(start + index * 2 + 1));
    if (high < 0 || low < 0) throw new TypeError(`not hex: ${hex}`);
    bytes[index] = high * 16 + low;
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
