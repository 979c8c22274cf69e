import { afterEach, describe, expect, it } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

const APP = 'https://app.example.com';

describe('CORS for browser apps on other origins', () => {
  let ledger: TestTabula | undefined;
  afterEach(async () => { await ledger?.close(); ledger = undefined; });

  it('answers a preflight from an allowed origin before authentication, and never allows credentials', async () => {
    ledger = await startTestTabula({ CORS_ORIGINS: `${APP},https://admin.example.com` });
    const preflight = await ledger.app.inject({
      method: 'OPTIONS',
      url: '/api/transactions/submit',
      headers: { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,idempotency-key' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(APP);
    expect(String(preflight.headers['access-control-allow-headers'])).toMatch(/Idempotency-Key/);
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('exposes the headers a client needs on an allowed origin, and nothing to another origin', async () => {
    ledger = await startTestTabula({ CORS_ORIGINS: APP });
    const token = await ledger.token('alice');
    const allowed = await ledger.app.inject({ method: 'GET', url: '/api/stats', headers: { origin: APP, authorization: `Bearer ${token}` } });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe(APP);
    expect(String(allowed.headers['access-control-expose-headers'])).toMatch(/RateLimit/);
    const other = await ledger.app.inject({ method: 'GET', url: '/api/stats', headers: { origin: 'https://evil.example', authorization: `Bearer ${token}` } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('sends no CORS headers unless CORS_ORIGINS is set', async () => {
    ledger = await startTestTabula();
    const token = await ledger.token('alice');
    const response = await ledger.app.inject({ method: 'GET', url: '/api/stats', headers: { origin: APP, authorization: `Bearer ${token}` } });
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
  });
});
