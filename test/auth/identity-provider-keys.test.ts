/**
 * The identity provider's keys through rotation and outages, on a manual clock against a real
 * loopback provider: fresh for the cache age, then refetched in the background; kept through an
 * outage for the stale grace; an unknown `kid` refetches once per cooldown and is "unavailable" (503),
 * not "invalid" (401), while the provider cannot be reached; a failed fetch is retried no sooner than
 * the retry interval.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AuthError } from '../../src/auth/auth-error.js';
import { JWKS_COOLDOWN_MS, JWKS_RETRY_MS } from '../../src/auth/identity-provider-keys.js';
import { createTokenVerifier, type TokenVerifier } from '../../src/auth/token-verifier.js';
import { IdentityProvider, nowSeconds } from '../e2e/support/identity-provider.js';

class ManualClock {
  ms = Date.now();
  now_ms = () => this.ms;
}

const MAX_AGE_MS = 60_000;
const GRACE_MS = 3_600_000;
const AUDIENCE = 'tabula-unit';

type Setup = { idp: IdentityProvider; clock: ManualClock; verifier: TokenVerifier };
const open: Setup[] = [];

async function setup(): Promise<Setup> {
  const idp = await IdentityProvider.start({ audience: AUDIENCE });
  const clock = new ManualClock();
  const verifier = await createTokenVerifier({
    jwt: { issuer: idp.issuer, jwks_url: undefined, audience: AUDIENCE, secret: undefined, types: [], jwks_cache_max_age_ms: MAX_AGE_MS, jwks_stale_grace_ms: GRACE_MS },
    admin_scope: 'ledger:admin', clock, token_cache_entries_max: 0,
  });
  const made = { idp, clock, verifier };
  open.push(made);
  await settled(made);
  return made;
}

async function settled({ verifier }: Setup): Promise<void> {
  await verifier.identity_provider?.settled();
}

/** A token valid for days of the manual clock. */
function token(idp: IdentityProvider, options: { kid?: string } = {}): Promise<string> {
  return idp.sign({ sub: 'alice', exp: nowSeconds() + 7 * 86_400 }, options.kid === undefined ? {} : { kid: options.kid });
}

async function refusal(verifier: TokenVerifier, jwt: string): Promise<string> {
  try {
    await verifier.verify(jwt);
  } catch (error) {
    if (error instanceof AuthError) return error.code;
    throw error;
  }
  return 'accepted';
}

afterEach(async () => {
  for (const { idp, verifier } of open.splice(0)) {
    verifier.close();
    await idp.close();
  }
});

describe('identity provider keys', () => {
  it('fetches once at start (discovery, then the JWKS) and is ready after it', async () => {
    const made = await setup();
    expect([made.idp.discoveryFetchCount, made.idp.jwksFetchCount]).toEqual([1, 1]);
    expect(made.verifier.readiness()).toBeNull();
    expect(await made.verifier.verify(await token(made.idp))).toEqual({ sub: 'alice', admin: false });
    expect(made.idp.jwksFetchCount).toBe(1);
  });

  it('refetches in the background once the keys are older than the cache age, answering from the keys in hand', async () => {
    const made = await setup();
    made.clock.ms += MAX_AGE_MS - 1;
    await made.verifier.verify(await token(made.idp));
    await settled(made);
    expect(made.idp.jwksFetchCount).toBe(1);
    made.clock.ms += 2;
    await made.verifier.verify(await token(made.idp));
    await settled(made);
    expect(made.idp.jwksFetchCount).toBe(2);
    expect(made.idp.discoveryFetchCount).toBe(1);
  });

  it('refetches for an unknown kid at most once per cooldown, and refuses it as invalid while the provider answers', async () => {
    const made = await setup();
    expect(await refusal(made.verifier, await token(made.idp, { kid: 'unknown' }))).toBe('invalid_token');
    expect(made.idp.jwksFetchCount).toBe(1);
    const rotated = await made.idp.rotate('ES256');
    const fresh = await made.idp.sign({ sub: 'alice', exp: nowSeconds() + 86_400 }, { key: rotated });
    expect(await refusal(made.verifier, fresh)).toBe('invalid_token');
    made.clock.ms += JWKS_COOLDOWN_MS;
    expect(await refusal(made.verifier, fresh)).toBe('accepted');
    expect(made.idp.jwksFetchCount).toBe(2);
  });

  it('keeps the last keys through an outage for the grace, answers unknown kids 503, then every token', async () => {
    const made = await setup();
    await made.idp.close();
    made.clock.ms += MAX_AGE_MS + 1;
    expect(await refusal(made.verifier, await token(made.idp))).toBe('accepted');
    await settled(made);
    expect(made.verifier.identity_provider?.fetch_failures).toBe(1);
    expect(await refusal(made.verifier, await token(made.idp, { kid: 'rotated-during-the-outage' }))).toBe('identity_provider_unavailable');
    // Within the retry interval nothing more is fetched, however often it is asked.
    expect(made.verifier.identity_provider?.fetch_failures).toBe(1);
    made.clock.ms += GRACE_MS - JWKS_RETRY_MS;
    expect(await refusal(made.verifier, await token(made.idp))).toBe('accepted');
    await settled(made);
    expect(made.verifier.identity_provider?.fetch_failures).toBe(2);
    expect(made.verifier.readiness()).toBeNull();
    made.clock.ms += JWKS_RETRY_MS;
    expect(await refusal(made.verifier, await token(made.idp))).toBe('identity_provider_unavailable');
    expect(made.verifier.readiness()).not.toBeNull();
    expect(made.verifier.identity_provider?.age_s()).toBeGreaterThan((MAX_AGE_MS + GRACE_MS) / 1000);
  });
});
