import fs from 'node:fs';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../src/http/error-catalogue.js';
import { startTestTabula, TEST_SECRET, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem } from '../support/http-client.js';

describe('authentication, rate limits and the edge', () => {
  let ledger: TestTabula | undefined;
  afterEach(async () => { await ledger?.close(); ledger = undefined; });

  it('401 without a token, with WWW-Authenticate and no error attribute', async () => {
    ledger = await startTestTabula();
    const call = await clientFor(ledger, '').get('/api/stats', null);
    expectProblem(call, 401, 'missing_token');
    expect(call.json.title).toBe('Unauthorized');
    expect(call.headers['www-authenticate']).toBe('Bearer realm="ledger"');
  });

  it.each([
    ['garbage', 'not-a-jwt'],
    ['a Basic header', null],
  ])('401 invalid_token for %s', async (_name, token) => {
    ledger = await startTestTabula();
    const client = clientFor(ledger, '');
    const call = token === null
      ? await client.get('/api/stats', null, { authorization: 'Basic YWxpY2U6cHc=' })
      : await client.get('/api/stats', token);
    expectProblem(call, 401, 'invalid_token');
    expect(call.headers['www-authenticate']).toMatch(/^Bearer realm="ledger", error="invalid_token"/);
  });

  it('401 for expired, not-yet-valid, unsigned and wrongly signed tokens; 200 within the 30 s tolerance', async () => {
    ledger = await startTestTabula({ JWT_AUDIENCE: 'tabula' });
    const key = new TextEncoder().encode(TEST_SECRET);
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: Record<string, unknown>, secret = key) =>
      new SignJWT({ aud: 'tabula', ...claims }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').sign(secret);
    const client = clientFor(ledger, '');
    const refused = [
      await sign({ exp: now - 60 }),
      await sign({ exp: now + 600, nbf: now + 120 }),
      await sign({ exp: now + 600 }, new TextEncoder().encode('another-secret-of-at-least-32-bytes!!')),
      await sign({ exp: now + 600, aud: 'someone-else' }),
      await sign({}),
      new UnsecuredJWT({ sub: 'alice', aud: 'tabula', exp: now + 600 }).encode(),
    ];
    for (const token of refused) expectProblem(await client.get('/api/stats', token), 401, 'invalid_token');
    expect((await client.get('/api/stats', await sign({ exp: now - 10 }))).status).toBe(200);
    expect((await client.get('/api/stats', await sign({ exp: now + 600, nbf: now + 10 }))).status).toBe(200);
  });

  it('401 for a subject no account can be named with (control characters, lone surrogates), even for an admin', async () => {
    ledger = await startTestTabula();
    const key = new TextEncoder().encode(TEST_SECRET);
    const now = Math.floor(Date.now() / 1000);
    const client = clientFor(ledger, '');
    const admin = await ledger.token('treasury', { admin: true });
    await clientFor(ledger, admin).post('/api/transactions/submit', { from: 'treasury', to: 'alice', amount: 5, token: 'TAB', type: 'mint' });
    for (const subject of ['ad\u0000min', 'tab\tbed', 'line\nbreak', 'c1\u0085', 'lone\ud800']) {
      const token = await new SignJWT({ scope: ledger.config.admin_scope }).setProtectedHeader({ alg: 'HS256' }).setSubject(subject).setExpirationTime(now + 600).sign(key);
      expectProblem(await client.get('/api/stats', token), 401, 'invalid_token');
      // On PostgreSQL a keyed submission stored the NUL as the key's caller: a 500.
      const call = await client.post('/api/transactions/submit', { from: 'alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer' }, token, { 'idempotency-key': 'k-1' });
      expectProblem(call, 401, 'invalid_token');
    }
    expect(await ledger.store.pendingCount()).toBe(1);
  });

  it('API keys: 401 invalid_api_key without the right X-API-Key', async () => {
    ledger = await startTestTabula({ API_KEYS: 'key-one-0123456789,key-two-0123456789' });
    const client = clientFor(ledger, await ledger.token('alice'));
    expectProblem(await client.get('/api/stats'), 401, 'invalid_api_key');
    expectProblem(await client.get('/api/stats', undefined, { 'x-api-key': 'key-three-0123456789' }), 401, 'invalid_api_key');
    expect((await client.get('/api/stats', undefined, { 'x-api-key': 'key-two-0123456789' })).status).toBe(200);
  });

  it('ignores X-API-Key when no keys are configured', async () => {
    ledger = await startTestTabula();
    const client = clientFor(ledger, await ledger.token('alice'));
    expect((await client.get('/api/stats', undefined, { 'x-api-key': 'anything' })).status).toBe(200);
  });

  it('rate-limits per caller with 429, Retry-After and RateLimit headers', async () => {
    ledger = await startTestTabula({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' });
    const alice = clientFor(ledger, await ledger.token('alice'));
    const bob = clientFor(ledger, await ledger.token('bob'));
    const first = await alice.get('/api/stats');
    expect(first.headers['ratelimit-policy']).toBe('3;w=60');
    expect(first.headers.ratelimit).toMatch(/^limit=3, remaining=2, reset=\d+$/);
    await alice.get('/api/stats');
    await alice.get('/api/stats');
    const limited = await alice.get('/api/stats');
    expectProblem(limited, 429, 'rate_limited');
    expect(limited.json.title).toBe('Too Many Requests');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers.ratelimit).toMatch(/remaining=0/);
    expect((await bob.get('/api/stats')).status).toBe(200);
    // Invalid tokens are counted against the client address, so they are limited too.
    const anonymous = clientFor(ledger, 'bad');
    for (let index = 0; index < 3; index += 1) expect((await anonymous.get('/api/stats')).status).toBe(401);
    expect((await anonymous.get('/api/stats')).status).toBe(429);
  });

  it('serves /healthz and /readyz without authentication', async () => {
    ledger = await startTestTabula();
    const client = clientFor(ledger, '');
    expect((await client.get('/healthz', null)).json).toEqual({ status: 'ok' });
    expect((await client.get('/readyz', null)).json).toEqual({ status: 'ready' });
  });

  it('answers unknown routes with a problem', async () => {
    ledger = await startTestTabula();
    expectProblem(await clientFor(ledger, await ledger.token('a')).get('/api/nothing'), 404, 'route_not_found');
    expectProblem(await clientFor(ledger, '').get('/nothing', null), 404, 'route_not_found');
  });
});

describe('error catalogue', () => {
  it('lists every code in docs/api.md with its status, and nothing more', () => {
    const docs = fs.readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const table = docs.split('<!-- error-codes:start -->')[1]?.split('<!-- error-codes:end -->')[0] ?? '';
    const documented = new Map([...table.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((match) => [match[1], Number(match[2])]));
    const catalogue = new Map(Object.entries(ERROR_CATALOGUE).map(([code, entry]) => [code, entry.status]));
    expect(documented).toEqual(catalogue);
  });

  it('every code the source throws is in the catalogue', () => {
    const sources = listSources(new URL('../../src/', import.meta.url));
    const thrown = new Set<string>();
    for (const file of sources) {
      const text = fs.readFileSync(file, 'utf8');
      for (const match of text.matchAll(/(?:InvalidRequestError|ForbiddenError|NotFoundError|ConflictError|OverloadedError|AuthError|HttpProblem)\(\s*'([a-z_]+)'/g)) thrown.add(match[1] as string);
    }
    expect(thrown.size).toBeGreaterThan(15);
    for (const code of thrown) expect(Object.keys(ERROR_CATALOGUE), code).toContain(code);
  });
});

function listSources(directory: URL): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const url = new URL(entry.name + (entry.isDirectory() ? '/' : ''), directory);
    if (entry.isDirectory()) return listSources(url);
    return entry.name.endsWith('.ts') ? [url.pathname] : [];
  });
}
