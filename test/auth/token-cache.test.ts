import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { CLOCK_TOLERANCE_S, createTokenVerifier } from '../../src/auth/token-verifier.js';
import { TokenCache } from '../../src/auth/token-cache.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';

class ManualClock {
  ms = Date.now();
  now_ms = () => this.ms;
}

const key = new TextEncoder().encode(TEST_SECRET);
const jwt = { issuer: undefined, jwks_url: undefined, audience: undefined, secret: TEST_SECRET, types: [], jwks_cache_max_age_ms: 600_000, jwks_stale_grace_ms: 86_400_000 };

function sign(sub: string, exp_s: number, claims: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime(exp_s).sign(key);
}

async function verifierWithCounts(clock: ManualClock, entries_max?: number) {
  const lookups = { hit: 0, miss: 0 };
  const verifier = await createTokenVerifier({
    jwt, admin_scope: 'ledger:admin', clock, on_cache_lookup: (hit) => { lookups[hit ? 'hit' : 'miss'] += 1; },
    ...(entries_max === undefined ? {} : { token_cache_entries_max: entries_max }),
  });
  return { verifier, lookups };
}

describe('cache of verified tokens', () => {
  it('verifies a token once, then answers from the cache', async () => {
    const clock = new ManualClock();
    const { verifier, lookups } = await verifierWithCounts(clock);
    const token = await sign('alice', Math.floor(clock.ms / 1000) + 600);
    expect(await verifier.verify(token)).toEqual({ sub: 'alice', admin: false });
    expect(await verifier.verify(token)).toEqual({ sub: 'alice', admin: false });
    expect(lookups).toEqual({ hit: 1, miss: 1 });
  });

  it('refuses a cached token once it has expired (beyond the clock tolerance), exactly as jose does', async () => {
    const clock = new ManualClock();
    const { verifier, lookups } = await verifierWithCounts(clock);
    const exp_s = Math.floor(clock.ms / 1000) + 5;
    const token = await sign('alice', exp_s);
    await verifier.verify(token);
    // Still inside the tolerance: accepted (from the cache).
    clock.ms = (exp_s + CLOCK_TOLERANCE_S - 1) * 1000;
    expect((await verifier.verify(token)).sub).toBe('alice');
    expect(lookups.hit).toBe(1);
    // Past it: the cache does not answer, and full verification refuses the token.
    clock.ms = (exp_s + CLOCK_TOLERANCE_S) * 1000;
    await expect(verifier.verify(token)).rejects.toMatchObject({ code: 'invalid_token', message: 'token expired' });
    expect(lookups).toEqual({ hit: 1, miss: 2 });
  });

  it('never confuses two tokens, even of the same subject', async () => {
    const clock = new ManualClock();
    const { verifier } = await verifierWithCounts(clock);
    const exp_s = Math.floor(clock.ms / 1000) + 600;
    const alice = await sign('alice', exp_s);
    const bob = await sign('bob', exp_s);
    const alice_admin = await sign('alice', exp_s, { scope: 'ledger:admin' });
    for (let round = 0; round < 2; round += 1) {
      expect(await verifier.verify(alice)).toEqual({ sub: 'alice', admin: false });
      expect(await verifier.verify(bob)).toEqual({ sub: 'bob', admin: false });
      expect(await verifier.verify(alice_admin)).toEqual({ sub: 'alice', admin: true });
    }
  });

  it('never caches a token that failed verification', async () => {
    const clock = new ManualClock();
    const { verifier, lookups } = await verifierWithCounts(clock);
    const forged = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime('5m')
      .sign(new TextEncoder().encode('another-secret-that-is-32-bytes-long!!'));
    for (let round = 0; round < 3; round += 1) await expect(verifier.verify(forged)).rejects.toMatchObject({ code: 'invalid_token' });
    expect(lookups).toEqual({ hit: 0, miss: 3 });
  });

  it('verifies again from scratch after the entry age limit', async () => {
    const clock = new ManualClock();
    const { verifier, lookups } = await verifierWithCounts(clock);
    const token = await sign('alice', Math.floor(clock.ms / 1000) + 3600);
    await verifier.verify(token);
    clock.ms += 61_000;
    await verifier.verify(token);
    expect(lookups).toEqual({ hit: 0, miss: 2 });
  });

  it('holds at most entries_max tokens, dropping the oldest', () => {
    const clock = new ManualClock();
    const cache = new TokenCache({ entries_max: 3, entry_age_ms_max: 60_000, clock_tolerance_s: 30, clock });
    const exp_s = Math.floor(clock.ms / 1000) + 600;
    for (const sub of ['a', 'b', 'c', 'd']) cache.put(`token-${sub}`, { sub, admin: false }, exp_s);
    expect(cache.size).toBe(3);
    expect(cache.get('token-a')).toBeNull();
    expect(cache.get('token-d')).toEqual({ sub: 'd', admin: false });
  });

  it('can be turned off', async () => {
    const clock = new ManualClock();
    const { verifier, lookups } = await verifierWithCounts(clock, 0);
    const token = await sign('alice', Math.floor(clock.ms / 1000) + 600);
    await verifier.verify(token);
    await verifier.verify(token);
    expect(lookups).toEqual({ hit: 0, miss: 0 });
  });
});
