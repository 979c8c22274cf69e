/**
 * Issue 15, an identity-provider outage survived, on the built service in production mode: with the
 * test provider stopped, tokens signed with keys fetched before keep working past JWKS_CACHE_MAX_AGE_MS
 * (the stale grace), a token with an unknown `kid` is a 503 `identity_provider_unavailable` with
 * `Retry-After` (never a 401), the outage is logged and counted; past the grace even known keys are a
 * 503. A provider that cannot be reached at start: the service starts, `/readyz` is 503 and bearer
 * tokens are 503 until the keys can be fetched, then it is ready on its own. A discovery document
 * naming another issuer, or an http `jwks_uri` off loopback, is never used.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { AUDIENCE } from '../e2e/support/fixture.js';
import { sleep } from '../e2e/support/http.js';
import { IdentityProvider } from '../e2e/support/identity-provider.js';
import { freePort, ServiceProcess } from '../support/service-process.js';

const PROBE = '/api/balance/alice';
const METRICS_TOKEN = 'security-metrics-token-0123456789';
const CACHE_MAX_AGE_MS = 1000;

type Answer = { status: number; code: string | undefined; retry_after: string | null; www_authenticate: string | null };

/** A plain fetch (the e2e client records every 5xx as a server error; these 503s are the point). */
async function probe(service: ServiceProcess, token: string, path = PROBE): Promise<Answer> {
  const response = await fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(20_000) });
  const body = (await response.json().catch(() => ({}))) as { code?: string };
  return { status: response.status, code: body.code, retry_after: response.headers.get('retry-after'), www_authenticate: response.headers.get('www-authenticate') };
}

async function readiness(service: ServiceProcess): Promise<number> {
  const response = await fetch(`${service.url}/readyz`, { signal: AbortSignal.timeout(5000) });
  await response.arrayBuffer();
  return response.status;
}

async function metric(service: ServiceProcess, name: string): Promise<number> {
  const response = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const line = (await response.text()).split('\n').find((item) => item.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

function productionEnv(idp: { issuer: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'production', JWT_SECRET: '', JWT_ISSUER: idp.issuer, JWT_AUDIENCE: AUDIENCE, METRICS_TOKEN,
    RATE_LIMIT_MAX: '1000000', AUTH_FAILURES_MAX: '1000000', JWKS_CACHE_MAX_AGE_MS: String(CACHE_MAX_AGE_MS), ...extra,
  };
}

const unavailable = { status: 503, code: 'identity_provider_unavailable', retry_after: '5', www_authenticate: null };

describe('security: an identity-provider outage', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  });

  it('keeps known keys working past the cache age, and answers an unknown kid 503 with Retry-After', { timeout: 60_000 }, async () => {
    const idp = await IdentityProvider.start({ audience: AUDIENCE });
    cleanup.push(() => idp.close());
    const service = await ServiceProcess.start({ env: productionEnv(idp) });
    cleanup.push(() => service.close());
    expect((await probe(service, await idp.token('alice'))).status).toBe(200);
    expect((await probe(service, await idp.token('bob', { alg: 'RS256' }))).status).toBe(200);
    // While the provider answers, an unknown kid is simply a bad token.
    expect((await probe(service, await idp.sign({ sub: 'alice' }, { kid: 'never-published' }))).status).toBe(401);

    await idp.close();
    await sleep(CACHE_MAX_AGE_MS * 2);
    // New tokens (never cached) signed with the keys fetched before the outage: still accepted, repeatedly.
    for (let round = 0; round < 3; round += 1) {
      expect((await probe(service, await idp.token(`carol-${round}`))).status).toBe(200);
      expect((await probe(service, await idp.token(`dave-${round}`, { alg: 'RS256' }))).status).toBe(200);
      await sleep(CACHE_MAX_AGE_MS);
    }
    // A key the service has never seen cannot be looked up now: "try again", not "your token is bad".
    const rotated = await idp.rotate('ES256');
    expect(await probe(service, await idp.sign({ sub: 'alice' }, { key: rotated }))).toEqual(unavailable);
    expect(await probe(service, await idp.sign({ sub: 'alice' }, { kid: 'another-unknown-kid' }))).toEqual(unavailable);

    // The operator sees it: a log line with a count, the failures counted, the key set's age growing; still ready.
    const logged = await service.waitForLog((line) => String(line.msg).includes("identity provider's keys cannot be fetched"));
    expect(logged.level).toBe(40);
    expect(Number(logged.failures)).toBeGreaterThanOrEqual(1);
    expect(await metric(service, 'tabula_jwks_fetch_failures_total')).toBeGreaterThanOrEqual(1);
    expect(await metric(service, 'tabula_jwks_age_seconds')).toBeGreaterThan(CACHE_MAX_AGE_MS / 1000);
    expect(await readiness(service)).toBe(200);
  });

  it('stops accepting the last keys once the stale grace is over (JWKS_STALE_GRACE_MS)', { timeout: 60_000 }, async () => {
    const idp = await IdentityProvider.start({ audience: AUDIENCE });
    cleanup.push(() => idp.close());
    const service = await ServiceProcess.start({ env: productionEnv(idp, { JWKS_STALE_GRACE_MS: '1000' }) });
    cleanup.push(() => service.close());
    expect((await probe(service, await idp.token('alice'))).status).toBe(200);
    await idp.close();
    await sleep(CACHE_MAX_AGE_MS + 1000 + 500);
    expect(await probe(service, await idp.token('erin'))).toEqual(unavailable);
  });

  it('starts when the provider cannot be reached, is not ready until it can, then is ready on its own', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const service = await ServiceProcess.start({ env: productionEnv({ issuer }), wait_for: 'alive' });
    cleanup.push(() => service.close());
    await service.waitForLog((line) => String(line.msg).includes("identity provider's keys cannot be fetched"));
    expect(await readiness(service)).toBe(503);
    const early = await IdentityProvider.start({ audience: AUDIENCE });
    cleanup.push(() => early.close());
    // Tokens cannot be checked yet: 503, never 401 (the token may be perfectly good).
    expect(await probe(service, await early.token('alice'))).toEqual(unavailable);
    await early.close();

    const idp = await IdentityProvider.start({ audience: AUDIENCE, port });
    cleanup.push(() => idp.close());
    const deadline = Date.now() + 20_000;
    while ((await readiness(service)) !== 200) {
      expect(Date.now(), 'not ready within 20 s of the provider coming up').toBeLessThan(deadline);
      await sleep(250);
    }
    expect((await probe(service, await idp.token('alice'))).status).toBe(200);
    await service.waitForLog((line) => String(line.msg).includes("keys were fetched again"));
  });

  it.each([
    ['another issuer', { issuer: 'https://impostor.example.invalid' }, 'names issuer'],
    ['an http jwks_uri off loopback', { jwks_uri: 'http://keys.example.invalid/jwks.json' }, 'must be https'],
  ])('never uses a discovery document naming %s', { timeout: 60_000 }, async (_name, discovery, reason) => {
    const idp = await IdentityProvider.start({ audience: AUDIENCE, discovery });
    cleanup.push(() => idp.close());
    const service = await ServiceProcess.start({ env: productionEnv(idp), wait_for: 'alive' });
    cleanup.push(() => service.close());
    const logged = await service.waitForLog((line) => String(line.msg).includes("identity provider's keys cannot be fetched"));
    expect(String(logged.error)).toContain(reason);
    expect(await readiness(service)).toBe(503);
    expect(await probe(service, await idp.token('alice'))).toEqual(unavailable);
    expect(idp.jwksFetchCount).toBe(0);
  });
});
