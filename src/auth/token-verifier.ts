/**
 * JWT bearer tokens verified with jose, following RFC 8725 (JWT best current practice; see
 * docs/security.md): keys come from the identity provider's JWKS (kept through outages by
 * identity-provider-keys.ts) and only asymmetric algorithms are accepted from it; `JWT_SECRET` (or the
 * development secret) adds HS256. `exp` and `sub` are required, `iss` and `aud` are checked when
 * configured (production requires both with an identity provider), and `typ` when JWT_TYPES is set.
 */
import * as jose from 'jose';
import type { Logger } from 'pino';
import type { JwtConfig } from '../config.js';
import { holdsControlCharacters } from '../domain/control-characters.js';
import { systemClock, type Clock } from '../service/clock.js';
import type { Principal } from '../service/ledger-service.js';
import { AuthError } from './auth-error.js';
import { IdentityProviderKeys } from './identity-provider-keys.js';
import { TOKEN_CACHE_DEFAULTS, TokenCache } from './token-cache.js';

export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
export const CLOCK_TOLERANCE_S = 30;
const TOKEN_LENGTH_MAX = 16 * 1024;

export type TokenVerifier = {
  verify(token: string): Promise<Principal>;
  /** Null when tokens can be verified; otherwise why not (the identity provider's keys were never fetched). */
  readiness(): string | null;
  /** The identity provider's keys, when one is configured (for metrics). */
  readonly identity_provider: IdentityProviderKeys | null;
  close(): void;
};

export type VerifierOptions = {
  jwt: JwtConfig;
  admin_scope: string;
  /** The development secret, when no identity provider is configured. */
  dev_secret?: string | undefined;
  /** What `exp` and `nbf` (and the age of fetched keys) are checked against; the real time unless a test passes its own. */
  clock?: Clock;
  logger?: Logger | undefined;
  /** Told about every lookup in the cache of verified tokens (hit or miss). */
  on_cache_lookup?: (hit: boolean) => void;
  /** Verified tokens remembered at the most; 0 turns the cache off. */
  token_cache_entries_max?: number;
};

export async function createTokenVerifier(options: VerifierOptions): Promise<TokenVerifier> {
  const { jwt } = options;
  const clock = options.clock ?? systemClock;
  const keys = jwt.issuer === undefined && jwt.jwks_url === undefined ? null : new IdentityProviderKeys({
    issuer: jwt.issuer, jwks_url: jwt.jwks_url, cache_max_age_ms: jwt.jwks_cache_max_age_ms, stale_grace_ms: jwt.jwks_stale_grace_ms, clock, logger: options.logger,
  });
  const secret_text = jwt.secret ?? options.dev_secret;
  const secret = secret_text === undefined ? undefined : new TextEncoder().encode(secret_text);
  const verify_options: jose.JWTVerifyOptions = {
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ['sub', 'exp', ...(jwt.issuer === undefined ? [] : ['iss']), ...(jwt.audience === undefined ? [] : ['aud'])],
    ...(jwt.issuer === undefined ? {} : { issuer: jwt.issuer }),
    ...(jwt.audience === undefined ? {} : { audience: jwt.audience }),
  };
  const cache = createCache(options, clock);

  return {
    identity_provider: keys,
    readiness: () => keys?.readiness() ?? null,
    close: () => keys?.close(),
    async verify(token: string): Promise<Principal> {
      if (token.length > TOKEN_LENGTH_MAX) throw new AuthError('invalid_token', 'token too long');
      const cached = cache?.get(token) ?? null;
      if (cached !== null) return cached;
      const header = protectedHeader(token);
      checkType(header, jwt.types);
      try {
        const current = { ...verify_options, currentDate: new Date(clock.now_ms()) };
        const { payload } = header.alg === 'HS256' && secret !== undefined
          ? await jose.jwtVerify(token, secret, { ...current, algorithms: ['HS256'] })
          : await verifyWithJwks(token, header.alg, keys, current);
        const principal = principalFromClaims(payload, options.admin_scope);
        // requiredClaims makes jose refuse a token without a numeric exp, so it is always here.
        if (typeof payload.exp === 'number') cache?.put(token, principal, payload.exp);
        return principal;
      } catch (error) {
        throw toAuthError(error);
      }
    },
  };
}

function createCache(options: VerifierOptions, clock: Clock): TokenCache | null {
  const entries_max = options.token_cache_entries_max ?? TOKEN_CACHE_DEFAULTS.entries_max;
  if (entries_max === 0) return null;
  return new TokenCache({
    entries_max,
    entry_age_ms_max: TOKEN_CACHE_DEFAULTS.entry_age_ms_max,
    clock_tolerance_s: CLOCK_TOLERANCE_S,
    clock,
    ...(options.on_cache_lookup === undefined ? {} : { on_lookup: options.on_cache_lookup }),
  });
}

async function verifyWithJwks(token: string, alg: string, keys: IdentityProviderKeys | null, verify_options: jose.JWTVerifyOptions) {
  if (keys === null || !ASYMMETRIC_ALGORITHMS.includes(alg)) {
    throw new AuthError('invalid_token', `algorithm ${alg} is not accepted`);
  }
  return jose.jwtVerify(token, keys.getKey, { ...verify_options, algorithms: ASYMMETRIC_ALGORITHMS });
}

function protectedHeader(token: string): jose.ProtectedHeaderParameters & { alg: string } {
  try {
    const header = jose.decodeProtectedHeader(token);
    if (typeof header.alg !== 'string') throw new Error('no alg');
    return header as jose.ProtectedHeaderParameters & { alg: string };
  } catch {
    throw new AuthError('invalid_token', 'token is not a well-formed JWS');
  }
}

/**
 * JWT_TYPES (RFC 8725 section 3.11, explicit typing): the `typ` header must be one of them, compared
 * as media types are (case-insensitive, an `application/` prefix ignored), as jose's `typ` check does.
 */
function checkType(header: jose.ProtectedHeaderParameters, types: readonly string[]): void {
  if (types.length === 0) return;
  const typ = typeof header.typ === 'string' ? normalizeType(header.typ) : undefined;
  if (typ === undefined || !types.some((type) => normalizeType(type) === typ)) {
    throw new AuthError('invalid_token', `token type (typ header) must be ${types.join(' or ')}`);
  }
}

function normalizeType(type: string): string {
  return type.toLowerCase().replace(/^application\//, '');
}

function principalFromClaims(payload: jose.JWTPayload, admin_scope: string): Principal {
  if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw new AuthError('invalid_token', 'token has no subject');
  // No account can be named with them, and the subject is stored as a caller (idempotency keys).
  if (holdsControlCharacters(payload.sub)) throw new AuthError('invalid_token', 'the token\'s subject holds control characters or lone surrogates');
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
  if (error instanceof jose.errors.JWTExpired) return new AuthError('invalid_token', 'token expired');
  if (error instanceof jose.errors.JWTClaimValidationFailed) return new AuthError('invalid_token', `token claim "${error.claim}" is not acceptable: ${error.reason}`);
  if (error instanceof jose.errors.JOSEError) return new AuthError('invalid_token', 'token signature or format is not valid');
  return new AuthError('invalid_token', 'token is not valid');
}
