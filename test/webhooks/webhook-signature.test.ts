/** Standard Webhooks signatures: a fixed vector, an independent HMAC, secrets' format, rotation's two signatures. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signingSecrets } from '../../src/webhooks/webhook-deliverer.js';
import { generateSecret, isSecret, secretKey, sign, signatureHeader } from '../../src/webhooks/webhook-signature.js';

// Computed outside this code base: `openssl dgst -sha256 -mac HMAC -macopt hexkey:<the key's bytes in hex> -binary | base64`
// over `<id>.<timestamp>.<body>`.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3b8Lo6Qs9Ds=',
  id: 'evt_7_0b1f5c3e9a2d',
  timestamp_s: 1795547634,
  body: '{"id":"evt_7_0b1f5c3e9a2d","sequence":7}',
  signature: 'v1,bBmJCBq2K/hvApIZ/ockIYcu8MrAr8ssljNFjuZhl+g=',
};

function independentSignature(secret: string, id: string, timestamp_s: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp_s}.${body}`).digest('base64')}`;
}

describe('webhook signatures', () => {
  it('match a fixed vector', () => {
    expect(sign(VECTOR.secret, VECTOR.id, VECTOR.timestamp_s, VECTOR.body)).toBe(VECTOR.signature);
    expect(independentSignature(VECTOR.secret, VECTOR.id, VECTOR.timestamp_s, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('match an HMAC computed independently, for an event body with non-ASCII text', () => {
    const secret = generateSecret();
    const body = '{"id":"evt_3_00aa11bb22cc","data":{"metadata":{"memo":"loyer ✓"}}}';
    expect(sign(secret, 'evt_3_00aa11bb22cc', 1795547634, body)).toBe(independentSignature(secret, 'evt_3_00aa11bb22cc', 1795547634, body));
    expect(sign(secret, 'evt_3_00aa11bb22cc', 1795547635, body)).not.toBe(independentSignature(secret, 'evt_3_00aa11bb22cc', 1795547634, body));
  });

  it('makes secrets of whsec_ + base64 of 32 random bytes, each different', () => {
    const secrets = Array.from({ length: 20 }, () => generateSecret());
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(isSecret(secret)).toBe(true);
      expect(secretKey(secret)).toHaveLength(32);
    }
    expect(new Set(secrets).size).toBe(secrets.length);
    expect(isSecret('whsec_short')).toBe(false);
    expect(() => secretKey('sk_abc')).toThrow();
  });

  it('signs with both secrets, space-separated, while the previous one is valid', () => {
    const endpoint = { secret: generateSecret(), previous_secret: generateSecret(), previous_secret_expires_at_ms: 2_000 };
    expect(signingSecrets(endpoint, 1_999)).toEqual([endpoint.secret, endpoint.previous_secret]);
    expect(signingSecrets(endpoint, 2_000)).toEqual([endpoint.secret]);
    const header = signatureHeader(signingSecrets(endpoint, 1_000), 'evt_1_aa', 5, '{}');
    expect(header.split(' ')).toEqual([independentSignature(endpoint.secret, 'evt_1_aa', 5, '{}'), independentSignature(endpoint.previous_secret, 'evt_1_aa', 5, '{}')]);
  });
});
