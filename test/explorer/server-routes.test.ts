/**
 * The server side of the explorer, through app.inject(): the static files at `/` (no token needed,
 * hardened headers, nothing outside the built folder), `/explorer-config.json`, and the development
 * token endpoint, which exists only with the development secret and only answers loopback callers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../support/http-client.js';
import { IdentityProvider } from '../e2e/support/identity-provider.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

let explorer_root: string;

beforeAll(() => {
  explorer_root = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-explorer-'));
  fs.mkdirSync(path.join(explorer_root, 'assets'));
  fs.writeFileSync(path.join(explorer_root, 'index.html'), '<!doctype html><title>Tabula explorer</title><script type="module" src="/assets/index-abc123.js"></script>');
  fs.writeFileSync(path.join(explorer_root, 'assets', 'index-abc123.js'), 'console.log("explorer")');
});

afterAll(() => fs.rmSync(explorer_root, { recursive: true, force: true }));

describe('the explorer is served by the service at /', () => {
  let ledger: TestTabula;
  beforeAll(async () => {
    ledger = await startTestTabula({}, { explorer_root });
  });
  afterAll(() => ledger.close());

  it('serves the page without a token, revalidated and under a strict content security policy', async () => {
    const response = await ledger.app.inject({ method: 'GET', url: '/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.body).toContain('Tabula explorer');
    expect(response.headers['cache-control']).toBe('no-cache');
    expect(response.headers['content-security-policy']).toContain("script-src 'self'");
    expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['referrer-policy']).toBe('no-referrer');
    expect((await ledger.app.inject({ method: 'GET', url: '/index.html' })).statusCode).toBe(200);
  });

  it('serves hashed assets as immutable', async () => {
    const response = await ledger.app.inject({ method: 'GET', url: '/assets/index-abc123.js' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/javascript/);
    expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });

  it('answers anything else with the 404 problem, and never leaves the folder', async () => {
    for (const url of ['/nope.js', '/assets/missing.js', '/../package.json', '/assets/..%2f..%2fpackage.json', '/%2e%2e/package.json']) {
      const response = await ledger.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.headers['content-type'], url).toMatch(/^application\/problem\+json/);
      expect(response.json().code, url).toBe('route_not_found');
    }
  });

  it('leaves /api as it was: a token is still required', async () => {
    const call = await ledger.app.inject({ method: 'GET', url: '/api/stats' });
    expectProblem({ status: call.statusCode, headers: call.headers, body: call.body, json: call.json() }, 401, 'missing_token');
  });

  it('tells the page the native symbol, and that this server (JWT_SECRET) mints no development tokens', async () => {
    const response = await ledger.app.inject({ method: 'GET', url: '/explorer-config.json' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ native_symbol: 'TAB', dev_tokens: false });
    const mint = await ledger.app.inject({ method: 'POST', url: '/dev/token', payload: { sub: 'alice', admin: true } });
    expect(mint.statusCode).toBe(404);
    expect(mint.json().code).toBe('route_not_found');
  });
});

describe('without an explorer folder', () => {
  it('serves the API only: / is a 404 problem', async () => {
    const ledger = await startTestTabula();
    try {
      expect((await ledger.app.inject({ method: 'GET', url: '/' })).json().code).toBe('route_not_found');
      expect((await ledger.app.inject({ method: 'GET', url: '/explorer-config.json' })).statusCode).toBe(404);
    } finally {
      await ledger.close();
    }
  });

  it('skips a folder that has no index.html (the explorer was not built)', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-explorer-empty-'));
    const ledger = await startTestTabula({}, { explorer_root: empty });
    try {
      expect((await ledger.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(404);
    } finally {
      await ledger.close();
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('POST /dev/token with the development secret (no JWT configuration, not production)', () => {
  let ledger: TestTabula;
  beforeAll(async () => {
    ledger = await startTestTabula({ JWT_SECRET: '' }, { explorer_root });
  });
  afterAll(() => ledger.close());

  const mint = (payload: unknown, remoteAddress = '127.0.0.1') =>
    ledger.app.inject({ method: 'POST', url: '/dev/token', payload: payload as object, remoteAddress });

  it('mints a token the API accepts, with the admin scope when asked', async () => {
    const user = await mint({ sub: 'alice' });
    expect(user.statusCode).toBe(200);
    expect(user.headers['cache-control']).toBe('no-store');
    expect(user.json()).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    const user_token: string = user.json().token;
    const balance = await ledger.app.inject({ method: 'GET', url: '/api/balance/alice', headers: { authorization: `Bearer ${user_token}` } });
    expect(balance.statusCode).toBe(200);
    const mint_body = { from: 'treasury', to: 'alice', amount: 5, token: 'TAB', type: 'mint' };
    const refused = await ledger.app.inject({ method: 'POST', url: '/api/transactions/submit', headers: { authorization: `Bearer ${user_token}` }, payload: mint_body });
    expect(refused.json().code).toBe('admin_required');

    const admin_token: string = (await mint({ sub: 'treasury', admin: true })).json().token;
    const accepted = await ledger.app.inject({ method: 'POST', url: '/api/transactions/submit', headers: { authorization: `Bearer ${admin_token}` }, payload: mint_body });
    expect(accepted.statusCode).toBe(202);
  });

  it('is announced to the page', async () => {
    expect((await ledger.app.inject({ method: 'GET', url: '/explorer-config.json' })).json()).toEqual({ native_symbol: 'TAB', dev_tokens: true });
  });

  it('exists for loopback callers only (IPv4, IPv6 and IPv4-mapped): to others it is a missing route', async () => {
    for (const address of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1']) {
      expect((await mint({ sub: 'alice' }, address)).statusCode, address).toBe(200);
    }
    for (const address of ['10.0.0.5', '192.168.1.20', '::ffff:10.0.0.5', 'fe80::1']) {
      const response = await mint({ sub: 'alice', admin: true }, address);
      expect(response.statusCode, address).toBe(404);
      expect(response.json().code).toBe('route_not_found');
      expect(response.json().token).toBeUndefined();
      expect((await mint({ sub: 'has space', extra: 1 }, address)).json().code, address).toBe('route_not_found');
    }
  });

  it('refuses a bad subject or an unknown field with a 400 problem', async () => {
    for (const [payload, code] of [
      [{ sub: 'has space' }, 'invalid_user_id'],
      [{ sub: '' }, 'invalid_user_id'],
      [{ sub: 'x'.repeat(129) }, 'invalid_user_id'],
      [{}, 'validation_failed'],
      [{ sub: 'alice', admin: 'yes' }, 'validation_failed'],
      [{ sub: 'alice', scope: 'ledger:admin' }, 'validation_failed'],
    ] as const) {
      const response = await mint(payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(response.json().code, JSON.stringify(payload)).toBe(code);
    }
  });
});

describe('POST /dev/token does not exist with an identity provider', () => {
  let idp: IdentityProvider;
  beforeAll(async () => {
    idp = await IdentityProvider.start();
  });
  afterAll(() => idp.close());

  it.each([
    ['JWT_ISSUER in development', { JWT_SECRET: '', JWT_ISSUER: 'idp' }],
    ['JWT_ISSUER in production', { JWT_SECRET: '', JWT_ISSUER: 'idp', JWT_AUDIENCE: 'tabula-e2e', NODE_ENV: 'production' }],
    ['JWT_SECRET in production', { NODE_ENV: 'production' }],
  ])('%s', async (_name, env) => {
    const resolved = Object.fromEntries(Object.entries(env).map(([key, value]) => [key, value === 'idp' ? idp.issuer : value]));
    const ledger = await startTestTabula(resolved, { explorer_root });
    try {
      const response = await ledger.app.inject({ method: 'POST', url: '/dev/token', payload: { sub: 'alice', admin: true } });
      expect(response.statusCode).toBe(404);
      expect(response.json().code).toBe('route_not_found');
      expect((await ledger.app.inject({ method: 'GET', url: '/explorer-config.json' })).json().dev_tokens).toBe(false);
      expect(fs.existsSync(path.join(ledger.dir, 'dev-jwt-secret'))).toBe(false);
      if (resolved.JWT_ISSUER !== undefined) {
        const token = await idp.token('alice');
        const balance = await ledger.app.inject({ method: 'GET', url: '/api/balance/alice', headers: { authorization: `Bearer ${token}` } });
        expect(balance.statusCode).toBe(200);
      }
    } finally {
      await ledger.close();
    }
  });
});
