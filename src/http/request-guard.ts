/**
 * The guard in front of every `/api` route: who is calling (API key, then bearer token) and whether the
 * caller's rate limit lets the request in. Routes read the caller with `principalOf`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../service/clock.js';
import type { Principal } from '../service/ledger-service.js';
import { AuthError } from '../auth/auth-error.js';
import type { TokenVerifier } from '../auth/token-verifier.js';
import { HttpProblem } from './problem.js';
import type { RateLimiter } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** What the guard needs from the server's dependencies. */
export type GuardDependencies = {
  verifier: TokenVerifier;
  /** Present when API keys are configured. */
  api_key_check: ((presented: string | undefined) => boolean) | null;
  rate_limiter: RateLimiter;
  /**
   * Requests with a token that fails verification, per client address (in this instance's memory: it
   * guards this instance's CPU). An address past it is refused before its token is even looked at.
   */
  auth_failure_limiter: RateLimiter;
  clock: Clock;
};

/**
 * Refuses an address that sent too many bad tokens (before verifying anything), authenticates, then
 * counts the request against the caller's rate limit (the token's `sub`, or the client address when
 * there is no valid token), then refuses whatever failed.
 */
export async function guard(deps: GuardDependencies, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const failures_key = `auth-failures:${request.ip}`;
  const budget = await deps.auth_failure_limiter.peek(failures_key, deps.clock.now_ms());
  if (!budget.allowed) {
    reply.header('retry-after', budget.headers['retry-after'] ?? '1');
    throw new HttpProblem('rate_limited', 'too many requests with invalid tokens from this address; retry after Retry-After seconds');
  }
  const { principal, failure } = await authenticate(deps, request);
  if (failure instanceof AuthError && failure.code === 'invalid_token') await deps.auth_failure_limiter.check(failures_key, deps.clock.now_ms());
  const key = principal === null ? `ip:${request.ip}` : `sub:${principal.sub}`;
  const decision = await deps.rate_limiter.check(key, deps.clock.now_ms());
  reply.headers(decision.headers);
  if (!decision.allowed) throw new HttpProblem('rate_limited', 'rate limit exceeded; retry after Retry-After seconds');
  if (failure !== null) throw failure;
  request.principal = principal;
}

async function authenticate(deps: GuardDependencies, request: FastifyRequest): Promise<{ principal: Principal | null; failure: Error | null }> {
  const api_key = request.headers['x-api-key'];
  if (deps.api_key_check !== null && !deps.api_key_check(typeof api_key === 'string' ? api_key : undefined)) {
    return { principal: null, failure: new AuthError('invalid_api_key', 'X-API-Key is missing or not recognised') };
  }
  const authorization = request.headers.authorization;
  if (authorization === undefined || authorization === '') {
    return { principal: null, failure: new AuthError('missing_token', 'an Authorization: Bearer token is required') };
  }
  const match = /^Bearer +([^\s]+) *$/i.exec(authorization);
  if (match === null) return { principal: null, failure: new AuthError('invalid_token', 'Authorization must be "Bearer <token>"') };
  try {
    return { principal: await deps.verifier.verify(match[1] as string), failure: null };
  } catch (error) {
    return { principal: null, failure: error instanceof Error ? error : new AuthError('invalid_token', 'token is not valid') };
  }
}

/** The caller of a route behind `guard`. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new AuthError('missing_token', 'an Authorization: Bearer token is required');
  return request.principal;
}
