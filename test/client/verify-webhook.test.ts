/**
 * `verifyWebhook` (Standard Webhooks): signatures computed here independently with node:crypto, the
 * way the service signs deliveries, and every reason a delivery must be refused.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { verifyWebhook, WebhookVerificationError, type WebhookFailure } from '@tabula/client';
import { describe, expect, it } from 'vitest';

const KEY = randomBytes(32);
const SECRET = `whsec_${KEY.toString('base64')}`;
const OTHER_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const NOW = new Date('2026-11-25T04:00:00Z');
const NOW_S = Math.floor(NOW.getTime() / 1000);
// 2^63 − 1 base units: a double would round it; the parsed event keeps the exact text.
const BODY = '{"id":"evt_5_0f2c1a9b3d4e","sequence":5,"type":"transaction.confirmed","occurred_at":1795547634,"schema_version":1,'
  + '"data":{"tx_hash":"0x0f2c1a9b3d4e0f2c1a9b3d4e0f2c1a9b3d4e0f2c1a9b3d4e0f2c1a9b3d4e0f2c","from":"treasury","to":"alice","amount":92233720368.54775807,'
  + '"token":"TAB","type":"mint","metadata":{},"status":"confirmed","timestamp":1795547633,"block_number":42,"block_hash":"0x'
  + 'ab'.repeat(32) + '","position":0,"error":null,"nonce":"00112233445566778899aabbccddeeff"}}';

function sign(key: Buffer, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

function headers(overrides: Record<string, string | undefined> = {}, timestamp = NOW_S, body = BODY): Record<string, string | undefined> {
  return { 'webhook-id': 'evt_5_0f2c1a9b3d4e', 'webhook-timestamp': String(timestamp), 'webhook-signature': sign(KEY, 'evt_5_0f2c1a9b3d4e', timestamp, body), ...overrides };
}

async function refusal(promise: Promise<unknown>): Promise<WebhookFailure> {
  const error = await promise.then(() => null, (failure: unknown) => failure);
  expect(error).toBeInstanceOf(WebhookVerificationError);
  return (error as WebhookVerificationError).reason;
}

describe('verifyWebhook', () => {
  it('accepts a valid signature and returns the event with its exact amount', async () => {
    const event = await verifyWebhook(SECRET, headers(), BODY, { now: NOW });
    expect(event).toMatchObject({ id: 'evt_5_0f2c1a9b3d4e', sequence: 5, type: 'transaction.confirmed', data: { to: 'alice', amount_text: '92233720368.54775807', block_number: 42 } });
  });

  it('takes headers as a Headers object (any case) and the body as bytes', async () => {
    const plain = headers();
    const fetch_headers = new Headers({ 'Webhook-Id': plain['webhook-id'] as string, 'Webhook-Timestamp': plain['webhook-timestamp'] as string, 'Webhook-Signature': plain['webhook-signature'] as string });
    expect((await verifyWebhook(SECRET, fetch_headers, new TextEncoder().encode(BODY), { now: NOW })).sequence).toBe(5);
    const upper = { 'Webhook-Id': plain['webhook-id'], 'WEBHOOK-TIMESTAMP': plain['webhook-timestamp'], 'webhook-signature': plain['webhook-signature'] };
    expect((await verifyWebhook(SECRET, upper, BODY, { now: NOW })).sequence).toBe(5);
  });

  it('accepts a delivery when the second of several signatures matches (a secret rotation)', async () => {
    const stale = sign(randomBytes(32), 'evt_5_0f2c1a9b3d4e', NOW_S, BODY);
    const good = sign(KEY, 'evt_5_0f2c1a9b3d4e', NOW_S, BODY);
    const event = await verifyWebhook(SECRET, headers({ 'webhook-signature': `${stale} v2,bm90LWEtdjE= ${good}` }), BODY, { now: NOW });
    expect(event.id).toBe('evt_5_0f2c1a9b3d4e');
    expect(await refusal(verifyWebhook(SECRET, headers({ 'webhook-signature': `${stale} v2,${good.slice(3)}` }), BODY, { now: NOW }))).toBe('no_matching_signature');
  });

  it('refuses a wrong secret, a tampered body, and a signature for another id or timestamp', async () => {
    expect(await refusal(verifyWebhook(OTHER_SECRET, headers(), BODY, { now: NOW }))).toBe('no_matching_signature');
    expect(await refusal(verifyWebhook(SECRET, headers(), BODY.replace('"alice"', '"mallory"'), { now: NOW }))).toBe('no_matching_signature');
    expect(await refusal(verifyWebhook(SECRET, headers({ 'webhook-id': 'evt_6_0f2c1a9b3d4e' }), BODY, { now: NOW }))).toBe('no_matching_signature');
    const signed = headers();
    expect(await refusal(verifyWebhook(SECRET, { ...signed, 'webhook-timestamp': String(NOW_S - 1) }, BODY, { now: NOW }))).toBe('no_matching_signature');
    expect(await refusal(verifyWebhook('whsec_not*base64', headers(), BODY, { now: NOW }))).toBe('invalid_secret');
  });

  it('refuses a timestamp more than the tolerance in the past or the future', async () => {
    expect(await refusal(verifyWebhook(SECRET, headers({}, NOW_S - 301), BODY, { now: NOW }))).toBe('timestamp_too_old');
    expect(await refusal(verifyWebhook(SECRET, headers({}, NOW_S + 301), BODY, { now: NOW }))).toBe('timestamp_in_future');
    expect((await verifyWebhook(SECRET, headers({}, NOW_S - 300), BODY, { now: NOW })).sequence).toBe(5);
    expect((await verifyWebhook(SECRET, headers({}, NOW_S - 3000), BODY, { now: NOW, tolerance_s: 3600 })).sequence).toBe(5);
    expect(await refusal(verifyWebhook(SECRET, headers({ 'webhook-timestamp': '2026-11-25' }), BODY, { now: NOW }))).toBe('malformed_header');
  });

  it('refuses a delivery missing any of the three headers', async () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      expect(await refusal(verifyWebhook(SECRET, headers({ [name]: undefined }), BODY, { now: NOW })), name).toBe('missing_header');
    }
    expect(await refusal(verifyWebhook(SECRET, new Headers(), BODY, { now: NOW }))).toBe('missing_header');
  });

  it('refuses a correctly signed body that is not an event', async () => {
    const body = '{"hello":"world"}';
    expect(await refusal(verifyWebhook(SECRET, headers({}, NOW_S, body), body, { now: NOW }))).toBe('malformed_body');
  });
});
