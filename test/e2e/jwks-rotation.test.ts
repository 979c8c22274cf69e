/**
 * Key rotation at the identity provider, seen by the built service: a token signed with a newly
 * published key (a `kid` the service has not seen) is accepted after exactly one JWKS refetch, and
 * neither that nor a flood of tokens with random unknown `kid`s makes the service fetch the JWKS once
 * per request (the refetch cooldown, 30 s in src/auth/identity-provider-keys.ts, bounds it).
 *
 * This file waits out one cooldown (~30 s, idle), so it is kept apart to run beside the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type E2eEnvironment } from './support/fixture.js';
import { mapLimit, serverErrors, sleep } from './support/http.js';

const PROBE = '/api/balance/alice';
/** The documented refetch cooldown is 30 s; allow for scheduling. */
const COOLDOWN_WAIT_MAX_MS = 40_000;

describe('e2e: JWKS key rotation and unknown kids', () => {
  let env: E2eEnvironment;

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.close();
    expect(serverErrors()).toEqual([]);
  });

  async function flood(count: number): Promise<Set<number>> {
    const statuses = await mapLimit(Array.from({ length: count }, (_, index) => index), 20, async (index) => {
      const token = await env.idp.sign({ sub: `flood-${index}` }, { kid: `random-${Math.random().toString(36).slice(2)}` });
      return (await env.anonymous.get(PROBE, { token })).status;
    });
    return new Set(statuses);
  }

  it('accepts a token from a newly rotated key after one refetch, without a fetch per request', { timeout: 60_000 }, async () => {
    const first = await env.anonymous.get(PROBE, { token: await env.idp.sign({ sub: 'alice' }) });
    expect(first.status, first.text).toBe(200);
    const first_fetch_at = Date.now();
    // The keys were fetched (at start-up or for this first token), once.
    const base = env.idp.jwksFetchCount;
    expect(base).toBe(1);

    // Unknown kids right after a fetch: refused, and no fetch at all.
    expect(await flood(100)).toEqual(new Set([401]));
    expect(env.idp.jwksFetchCount).toBe(base);

    const rotated = await env.idp.rotate('ES256');
    const token = await env.idp.sign({ sub: 'alice' }, { key: rotated });
    let accepted_at = 0;
    let attempts = 0;
    while (Date.now() - first_fetch_at < COOLDOWN_WAIT_MAX_MS) {
      attempts += 1;
      const response = await env.anonymous.get(PROBE, { token });
      if (response.status === 200) {
        accepted_at = Date.now();
        break;
      }
      expect(response.status, response.text).toBe(401);
      // While the service cools down it must not refetch, however often it is asked.
      expect(env.idp.jwksFetchCount).toBe(base);
      await sleep(500);
    }
    expect(accepted_at, `the rotated key was not accepted within ${COOLDOWN_WAIT_MAX_MS} ms (${attempts} attempts)`).toBeGreaterThan(0);
    expect(env.idp.jwksFetchCount).toBe(base + 1);

    // The rotated key keeps working, the previous key too (still published), without more fetches.
    for (let index = 0; index < 20; index += 1) {
      expect((await env.anonymous.get(PROBE, { token: await env.idp.sign({ sub: 'alice' }, { key: rotated }) })).status).toBe(200);
    }
    const previous_es = env.idp.publishedKeys.find((key) => key.alg === 'ES256' && key.kid !== rotated.kid);
    expect(previous_es).toBeDefined();
    if (previous_es !== undefined) expect((await env.anonymous.get(PROBE, { token: await env.idp.sign({ sub: 'alice' }, { key: previous_es }) })).status).toBe(200);
    expect((await env.anonymous.get(PROBE, { token: await env.idp.sign({ sub: 'alice' }, { key: 'RS256' }) })).status).toBe(200);

    // A flood of unknown kids right after the refetch: still no fetch per request.
    expect(await flood(200)).toEqual(new Set([401]));
    expect(env.idp.jwksFetchCount).toBe(base + 1);
  });
});
