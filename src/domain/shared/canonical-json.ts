/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): object keys sorted by UTF-16 code units, no
 * whitespace, numbers and strings serialized as ECMAScript's JSON.stringify does. This is the one
 * canonical encoder behind every hash of the ledger; the server, the verifier and the SDK share it.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

const LONE_SURROGATE = /\p{Cs}/u;

export function canonicalJson(value: JsonValue): string {
  if (typeof value === 'string') return canonicalString(value);
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no representation for a non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort(compareUtf16);
  const members = keys.map((key) => `${canonicalString(key)}:${canonicalJson(value[key] as JsonValue)}`);
  return `{${members.join(',')}}`;
}

/** RFC 8785 section 3.2.2.2: a lone surrogate has no canonical form and must be refused. */
function canonicalString(text: string): string {
  if (LONE_SURROGATE.test(text)) throw new TypeError('canonical JSON has no representation for a lone surrogate');
  return JSON.stringify(text);
}

/** True when `text` is well-formed UTF-16 (no lone surrogate), so it can be hashed canonically. */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

function compareUtf16(a: string, b: string): number {
  // JavaScript string comparison is by UTF-16 code units, which is what RFC 8785 asks for.
  if (a < b) return -1;
  return a > b ? 1 : 0;
}
