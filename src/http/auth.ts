/**
 * Authentication: API keys (`X-API-Key`) and JWT bearer tokens verified with jose. Keys come from the
 * identity provider's JWKS (found through OpenID discovery or given directly), fetched and cached by
 * jose: an unknown `kid` triggers at most one refetch per cooldown, never one per request. Only
 * asymmetric algorithms are accepted from the JWKS; `JWT_SECRET` adds HS256 for development.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import * as jose from 'jose';
import type { JwtConfig } from '../config.js';
import { systemClock, type Clock } from '../service/clock.js';
import type { Principal } from '../service/ledger-service.js';
import { TOKEN_CACHE_DEFAULTS, TokenCache } from './token-cache.js';

export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
export const CLOCK_TOLERANCE_S = 30;
const JWKS_COOLDOWN_MS = 30_000;
const JWKS_CACHE_MAX_AGE_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 5000;
const DISCOVERY_ATTEMPTS_MAX = 5;
const TOKEN_LENGTH_MAX = 16 * 1024;

/** Why a token was refused; the HTTP edge turns it into 401 (or 503 when the IdP is unreachable). */
export class AuthError extends Error {
  readonly code: 'missing_token' | 'invalid_token' | 'invalid_api_key' | 'identity_provider_unavailable';
  constructor(code: AuthError['code'], message: string) {
    super(message);
    this.name = 'AuthError';
    this.code = code;
  }
}

export type TokenVerifier = { verify(token: string): Promise<Principal> };

export type VerifierOptions = {
  jwt: JwtConfig;
  admin_scope: string;
  /** The development secret, when no identity provider is configured. */
  dev_secret?: string | undefined;
  /** What `exp` and `nbf` are checked against; the real time unless a test passes its own. */
  clock?: Clock;
  /** Told about every lookup in the cache of verified tokens (hit or miss). */
  on_cache_lookup?: (hit: boolean) => void;
  /** Verified tokens remembered at the most; 0 turns the cache off. */
  token_cache_entries_max?: number;
};

export async function createTokenVerifier(options: VerifierOptions): Promise<TokenVerifier> {
  const { jwt } = options;
  const jwks_url = jwt.jwks_url ?? (jwt.issuer === undefined ? undefined : await discoverJwksUrl(jwt.issuer));
  const jwks = jwks_url === undefined
    ? undefined
    : jose.createRemoteJWKSet(new URL(jwks_url), { cooldownDuration: JWKS_COOLDOWN_MS, cacheMaxAge: JWKS_CACHE_MAX_AGE_MS, timeoutDuration: FETCH_TIMEOUT_MS });
  const secret_text = jwt.secret ?? options.dev_secret;
  const secret = secret_text === undefined ? undefined : new TextEncoder().encode(secret_text);
  const verify_options: jose.JWTVerifyOptions = {
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ['sub', 'exp'],
    ...(jwt.issuer === undefined ? {} : { issuer: jwt.issuer }),
    ...(jwt.audience === undefined ? {} : { audience: jwt.audience }),
  };

  const clock = options.clock ?? systemClock;
  const entries_max = options.token_cache_entries_max ?? TOKEN_CACHE_DEFAULTS.entries_max;
  const cache = entries_max === 0 ? null : new TokenCache({
    entries_max,
    entry_age_ms_max: TOKEN_CACHE_DEFAULTS.entry_age_ms_max,
    clock_tolerance_s: CLOCK_TOLERANCE_S,
    clock,
    ...(options.on_cache_lookup === undefined ? {} : { on_lookup: options.on_cache_lookup }),
  });

  return {
    async verify(token: string): Promise<Principal> {
      if (token.length > TOKEN_LENGTH_MAX) throw new AuthError('invalid_token', 'token too long');
      const cached = cache?.get(token) ?? null;
      if (cached !== null) return cached;
      const alg = headerAlgorithm(token);
      try {
        const current = { ...verify_options, currentDate: new Date(clock.now_ms()) };
        const { payload } = alg === 'HS256' && secret !== undefined
          ? await jose.jwtVerify(token, secret, { ...current, algorithms: ['HS256'] })
          : await verifyWithJwks(token, alg, jwks, current);
        const principal = principalOf(payload, options.admin_scope);
        // requiredClaims makes jose refuse a token without a numeric exp, so it is always here.
        if (typeof payload.exp === 'number') cache?.put(token, principal, payload.exp);
        return principal;
      } catch (error) {
        throw toAuthError(error);
      }
    },
  };
}

