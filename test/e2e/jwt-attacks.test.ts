/**
 * Authentication of the built service against a real identity provider (OpenID discovery + JWKS):
 * every forged, stale or misaddressed token is a 401 with `WWW-Authenticate: Bearer realm="ledger"…`
 * and a problem+json body; the genuine ES256 and RS256 tokens work; unknown `kid`s cannot make the
 * service hammer the provider; and, with API_KEYS set, X-API-Key is required.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK } from 'jose';
import { ADMIN, ADMIN_SCOPE, AUDIENCE, startEnvironment, type E2eEnvironment } from './support/fixture.js';
import {
  createSigningKey,
  decodePayload,
  IdentityProvider,
  nowSeconds,
  signHs256,
  unsignedToken,
  withPayload,
} from './support/identity-provider.js';
import { ApiClient, type ApiResponse, type ProblemRecord, mapLimit, serverErrors, sleep } from './support/http.js';
import { ServiceProcess } from '../support/service-process.js';

const PROBE = '/api/balance/alice';

function expectUnauthorized(response: ApiResponse, code: string, options: { error_param: boolean }): void {
  expect(response.status, response.text).toBe(401);
  const challenge = response.headers.get('www-authenticate') ?? '';
  expect(challenge.startsWith('Bearer realm="ledger"'), challenge).toBe(true);
  if (options.error_param) expect(challenge).toContain('error="invalid_token"');
  else expect(challenge).not.toContain('error=');
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = response.body as ProblemRecord;
  expect(body).toMatchObject({ status: 401, title: 'Unauthorized', code });
  expect(typeof body.type).toBe('string');
  expect(typeof body.detail).toBe('string');
}

describe('e2e: JWT attack matrix against a real identity provider', () => {
  let env: E2eEnvironment;
  let idp: IdentityProvider;
  /** Another, independent identity provider the service does not trust. */
  let stranger: IdentityProvider;

  beforeAll(async () => {
    [env, stranger] = await Promise.all([startEnvironment(), IdentityProvider.start({ audience: AUDIENCE })]);
    idp = env.idp;
  });

  afterAll(async () => {
    await Promise.all([env?.close(), stranger?.close()]);
    expect(serverErrors()).toEqual([]);
  });

  it('discovered the JWKS through OpenID configuration', () => {
    expect(idp.discoveryFetchCount).toBeGreaterThanOrEqual(1);
  });

  it('accepts genuine ES256 and RS256 tokens', async () => {
    for (const alg of ['ES256', 'RS256'] as const) {
      const token = await idp.sign({ sub: 'alice', scope: 'openid' }, { key: alg });
      const response = await env.anonymous.get(PROBE, { token });
      expect(response.status, `${alg}: ${response.text}`).toBe(200);
      expect(response.body).toMatchObject({ user_id: 'alice' });
    }
  });

  it('accepts exp and nbf within the 30 s clock tolerance', async () => {
    const now = nowSeconds();
    const just_expired = await idp.sign({ sub: 'alice', exp: now - 10 });
    expect((await env.anonymous.get(PROBE, { token: just_expired })).status).toBe(200);
    const nearly_valid = await idp.sign({ sub: 'alice', nbf: now + 10 });
    expect((await env.anonymous.get(PROBE, { token: nearly_valid })).status).toBe(200);
  });

  it('refuses a request without Authorization with a bare challenge (no error parameter)', async () => {
    expectUnauthorized(await env.anonymous.get(PROBE), 'missing_token', { error_param: false });
    expectUnauthorized(await env.anonymous.post('/api/transactions/submit', { from: 'alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer' }), 'missing_token', { error_param: false });
  });

  type Attack = { name: string; authorization: () => Promise<string> };
  const bearer = (make: () => Promise<string>) => async () => `Bearer ${await make()}`;
  const attacks: Attack[] = [
    { name: 'a malformed token', authorization: async () => 'Bearer not-a-jwt' },
    { name: 'three garbage segments', authorization: async () => 'Bearer aaaa.bbbb.cccc' },
    { name: 'a header that is not JSON', authorization: async () => `Bearer ${Buffer.from('{"alg":').toString('base64url')}.e30.sig` },
    { name: 'a scheme other than Bearer', authorization: async () => `Basic ${Buffer.from('alice:secret').toString('base64')}` },
    { name: 'a Bearer header without a token', authorization: async () => 'Bearer ' },
    { name: 'an expired token (beyond the 30 s tolerance)', authorization: bearer(() => idp.sign({ sub: 'alice', iat: nowSeconds() - 600, nbf: nowSeconds() - 600, exp: nowSeconds() - 60 })) },
    { name: 'nbf in the future (beyond the tolerance)', authorization: bearer(() => idp.sign({ sub: 'alice', nbf: nowSeconds() + 120 })) },
    { name: 'a wrong issuer', authorization: bearer(() => idp.sign({ sub: 'alice', iss: 'https://evil.example' })) },
    { name: 'the issuer with a trailing slash', authorization: bearer(() => idp.sign({ sub: 'alice', iss: `${idp.issuer}/` })) },
    { name: 'a wrong audience', authorization: bearer(() => idp.sign({ sub: 'alice', aud: 'another-api' })) },
    { name: 'no audience', authorization: bearer(() => idp.sign({ sub: 'alice', aud: undefined })) },
    { name: 'alg: none (unsigned)', authorization: async () => `Bearer ${unsignedToken({ sub: ADMIN, scope: ADMIN_SCOPE, iss: idp.issuer, aud: AUDIENCE, exp: nowSeconds() + 300 })}` },
    { name: 'alg: NONE with a signature copied from a real token', authorization: async () => {
      const real = await idp.sign({ sub: 'alice' });
      return `Bearer ${unsignedToken(decodePayload(real), 'NONE')}${real.split('.')[2]}`;
    } },
    { name: 'a rogue ES256 key using the published ES256 kid', authorization: async () => {
      const rogue = await createSigningKey('ES256', idp.key('ES256').kid);
      return `Bearer ${await idp.sign({ sub: ADMIN, scope: ADMIN_SCOPE }, { key: rogue })}`;
    } },
    { name: 'a rogue RS256 key using the published RS256 kid', authorization: async () => {
      const rogue = await createSigningKey('RS256', idp.key('RS256').kid);
      return `Bearer ${await idp.sign({ sub: ADMIN, scope: ADMIN_SCOPE }, { key: rogue })}`;
    } },
    { name: 'a rogue key that embeds itself as jwk and points jku at its own JWKS', authorization: async () => {
      const rogue = stranger.key('ES256');
      return `Bearer ${await idp.sign({ sub: ADMIN, scope: ADMIN_SCOPE }, { key: rogue, header: { jwk: rogue.publicJwk, jku: stranger.jwksUrl } })}`;
    } },
    { name: 'a token from another identity provider (its own issuer and keys)', authorization: bearer(() => stranger.sign({ sub: 'alice' })) },
    { name: 'another provider’s key but our issuer and kid', authorization: bearer(() => stranger.sign({ sub: 'alice', iss: idp.issuer }, { kid: idp.key('ES256').kid })) },
    { name: 'HS256 with the RSA public key (PEM) as HMAC secret', authorization: async () => {
      const pem = await idp.rsaPublicKeyPem();
      return `Bearer ${signHs256({ alg: 'HS256', typ: 'JWT', kid: idp.key('RS256').kid }, claims(), pem)}`;
    } },
    { name: 'HS256 with the RSA public key (PEM, no trailing newline) as HMAC secret', authorization: async () => {
      const pem = (await idp.rsaPublicKeyPem()).trim();
      return `Bearer ${signHs256({ alg: 'HS256', typ: 'JWT', kid: idp.key('RS256').kid }, claims(), pem)}`;
    } },
    { name: 'HS256 with the published RSA JWK (JSON) as HMAC secret', authorization: async () => {
      const jwk = JSON.stringify(idp.key('RS256').publicJwk);
      return `Bearer ${signHs256({ alg: 'HS256', typ: 'JWT', kid: idp.key('RS256').kid }, claims(), jwk)}`;
    } },
    { name: 'HS256 with the RSA modulus (JWK n) as HMAC secret', authorization: async () => {
      const { n } = await exportJWK(idp.key('RS256').publicKey);
      return `Bearer ${signHs256({ alg: 'HS256', typ: 'JWT', kid: idp.key('RS256').kid }, claims(), Buffer.from(n ?? '', 'base64url'))}`;
    } },
    { name: 'a tampered payload (sub changed after signing)', authorization: async () => {
      const token = await idp.sign({ sub: 'alice', scope: 'openid' });
      return `Bearer ${withPayload(token, { ...decodePayload(token), sub: 'bob' })}`;
    } },
    { name: 'a tampered payload (admin scope added after signing)', authorization: async () => {
      const token = await idp.sign({ sub: 'alice', scope: 'openid' }, { key: 'RS256' });
      return `Bearer ${withPayload(token, { ...decodePayload(token), scope: `openid ${ADMIN_SCOPE}` })}`;
    } },
    { name: 'a signature from the ES256 token on another payload', authorization: async () => {
      const [a, b] = await Promise.all([idp.sign({ sub: 'alice' }), idp.sign({ sub: 'bob' })]);
      return `Bearer ${a.split('.').slice(0, 2).join('.')}.${b.split('.')[2]}`;
    } },
    { name: 'a token without sub', authorization: bearer(() => idp.sign({ sub: undefined, scope: 'openid' })) },
    { name: 'a token with an empty sub', authorization: bearer(() => idp.sign({ sub: '' })) },
    { name: 'RS256 named in the header of an ES256 signature', authorization: async () => {
      const token = await idp.sign({ sub: 'alice' }, { key: 'ES256' });
      const header = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: idp.key('RS256').kid })).toString('base64url');
      return `Bearer ${header}.${token.split('.').slice(1).join('.')}`;
    } },
  ];

  function claims(): Record<string, unknown> {
    const now = nowSeconds();
    return { sub: ADMIN, scope: ADMIN_SCOPE, iss: idp.issuer, aud: AUDIENCE, iat: now, nbf: now, exp: now + 300 };
  }

  it.each(attacks)('refuses $name with 401 invalid_token', async ({ authorization }) => {
    const value = await authorization();
    expectUnauthorized(await env.anonymous.get(PROBE, { authorization: value }), 'invalid_token', { error_param: true });
    // A forged token must not get a submission stored either.
    const submit = await env.anonymous.post(
      '/api/transactions/submit',
      { from: ADMIN, to: 'mallory', amount: 1000, token: 'TAB', type: 'mint' },
      { authorization: value },
    );
    expectUnauthorized(submit, 'invalid_token', { error_param: true });
  });

  it('stored nothing for any refused request', async () => {
    await sleep(400); // anything stored would have been sealed by now (BLOCK_INTERVAL_MS=100)
    const mallory = await env.as('mallory');
    expect((await mallory.balance('mallory')).body).toMatchObject({ native: 0 });
    const stats = await env.admin.stats();
    expect(stats.body.total_transactions).toBe(0);
  });

  it('never fetched keys from a URL named in a token (jku) and kept JWKS fetches few', () => {
    expect(stranger.jwksFetchCount).toBe(0);
    expect(stranger.discoveryFetchCount).toBe(0);
    // One initial fetch plus at most one refetch per 30 s cooldown for the unknown kids above.
    expect(idp.jwksFetchCount).toBeGreaterThanOrEqual(1);
    expect(idp.jwksFetchCount).toBeLessThanOrEqual(3);
  });

  it('does not fetch the JWKS once per request under a flood of unknown kids', async () => {
    const before = idp.jwksFetchCount;
    const flood = Array.from({ length: 200 }, (_, index) => index);
    const statuses = await mapLimit(flood, 25, async (index) => {
      const token = await idp.sign({ sub: `flood-${index}` }, { kid: `unknown-${index}-${Math.random().toString(36).slice(2)}` });
      return (await env.anonymous.get(PROBE, { token })).status;
    });
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect(idp.jwksFetchCount - before).toBeLessThanOrEqual(1);
    // Genuine tokens still work.
    expect((await env.anonymous.get(PROBE, { token: await idp.sign({ sub: 'alice' }) })).status).toBe(200);
  });

  it('applies the admin scope and account ownership from the verified token', async () => {
    const alice = await env.as('alice');
    const admin_by_scp = env.anonymous.as(await idp.sign({ sub: ADMIN, scp: ['openid', ADMIN_SCOPE] }, { key: 'RS256' }));
    const mint = await admin_by_scp.submit({ from: ADMIN, to: 'alice', amount: 5, token: 'TAB', type: 'mint' });
    expect(mint.status, mint.text).toBe(202);
    const denied = await alice.submit({ from: ADMIN, to: 'alice', amount: 5, token: 'TAB', type: 'mint' });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 'admin_required' });
    const not_owner = await alice.submit({ from: 'bob', to: 'alice', amount: 1, token: 'TAB', type: 'transfer' });
    expect(not_owner.status).toBe(403);
    expect(not_owner.body).toMatchObject({ code: 'not_account_owner' });
    const own = await alice.submit({ from: 'alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer' });
    expect(own.status, own.text).toBe(202);
  });
});

