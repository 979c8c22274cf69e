import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownOriginOnly } from '../../src/http/openapi.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

describe('headers that keep browsers from misreading our answers', () => {
  let ledger: TestTabula;
  beforeAll(async () => { ledger = await startTestTabula(); });
  afterAll(async () => { await ledger.close(); });

  it('sends X-Content-Type-Options: nosniff on API answers, errors, health and the docs', async () => {
    const token = await ledger.token('alice');
    const answers = await Promise.all([
      ledger.app.inject({ method: 'GET', url: '/api/stats', headers: { authorization: `Bearer ${token}` } }),
      ledger.app.inject({ method: 'GET', url: '/api/stats' }),
      ledger.app.inject({ method: 'GET', url: '/api/nothing-here', headers: { authorization: `Bearer ${token}` } }),
      ledger.app.inject({ method: 'GET', url: '/healthz' }),
      ledger.app.inject({ method: 'GET', url: '/openapi.json' }),
      ledger.app.inject({ method: 'GET', url: '/docs/' }),
    ]);
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 401, 404, 200, 200, 200]);
    for (const answer of answers) expect(answer.headers['x-content-type-options']).toBe('nosniff');
  });

  it('serves the API reference under a Content-Security-Policy that allows only this origin and its own inline scripts', async () => {
    const page = await ledger.app.inject({ method: 'GET', url: '/docs/' });
    const policy = String(page.headers['content-security-policy']);
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("object-src 'none'");
    expect(policy).toMatch(/script-src 'self'( 'sha256-[A-Za-z0-9+/=]+')*; script-src-attr 'none';/);
    expect(policy).not.toMatch(/https:|validator\.swagger\.io|upgrade-insecure-requests/);
    const initializer = await ledger.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(initializer.statusCode).toBe(200);
    expect(initializer.headers['content-security-policy']).toBe(policy);
  });

  it('strips the outside sources from Swagger UI\'s default policy and nothing else', () => {
    const library_default = "default-src 'self'; font-src 'self' https: data:; img-src 'self' data: validator.swagger.io; script-src 'self' 'sha256-x'; style-src 'self' https: 'unsafe-inline'; upgrade-insecure-requests;";
    expect(ownOriginOnly(library_default)).toBe("default-src 'self'; font-src 'self' data:; img-src 'self' data:; script-src 'self' 'sha256-x'; style-src 'self' 'unsafe-inline';");
  });
});
