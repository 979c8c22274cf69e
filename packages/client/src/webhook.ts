/**
 * `verifyWebhook`: checks a webhook delivery of Tabula (Standard Webhooks) before its event is
 * trusted. The signature is HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>` with the bytes
 * of the endpoint's secret (`whsec_` + base64), sent as `v1,<base64>` entries (several during a secret
 * rotation: one matching is enough) in `webhook-signature`. WebCrypto only: Node and browsers alike.
 */
import { WebhookVerificationError } from './errors.js';
import { parseEventText } from './event-stream.js';
import type { TabulaEvent } from './types.js';

export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

export type VerifyWebhookOptions = {
  /** How far `webhook-timestamp` may be from now, either way, in seconds. Default 300. */
  tolerance_s?: number;
  /** The time to check the timestamp against; default now. */
  now?: Date;
};

const SECRET_PREFIX = 'whsec_';
const TOLERANCE_S_DEFAULT = 300;
/** Signature entries looked at, at the most (a rotation sends two or three). */
const SIGNATURES_MAX = 32;
const HEADER_CHARACTERS_MAX = 8192;
const encoder = new TextEncoder();

/**
 * Verifies a delivery and returns its event (amounts exact, as `events()` yields them; a type this
 * SDK does not know is returned as parsed). Pass the body exactly as received (the raw bytes or
 * text, never re-serialized JSON). Throws a `WebhookVerificationError` whose `reason` says why.
 */
export async function verifyWebhook(secret: string, headers: WebhookHeaders, rawBody: string | Uint8Array, options: VerifyWebhookOptions = {}): Promise<TabulaEvent> {
  const tolerance_s = options.tolerance_s ?? TOLERANCE_S_DEFAULT;
  if (!Number.isFinite(tolerance_s) || tolerance_s < 0) throw new RangeError('tolerance_s must be a non-negative number of seconds');
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  checkTimestamp(timestamp, tolerance_s, options.now ?? new Date());
  const key = await hmacKey(secret);
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : rawBody;
  const expected = new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', key, concat(encoder.encode(`${id}.${timestamp}.`), body)));
  if (!signaturesOf(signatures).some((candidate) => constantTimeEqual(candidate, expected))) {
    throw new WebhookVerificationError('no_matching_signature', 'no v1 signature of webhook-signature matches the body with this secret');
  }
  try {
    const text = typeof rawBody === 'string' ? rawBody : new TextDecoder('utf-8', { fatal: true }).decode(rawBody);
    const parsed = parseEventText(text);
    return parsed.event ?? (JSON.parse(text) as TabulaEvent);
  } catch (error) {
    throw new WebhookVerificationError('malformed_body', `the signed body is not an event: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function header(headers: WebhookHeaders, name: string): string {
  let value: string | readonly string[] | null | undefined;
  if (typeof Headers !== 'undefined' && headers instanceof Headers) value = headers.get(name);
  else {
    const record = headers as Record<string, string | readonly string[] | undefined>;
    const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
    value = key === undefined ? undefined : record[key];
  }
  const text = typeof value === 'string' ? value : Array.isArray(value) ? value.join(' ') : undefined;
  if (text === undefined || text.trim() === '') throw new WebhookVerificationError('missing_header', `the ${name} header is missing`);
  if (text.length > HEADER_CHARACTERS_MAX) throw new WebhookVerificationError('malformed_header', `the ${name} header is over ${HEADER_CHARACTERS_MAX} characters`);
  return text.trim();
}

function checkTimestamp(timestamp: string, tolerance_s: number, now: Date): void {
  if (!/^[0-9]{1,12}$/.test(timestamp)) throw new WebhookVerificationError('malformed_header', 'webhook-timestamp is not a number of Unix seconds');
  const skew_s = Math.floor(now.getTime() / 1000) - Number(timestamp);
  if (skew_s > tolerance_s) throw new WebhookVerificationError('timestamp_too_old', `webhook-timestamp is ${skew_s} s old (more than ${tolerance_s} s)`);
  if (-skew_s > tolerance_s) throw new WebhookVerificationError('timestamp_in_future', `webhook-timestamp is ${-skew_s} s ahead (more than ${tolerance_s} s)`);
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const bytes = base64Bytes(encoded);
  if (bytes === null || bytes.length === 0) throw new WebhookVerificationError('invalid_secret', 'the secret is not whsec_ followed by base64');
  return globalThis.crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

/** The decoded `v1` signatures of the header (other versions and malformed entries are ignored). */
function signaturesOf(header_value: string): Uint8Array[] {
  const found: Uint8Array[] = [];
  for (const entry of header_value.split(' ').slice(0, SIGNATURES_MAX)) {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || signature === undefined) continue;
    const bytes = base64Bytes(signature);
    if (bytes !== null) found.push(bytes);
  }
  return found;
}

function base64Bytes(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return null;
  const binary = atob(text);
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

function concat(first: Uint8Array, second: Uint8Array): Uint8Array<ArrayBuffer> {
  const joined = new Uint8Array(first.length + second.length);
  joined.set(first, 0);
  joined.set(second, first.length);
  return joined;
}

/** Compares every byte whatever the first difference, so the time taken says nothing of where it is. */
function constantTimeEqual(left: Uint8Array, right: Uint8Array): boolean {
  if (left.length !== right.length) return false;
  let difference = 0;
  for (let index = 0; index < left.length; index += 1) difference |= (left[index] as number) ^ (right[index] as number);
  return difference === 0;
}