describe('e2e: API keys (API_KEYS set)', () => {
  const KEYS = ['e2e-api-key-0123456789abcdef', 'e2e-second-key-fedcba9876543210'];
  let env: E2eEnvironment;

  beforeAll(async () => {
    env = await startEnvironment({ env: { API_KEYS: KEYS.join(',') } });
  });

  afterAll(async () => {
    await env?.close();
    expect(serverErrors()).toEqual([]);
  });

  function expectInvalidApiKey(response: ApiResponse): void {
    expect(response.status, response.text).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 401, code: 'invalid_api_key' });
  }

  it('refuses a request without X-API-Key, even with a valid token', async () => {
    expectInvalidApiKey(await env.admin.get('/api/stats'));
    expectInvalidApiKey(await env.anonymous.get('/api/stats'));
  });

  it('refuses a wrong, empty or near-miss X-API-Key', async () => {
    for (const key of ['wrong-key-0123456789abcdef', `${KEYS[0]}x`, KEYS[0]?.slice(0, -1) ?? '', KEYS.join(',')]) {
      expectInvalidApiKey(await env.admin.get('/api/stats', { headers: { 'x-api-key': key } }));
    }
  });

  it('accepts each configured key with a valid token, and still requires the token', async () => {
    for (const key of KEYS) {
      const response = await env.admin.get('/api/stats', { headers: { 'x-api-key': key } });
      expect(response.status, response.text).toBe(200);
    }
    expectUnauthorized(await env.anonymous.get('/api/stats', { headers: { 'x-api-key': KEYS[0] ?? '' } }), 'missing_token', { error_param: false });
    const submit = await env.admin.submit({ from: ADMIN, to: 'alice', amount: 1, token: 'TAB', type: 'mint' }, { headers: { 'x-api-key': KEYS[1] ?? '' } });
    expect(submit.status, submit.text).toBe(202);
  });

  it('leaves /healthz and /readyz open', async () => {
    expect((await env.anonymous.get('/healthz')).status).toBe(200);
    expect((await env.anonymous.get('/readyz')).status).toBe(200);
  });
});