async function verifyWithJwks(
  token: string,
  alg: string,
  jwks: ReturnType<typeof jose.createRemoteJWKSet> | undefined,
  verify_options: jose.JWTVerifyOptions,
) {
  if (jwks === undefined || !ASYMMETRIC_ALGORITHMS.includes(alg)) {
    throw new AuthError('invalid_token', `algorithm ${alg} is not accepted`);
  }
  return jose.jwtVerify(token, jwks, { ...verify_options, algorithms: ASYMMETRIC_ALGORITHMS });
}

function headerAlgorithm(token: string): string {
  try {
    const header = jose.decodeProtectedHeader(token);
    if (typeof header.alg !== 'string') throw new Error('no alg');
    return header.alg;
  } catch {
    throw new AuthError('invalid_token', 'token is not a well-formed JWS');
  }
}

function principalOf(payload: jose.JWTPayload, admin_scope: string): Principal {
  if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw new AuthError('invalid_token', 'token has no subject');
  // Ids are NFC (domain/user-id.ts): an identity provider's other spelling of a subject is the same account.
  return { sub: payload.sub.normalize('NFC'), admin: scopesOf(payload).includes(admin_scope) };
}

/** `scope` (space-separated) and `scp` (array or string) together. */
function scopesOf(payload: jose.JWTPayload): string[] {
  const scopes: string[] = [];
  if (typeof payload.scope === 'string') scopes.push(...payload.scope.split(' '));
  if (typeof payload.scp === 'string') scopes.push(...payload.scp.split(' '));
  if (Array.isArray(payload.scp)) scopes.push(...payload.scp.filter((item): item is string => typeof item === 'string'));
  return scopes;
}

function toAuthError(error: unknown): AuthError {
  if (error instanceof AuthError) return error;
  if (error instanceof jose.errors.JWKSTimeout || (error instanceof jose.errors.JOSEError && error.code === 'ERR_JWKS_INVALID')) {
    return new AuthError('identity_provider_unavailable', 'the identity provider did not answer');
  }
  if (error instanceof jose.errors.JWTExpired) return new AuthError('invalid_token', 'token expired');
  if (error instanceof jose.errors.JWTClaimValidationFailed) return new AuthError('invalid_token', `token claim "${error.claim}" is not acceptable: ${error.reason}`);
  if (error instanceof jose.errors.JOSEError) return new AuthError('invalid_token', 'token signature or format is not valid');
  if (error instanceof TypeError || (error instanceof Error && /fetch/i.test(error.message))) {
    return new AuthError('identity_provider_unavailable', 'the identity provider could not be reached');
  }
  return new AuthError('invalid_token', 'token is not valid');
}

/**
 * OpenID Connect discovery: `{issuer}/.well-known/openid-configuration` names `jwks_uri`. The issuer
 * is kept exactly as configured for the `iss` check (Auth0's ends in a slash); only the discovery
 * address drops a trailing slash.
 */
export async function discoverJwksUrl(issuer: string): Promise<string> {
  const discovery_url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let last_error: unknown;
  for (let attempt = 1; attempt <= DISCOVERY_ATTEMPTS_MAX; attempt += 1) {
    try {
      const response = await fetch(discovery_url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (!response.ok) throw new Error(`status ${response.status}`);
      const document = (await response.json()) as { jwks_uri?: unknown };
      if (typeof document.jwks_uri !== 'string') throw new Error('no jwks_uri in the discovery document');
      return document.jwks_uri;
    } catch (error) {
      last_error = error;
      await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
    }
  }
  throw new Error(`JWT_ISSUER: OpenID discovery at ${issuer} failed: ${String(last_error)}`);
}

/** Constant-time check of an `X-API-Key` against the configured keys. */
export function createApiKeyCheck(keys: readonly string[]): (presented: string | undefined) => boolean {
  const digests = keys.map(digest);
  return (presented) => {
    if (presented === undefined) return false;
    const candidate = digest(presented);
    let matched = false;
    for (const known of digests) matched = timingSafeEqual(known, candidate) || matched;
    return matched;
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
