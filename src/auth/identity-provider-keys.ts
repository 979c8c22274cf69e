/**
 * The identity provider's signing keys, kept so that an outage of the provider does not lock users
 * out. The last JWKS fetched is served from memory (jose's `createLocalJWKSet`); it is fresh for
 * `cache_max_age_ms`, after which a request that uses it starts a refetch in the background and is
 * verified with the keys in hand. If the provider cannot be reached, those keys keep verifying for
 * `stale_grace_ms` more. A token with a `kid` not in the set makes the keys be refetched at most once
 * per cooldown; when the provider cannot be reached, such a token is "unavailable" (503), not "invalid".
 *
 * Nothing here runs on a timer: fetches start at construction (the warm-up), on use and on readiness
 * probes, never more often than the cooldown (after a success) or the retry interval (after a failure).
 */
import * as jose from 'jose';
import type { Logger } from 'pino';
import type { Clock } from '../service/clock.js';
import { AuthError } from './auth-error.js';
import { discoverJwksUrl, fetchJwks } from './identity-provider-fetch.js';

/** After a successful fetch, an unknown `kid` refetches the keys at most this often. */
export const JWKS_COOLDOWN_MS = 30_000;
/** After a failed fetch, the next attempt waits this long (also the `Retry-After` of a 503). */
export const JWKS_RETRY_MS = 5000;
/** An outage is logged at most this often (with the count of failures since the last line). */
const OUTAGE_LOG_INTERVAL_MS = 60_000;

export type IdentityProviderKeysOptions = {
  /** Pinned issuer: its discovery document names the JWKS (unless `jwks_url` is given). */
  issuer: string | undefined;
  jwks_url: string | undefined;
  cache_max_age_ms: number;
  stale_grace_ms: number;
  clock: Clock;
  logger?: Logger | undefined;
};

type KeySet = { get: ReturnType<typeof jose.createLocalJWKSet>; fetched_at_ms: number };

export class IdentityProviderKeys {
  private readonly options: IdentityProviderKeysOptions;
  private readonly aborter = new AbortController();
  private keys: KeySet | null = null;
  private jwks_url: string | undefined;
  private pending: Promise<void> | null = null;
  private last_attempt_ms: number | undefined;
  private last_attempt_failed = false;
  private last_error = '';
  private failures_total = 0;
  private failures_unlogged = 0;
  private last_outage_log_ms: number | undefined;

  constructor(options: IdentityProviderKeysOptions) {
    if (options.issuer === undefined && options.jwks_url === undefined) throw new Error('an issuer or a JWKS URL is needed');
    this.options = options;
    this.jwks_url = options.jwks_url;
    void this.refresh(0);
  }

  /** Fetches of the discovery document or the JWKS that failed since start. */
  get fetch_failures(): number {
    return this.failures_total;
  }

  /** Seconds since the key set in use was fetched; null before the first fetch. */
  age_s(): number | null {
    return this.keys === null ? null : (this.options.clock.now_ms() - this.keys.fetched_at_ms) / 1000;
  }

  /** Null once keys were fetched (and have not aged past the grace); otherwise why not, and a fetch is tried. */
  readiness(): string | null {
    if (this.usable(this.options.clock.now_ms()) !== null) return null;
    void this.refresh(JWKS_RETRY_MS);
    // /readyz is public: the reason (addresses, errors) goes to the log only.
    return this.last_error === '' ? "the identity provider's keys are being fetched" : "the identity provider's keys cannot be fetched (see the log)";
  }

  /** jose's key lookup: the key for a token's header, from the set in hand (see the file comment). */
  readonly getKey = async (header: jose.JWSHeaderParameters, token: jose.FlattenedJWSInput): Promise<jose.CryptoKey> => {
    const now_ms = this.options.clock.now_ms();
    let keys = this.usable(now_ms);
    if (keys === null) {
      await this.refresh(JWKS_RETRY_MS);
      keys = this.usable(this.options.clock.now_ms());
      if (keys === null) throw this.unavailable();
    } else if (now_ms - keys.fetched_at_ms > this.options.cache_max_age_ms) {
      void this.refresh(JWKS_RETRY_MS);
    }
    try {
      return await keys.get(header, token);
    } catch (error) {
      if (!(error instanceof jose.errors.JWKSNoMatchingKey)) throw error;
      return this.keyAfterRefetch(header, token);
    }
  };