describe('e2e: an identity provider whose issuer ends in a slash (as Auth0 writes it)', () => {
  let env: E2eEnvironment;

  beforeAll(async () => {
    env = await startEnvironment({ idp: { issuerTrailingSlash: true } });
  });

  afterAll(async () => {
    await env?.close();
    expect(serverErrors()).toEqual([]);
  });

  it('accepts its tokens when JWT_ISSUER is set exactly to its issuer', async () => {
    // JWT_ISSUER = "http://127.0.0.1:<port>/" and the tokens carry exactly that `iss`.
    expect(env.idp.issuer.endsWith('/')).toBe(true);
    const response = await env.admin.get('/api/stats');
    expect(response.status, response.text).toBe(200);
  });
});

describe('e2e: JWT_JWKS_URL given directly, with JWT_SECRET for HS256 as well', () => {
  const SECRET = 'e2e-hs256-secret-that-is-at-least-32-bytes';
  let idp: IdentityProvider;
  let service: ServiceProcess;
  let client: ApiClient;

  beforeAll(async () => {
    idp = await IdentityProvider.start({ audience: AUDIENCE });
    service = await ServiceProcess.start({
      env: { JWT_JWKS_URL: idp.jwksUrl, JWT_SECRET: SECRET, JWT_AUDIENCE: AUDIENCE, RATE_LIMIT_MAX: '1000000', BLOCK_INTERVAL_MS: '100' },
    });
    client = new ApiClient(() => service.url);
  });

  afterAll(async () => {
    await service?.close();
    await idp?.close();
    expect(serverErrors()).toEqual([]);
  });

  it('accepts JWKS-signed tokens (no discovery) and HS256 tokens signed with JWT_SECRET', async () => {
    expect(idp.discoveryFetchCount).toBe(0);
    for (const alg of ['ES256', 'RS256'] as const) {
      const response = await client.get(PROBE, { token: await idp.sign({ sub: 'alice' }, { key: alg }) });
      expect(response.status, `${alg}: ${response.text}`).toBe(200);
    }
    const now = nowSeconds();
    const hs = signHs256({ alg: 'HS256', typ: 'JWT' }, { sub: 'alice', aud: AUDIENCE, iat: now, exp: now + 300 }, SECRET);
    expect((await client.get(PROBE, { token: hs })).status).toBe(200);
  });

  it('still refuses HS256 signed with the RSA public key, a wrong secret, or a wrong audience', async () => {
    const now = nowSeconds();
    const payload = { sub: ADMIN, scope: ADMIN_SCOPE, aud: AUDIENCE, iat: now, exp: now + 300 };
    const header = { alg: 'HS256', typ: 'JWT', kid: idp.key('RS256').kid };
    const forged = [
      signHs256(header, payload, await idp.rsaPublicKeyPem()),
      signHs256(header, payload, JSON.stringify(idp.key('RS256').publicJwk)),
      signHs256({ alg: 'HS256', typ: 'JWT' }, payload, `${SECRET}-but-not-quite`),
      signHs256({ alg: 'HS256', typ: 'JWT' }, { ...payload, aud: 'another-api' }, SECRET),
      signHs256({ alg: 'HS512', typ: 'JWT' }, payload, SECRET),
      unsignedToken(payload),
    ];
    for (const token of forged) expectUnauthorized(await client.get(PROBE, { token }), 'invalid_token', { error_param: true });
  });
});
