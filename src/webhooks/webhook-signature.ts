/**
 * Standard Webhooks signing: secrets are `whsec_` + base64 of 32 random bytes, the HMAC key is the
 * decoded bytes after the prefix, and a signature is `v1,` + base64 HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<body>`. Several signatures (during a secret rotation) are
 * separated by spaces.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

export function isSecret(value: string): boolean {
  return SECRET_PATTERN.test(value);
}

/** The HMAC key of a secret: the base64-decoded bytes after `whsec_`. */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>` */
export function sign(secret: string, id: string, timestamp_s: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp_s}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp_s: number, body: string): string {
  return secrets.map((secret) => sign(secret, id, timestamp_s, body)).join(' ');
}
