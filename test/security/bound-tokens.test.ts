/**
 * Issue 15, bound tokens, on the built service in production mode with a separate test identity
 * provider: a token the same provider minted for another audience, another issuer, without `aud`, or
 * of another type (JWT_TYPES) is a 401; a genuine one passes. Start-up refuses, naming the setting, an
 * identity provider without JWT_AUDIENCE (or with only a JWKS URL and no issuer) and http addresses off
 * loopback (`.invalid` host names: nothing is ever sent there).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE, startEnvironment, type E2eEnvironment } from '../e2e/support/fixture.js';
import type { ApiResponse, ProblemRecord } from '../e2e/support/http.js';
import type { TokenClaims } from '../e2e/support/identity-provider.js';
import { runUntilExit } from '../support/service-process.js';

const PROBE = '/api/balance/alice';
const ACCESS_TOKEN_TYPE = 'at+jwt';

function expectInvalidToken(response: ApiResponse, claim_or_reason: RegExp): void {
  expect(response.status, response.text).toBe(401);
  expect((response.body as ProblemRecord).code).toBe('invalid_token');
  expect((response.body as ProblemRecord).detail).toMatch(claim_or_reason);
}

describe('security: tokens bound to this service (production, JWT_TYPES=at+jwt)', () => {
  let env: E2eEnvironment;
  const access = (claims: TokenClaims) => env.idp.sign({ sub: 'alice', ...claims }, { header: { typ: ACCESS_TOKEN_TYPE } });

  beforeAll(async () => {
    env = await startEnvironment({ env: { NODE_ENV: 'production', JWT_TYPES: ACCESS_TOKEN_TYPE } });
  });

  afterAll(async () => {
    await env?.close();
  });

  it('accepts a genuine access token (the type compared as a media type)', async () => {
    expect((await env.anonymous.get(PROBE, { token: await access({}) })).status).toBe(200);
    const typed = await env.idp.sign({ sub: 'alice' }, { header: { typ: 'application/AT+JWT' } });
    expect((await env.anonymous.get(PROBE, { token: typed })).status).toBe(200);
  });

  it('refuses a token minted for another audience, or for none', async () => {
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ aud: 'another-application' }) }), /"aud"/);
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ aud: ['another-application', 'a-third'] }) }), /"aud"/);
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ aud: undefined }) }), /"aud"/);
    // The audience must be ours exactly, not a prefix or a longer name.
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ aud: `${AUDIENCE}-staging` }) }), /"aud"/);
  });

  it('refuses a token of another issuer, or of none', async () => {
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ iss: 'https://tenant-b.idp.example.invalid/' }) }), /"iss"/);
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ iss: `${env.idp.issuer}/other-tenant` }) }), /"iss"/);
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ iss: undefined }) }), /"iss"/);
  });

  it('refuses a token without exp', async () => {
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await access({ exp: undefined }) }), /"exp"/);
  });

  it('refuses a token whose typ is not one of JWT_TYPES (e.g. an ID token), or has none', async () => {
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await env.idp.sign({ sub: 'alice' }) }), /typ/);
    expectInvalidToken(await env.anonymous.get(PROBE, { token: await env.idp.sign({ sub: 'alice' }, { header: { typ: 'id_token+jwt' } }) }), /typ/);
    const untyped = await env.idp.sign({ sub: 'alice' }, { header: { typ: undefined } });
    expectInvalidToken(await env.anonymous.get(PROBE, { token: untyped }), /typ/);
  });
});

describe('security: start-up refuses an identity provider that does not bind tokens', () => {
  const PRODUCTION = { NODE_ENV: 'production', JWT_SECRET: '' };

  it.each([
    ['JWT_AUDIENCE', 'an issuer without JWT_AUDIENCE', { JWT_ISSUER: 'https://idp.example.invalid/' }],
    ['JWT_AUDIENCE', 'a JWKS URL without JWT_AUDIENCE', { JWT_JWKS_URL: 'https://idp.example.invalid/jwks.json' }],
    ['JWT_ISSUER', 'a JWKS URL without an issuer to pin', { JWT_JWKS_URL: 'https://idp.example.invalid/jwks.json', JWT_AUDIENCE: 'tabula' }],
    ['JWT_ISSUER', 'an http issuer off loopback', { JWT_ISSUER: 'http://idp.example.invalid/', JWT_AUDIENCE: 'tabula' }],
    ['JWT_JWKS_URL', 'an http JWKS URL off loopback', { JWT_ISSUER: 'https://idp.example.invalid/', JWT_JWKS_URL: 'http://idp.example.invalid/jwks.json', JWT_AUDIENCE: 'tabula' }],
  ])('refuses %s: %s', async (variable, _name, env) => {
    const result = await runUntilExit({ ...PRODUCTION, ...env });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain(`${variable}:`);
  });

  it('refuses an http identity provider off loopback outside production too', async () => {
    const result = await runUntilExit({ JWT_ISSUER: 'http://idp.example.invalid/' });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain('JWT_ISSUER: must be https');
  });
});
