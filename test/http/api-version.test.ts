import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { API_MAJOR_VERSION, routedUrl, setVersionHeaders, type DeprecationTable } from '../../src/http/api-version.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, type Client } from '../support/http-client.js';

describe('versions of the interface', () => {
  let ledger: TestTabula;
  let admin: Client;

  beforeEach(async () => {
    ledger = await startTestTabula();
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
  });
  afterEach(async () => { await ledger.close(); });

  it('serves every /api route under /api/v1 too, with the same answer', async () => {
    const submitted = await admin.post('/api/v1/transactions/submit', { from: 'treasury', to: 'alice', amount: 5, token: 'TAB', type: 'mint' });
    expect(submitted.status).toBe(202);
    const hash = submitted.json.tx_hash as string;
    for (const path of [`/transactions/${hash}`, '/balance/alice', '/blocks?limit=1', '/blocks/0', '/stats', '/accounts/alice/transactions']) {
      const plain = await admin.get(`/api${path}`);
      const versioned = await admin.get(`/api/v1${path}`);
      expect(versioned.status, path).toBe(200);
      if (path !== '/stats') expect(versioned.json, path).toEqual(plain.json);
    }
  });

  it('names the version on every /api answer, errors included, and only there', async () => {
    expect((await admin.get('/api/stats')).headers['api-version']).toBe(String(API_MAJOR_VERSION));
    expect((await admin.get('/api/v1/stats')).headers['api-version']).toBe(String(API_MAJOR_VERSION));
    const refused = await ledger.app.inject({ method: 'GET', url: '/api/v1/stats' });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['api-version']).toBe(String(API_MAJOR_VERSION));
    expect((await ledger.app.inject({ method: 'GET', url: '/healthz' })).headers['api-version']).toBeUndefined();
  });

  it('answers an unknown version with a route_not_found problem, not another version', async () => {
    const answer = await admin.get('/api/v2/stats');
    expect(answer.status).toBe(404);
    expect(answer.json.code).toBe('route_not_found');
  });

  it('keeps the OpenAPI version in step with the header', async () => {
    const document = (await ledger.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { info: { version: string; description: string } };
    expect(document.info.version.split('.')[0]).toBe(String(API_MAJOR_VERSION));
    expect(document.info.description).toContain(`/api/v${API_MAJOR_VERSION}/`);
  });
});

describe('routedUrl and deprecation headers', () => {
  it('maps only the /api/v1/ prefix', () => {
    expect(routedUrl('/api/v1/stats?x=1')).toBe('/api/stats?x=1');
    expect(routedUrl('/api/stats')).toBe('/api/stats');
    expect(routedUrl('/api/v10/stats')).toBe('/api/v10/stats');
    expect(routedUrl('/api/v1')).toBe('/api/v1');
    expect(routedUrl('/healthz')).toBe('/healthz');
  });

  it('marks a retired route with Deprecation (RFC 9745), Sunset (RFC 8594) and its successor', async () => {
    const table: DeprecationTable = new Map([['GET /old', { deprecated_at_s: 1_800_000_000, sunset_at_s: 1_815_000_000, successor_path: '/new' }]]);
    const app = Fastify();
    app.addHook('onRequest', (request, reply, done) => {
      setVersionHeaders(reply, `${request.method} ${request.routeOptions.url ?? ''}`, table);
      done();
    });
    app.get('/old', async () => ({}));
    app.get('/current', async () => ({}));
    const old = await app.inject({ method: 'GET', url: '/old' });
    expect(old.headers.deprecation).toBe('@1800000000');
    expect(old.headers.sunset).toBe(new Date(1_815_000_000_000).toUTCString());
    expect(old.headers.link).toBe('</new>; rel="successor-version"');
    const current = await app.inject({ method: 'GET', url: '/current' });
    expect(current.headers.deprecation).toBeUndefined();
    expect(current.headers['api-version']).toBe(String(API_MAJOR_VERSION));
    await app.close();
  });
});