  /** Resolves when no fetch is in flight (for tests, and for a caller that wants the warm-up done). */
  async settled(): Promise<void> {
    while (this.pending !== null) await this.pending;
  }

  /** Aborts a fetch in flight (at shutdown). */
  close(): void {
    this.aborter.abort();
  }

  /** An unknown `kid`: refetch (once per cooldown); if the provider cannot be reached, the answer is "unavailable". */
  private async keyAfterRefetch(header: jose.JWSHeaderParameters, token: jose.FlattenedJWSInput): Promise<jose.CryptoKey> {
    await this.refresh(JWKS_COOLDOWN_MS);
    if (this.last_attempt_failed) throw this.unavailable();
    const keys = this.usable(this.options.clock.now_ms());
    if (keys === null) throw this.unavailable();
    return keys.get(header, token);
  }

  private usable(now_ms: number): KeySet | null {
    if (this.keys === null) return null;
    const expired = now_ms - this.keys.fetched_at_ms > this.options.cache_max_age_ms + this.options.stale_grace_ms;
    return expired ? null : this.keys;
  }

  /**
   * One fetch at a time: joins the one in flight, or starts one unless the last attempt was less than
   * `interval_ms` ago (or, after a failure, less than the retry interval).
   */
  private refresh(interval_ms: number): Promise<void> {
    if (this.pending !== null) return this.pending;
    const now_ms = this.options.clock.now_ms();
    const wait_ms = this.last_attempt_failed ? Math.max(interval_ms, JWKS_RETRY_MS) : interval_ms;
    if (this.last_attempt_ms !== undefined && now_ms - this.last_attempt_ms < wait_ms) return Promise.resolve();
    this.last_attempt_ms = now_ms;
    this.pending = this.fetchKeys().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  private async fetchKeys(): Promise<void> {
    try {
      this.jwks_url ??= await discoverJwksUrl(this.options.issuer as string, this.aborter.signal);
      const document = await fetchJwks(this.jwks_url, this.aborter.signal);
      this.keys = { get: jose.createLocalJWKSet(document), fetched_at_ms: this.options.clock.now_ms() };
      this.recovered();
    } catch (error) {
      this.failed(error);
    }
  }

  private recovered(): void {
    if (this.last_attempt_failed) {
      this.options.logger?.info({ failures: this.failures_unlogged }, "the identity provider's keys were fetched again");
    }
    this.last_attempt_failed = false;
    this.last_error = '';
    this.failures_unlogged = 0;
  }

  private failed(error: unknown): void {
    if (this.aborter.signal.aborted) return;
    this.last_attempt_failed = true;
    this.last_error = error instanceof Error ? (error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message) : String(error);
    this.failures_total += 1;
    this.failures_unlogged += 1;
    const now_ms = this.options.clock.now_ms();
    if (this.last_outage_log_ms !== undefined && now_ms - this.last_outage_log_ms < OUTAGE_LOG_INTERVAL_MS) return;
    this.last_outage_log_ms = now_ms;
    const age_s = this.age_s();
    this.options.logger?.warn(
      { failures: this.failures_unlogged, key_set_age_s: age_s === null ? null : Math.round(age_s), error: this.last_error },
      age_s === null
        ? "the identity provider's keys cannot be fetched: bearer tokens are answered 503 and /readyz is 503 until they can"
        : "the identity provider's keys cannot be fetched: verifying with the last keys fetched (stale grace)",
    );
    this.failures_unlogged = 0;
  }

  private unavailable(): AuthError {
    // The reason (addresses, errors) goes to the log, not to the caller.
    return new AuthError('identity_provider_unavailable', "the identity provider's keys could not be fetched; retry after Retry-After seconds");
  }
}
