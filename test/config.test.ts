import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

/** A checkpoint signing key: production needs one (issue 12). */
const KEY = Buffer.alloc(32, 7).toString('base64');

describe('configuration', () => {
  it('needs CHECKPOINT_SIGNING_KEY in production, and refuses one that is not an Ed25519 key', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) })).toThrowError(/^CHECKPOINT_SIGNING_KEY:/);
    expect(loadConfig({}).checkpoint_signing_key).toBeUndefined();
    expect(loadConfig({ CHECKPOINT_SIGNING_KEY: KEY }).checkpoint_signing_key?.key_id).toMatch(/^[0-9a-f]{16}$/);
    for (const bad of ['abc', Buffer.alloc(31).toString('base64'), '-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----']) {
      expect(() => loadConfig({ CHECKPOINT_SIGNING_KEY: bad })).toThrowError(/^CHECKPOINT_SIGNING_KEY:/);
    }
  });

  it('reads NODE_ENV trimmed and in any case, and refuses a value it does not know rather than run in development', () => {
    const production = { JWT_SECRET: 'x'.repeat(32), CHECKPOINT_SIGNING_KEY: Buffer.alloc(32, 7).toString('base64') };
    for (const value of ['production', 'production ', ' Production', 'PRODUCTION']) {
      expect(loadConfig({ ...production, NODE_ENV: value }).production, JSON.stringify(value)).toBe(true);
    }
    // A typo ran in development mode, without production's checks at start.
    for (const value of ['prod', 'staging', 'production-eu', 'p r o d']) {
      expect(() => loadConfig({ ...production, NODE_ENV: value }), value).toThrow(/^NODE_ENV: must be production, development or test/);
    }
    expect(() => loadConfig({ NODE_ENV: 'production ', JWT_ISSUER: 'https://idp.example.com' })).toThrow(/^(JWT_AUDIENCE|CHECKPOINT_SIGNING_KEY):/);
    for (const value of [undefined, '', '  ', 'development', 'test', 'Test']) expect(loadConfig({ NODE_ENV: value }).production).toBe(false);
  });

  it('refuses a comma-separated setting that is given but lists nothing, rather than take it as unset', () => {
    for (const name of ['API_KEYS', 'JWT_TYPES', 'TRUST_PROXY', 'CORS_ORIGINS', 'WEBHOOK_ALLOWED_HOSTS', 'EVENTS_NATS_URL']) {
      for (const value of [',', ' , ', ',,,']) {
        expect(() => loadConfig({ [name]: value }), `${name}=${JSON.stringify(value)}`).toThrow(new RegExp(`^${name}: lists nothing`));
      }
      // Unset or empty is still unset.
      expect(() => loadConfig({ [name]: '' }), name).not.toThrow();
    }
  });

  it('takes every integer setting over exactly the range the README gives it, and refuses one past either end', () => {
    const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const rows = [...readme.matchAll(/^\| `([A-Z_]+)` \| .*\((\d+)\.\.(\d+)[;)]/gm)].map((match) => [match[1] as string, Number(match[2]), Number(match[3])] as const);
    expect(rows.length).toBeGreaterThanOrEqual(20);
    // Settings bounded by another one as well: that one is set so that only the range itself is tested.
    const beside: Record<string, Record<string, string>> = {
      HTTP_HEADERS_TIMEOUT_MS: { HTTP_REQUEST_TIMEOUT_MS: '600000' },
      HTTP_REQUEST_TIMEOUT_MS: { HTTP_HEADERS_TIMEOUT_MS: '1000' },
    };
    for (const [name, low, high] of rows) {
      const with_value = (value: number) => loadConfig({ ...beside[name], [name]: String(value) });
      expect(() => with_value(low), `${name}=${low}`).not.toThrow();
      expect(() => with_value(high), `${name}=${high}`).not.toThrow();
      if (low > 0) expect(() => with_value(low - 1), `${name}=${low - 1}`).toThrow(new RegExp(`^${name}:`));
      expect(() => with_value(high + 1), `${name}=${high + 1}`).toThrow(new RegExp(`^${name}:`));
    }
  });

  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080, host: '127.0.0.1', admin_scope: 'ledger:admin', api_keys: [], rate_limit_max: 1200, rate_limit_window_ms: 60000,
      block_interval_ms: 1000, native_symbol: 'TAB', native_price_units: 1_000_000_000_000n, log_level: 'info', production: false,
    });
    expect(config.database).toEqual({ kind: 'sqlite', path: path.resolve('data/ledger.db') });
    expect(config.data_dir).toBe(path.resolve('data'));
  });

  it('reads HEAP_GROWING_PERCENT: 50 unless set, 0 leaves V8 its own choice, at most 300', () => {
    expect(loadConfig({}).heap_growing_percent).toBe(50);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heap_growing_percent).toBe(0);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '300' }).heap_growing_percent).toBe(300);
    for (const bad of ['301', '-1', '1.5', 'half']) {
      expect(() => loadConfig({ HEAP_GROWING_PERCENT: bad }), bad).toThrow(/^HEAP_GROWING_PERCENT:/);
    }
  });

  it('listens on loopback in development mode unless HOST says otherwise, and everywhere once an identity provider is set', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ JWT_JWKS_URL: 'https://idp.example.com/jwks' }).host).toBe('0.0.0.0');
    expect(loadConfig({ NODE_ENV: 'production', CHECKPOINT_SIGNING_KEY: KEY, JWT_SECRET: 'x'.repeat(32) }).host).toBe('0.0.0.0');
  });

  it('reads the PostgreSQL deadlines on a silent database, within their bounds', () => {
    expect(loadConfig({}).postgres_timeouts).toEqual({ query_timeout_ms: 10_000, lease_timeout_ms: 5_000 });
    expect(loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '3000', SEALER_LEASE_TIMEOUT_MS: '2000' }).postgres_timeouts)
      .toEqual({ query_timeout_ms: 3000, lease_timeout_ms: 2000 });
    for (const [name, bad] of [['DATABASE_QUERY_TIMEOUT_MS', '999'], ['DATABASE_QUERY_TIMEOUT_MS', '10s'], ['SEALER_LEASE_TIMEOUT_MS', '1999'], ['SEALER_LEASE_TIMEOUT_MS', '600001']]) {
      expect(() => loadConfig({ [name as string]: bad }), `${name}=${bad}`).toThrow(new RegExp(`^${name}:`));
    }
  });

  it('reads the HTTP connection limits; headers must not outlast the request timeout', () => {
    expect(loadConfig({}).http_limits).toEqual({ request_timeout_ms: 30_000, headers_timeout_ms: 10_000, keep_alive_timeout_ms: 65_000, connections_max: 10_000 });
    expect(loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '3000', HTTP_CONNECTIONS_MAX: '50' }).http_limits)
      .toEqual({ request_timeout_ms: 5000, headers_timeout_ms: 2000, keep_alive_timeout_ms: 3000, connections_max: 50 });
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_HEADERS_TIMEOUT_MS: '6000' })).toThrow(/^HTTP_HEADERS_TIMEOUT_MS:/);
    expect(() => loadConfig({ HTTP_CONNECTIONS_MAX: '9' })).toThrow(/^HTTP_CONNECTIONS_MAX:/);
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: 'soon' })).toThrow(/^HTTP_KEEP_ALIVE_TIMEOUT_MS:/);
  });

  it('trusts forwarding headers only from the proxies TRUST_PROXY names', () => {
    expect(loadConfig({}).trust_proxy).toEqual([]);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.5, 192.168.0.0/16,::1' }).trust_proxy).toEqual(['10.0.0.5', '192.168.0.0/16', '::1']);
    for (const bad of ['proxy.example.com', '10.0.0.0/33', '10.0.0.0/8/1', 'true']) {
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(ConfigError);
    }
  });

  it('selects PostgreSQL for postgres:// URLs, with an optional ?schema=', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).database).toEqual({ kind: 'postgres', url: 'postgres://u@h/db', schema: null });
    expect(loadConfig({ DATABASE_URL: 'postgresql://u:p%40ss@h:5433/db?schema=ledger_1&sslmode=require' }).database)
      .toEqual({ kind: 'postgres', url: 'postgresql://u:p%40ss@h:5433/db?sslmode=require', schema: 'ledger_1' });
  });

  it('reads FAILURE_BUDGET_PER_HOUR: 100 by default, 0 (no uncovered debits) to 1,000,000 (issue 15)', () => {
    expect(loadConfig({}).failure_budget_per_hour).toBe(100);
    expect(loadConfig({ FAILURE_BUDGET_PER_HOUR: '0' }).failure_budget_per_hour).toBe(0);
    expect(loadConfig({ FAILURE_BUDGET_PER_HOUR: '1000000' }).failure_budget_per_hour).toBe(1_000_000);
    expect(() => loadConfig({ FAILURE_BUDGET_PER_HOUR: '1000001' })).toThrow(/FAILURE_BUDGET_PER_HOUR/);
    expect(() => loadConfig({ FAILURE_BUDGET_PER_HOUR: '-1' })).toThrow(/FAILURE_BUDGET_PER_HOUR/);
  });

  it('reads REDIS_URL for shared rate limits', () => {
    expect(loadConfig({}).redis_url).toBeUndefined();
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/2' }).redis_url).toBe('redis://127.0.0.1:6379/2');
    expect(loadConfig({ REDIS_URL: 'rediss://cache.internal:6380' }).redis_url).toBe('rediss://cache.internal:6380');
  });

  it('publishes events to NATS only when EVENTS_NATS_URL is set, to the stream and subjects configured', () => {
    expect(loadConfig({}).events.nats).toBeNull();
    expect(loadConfig({ EVENTS_NATS_STREAM: 'OTHER' }).events.nats).toBeNull();
    expect(loadConfig({ EVENTS_NATS_URL: 'nats://127.0.0.1:4222' }).events.nats)
      .toEqual({ servers: ['nats://127.0.0.1:4222'], stream: 'TABULA', subject_prefix: 'tabula.events' });
    expect(loadConfig({ EVENTS_NATS_URL: 'tls://a.internal:4222, nats://b.internal', EVENTS_NATS_STREAM: 'ledger-events_2', EVENTS_NATS_SUBJECT_PREFIX: 'acme.ledger' }).events.nats)
      .toEqual({ servers: ['tls://a.internal:4222', 'nats://b.internal'], stream: 'ledger-events_2', subject_prefix: 'acme.ledger' });
    const bad: Array<[string, string]> = [
      ['EVENTS_NATS_URL', 'http://127.0.0.1:4222'], ['EVENTS_NATS_URL', '127.0.0.1:4222'], ['EVENTS_NATS_URL', 'nats://'],
      ['EVENTS_NATS_URL', 'nats://ok:4222,redis://x'], ['EVENTS_NATS_STREAM', 'tabula.events'], ['EVENTS_NATS_STREAM', 'a b'],
      ['EVENTS_NATS_STREAM', 'x'.repeat(65)], ['EVENTS_NATS_STREAM', 'a>'], ['EVENTS_NATS_SUBJECT_PREFIX', 'tabula.>'],
      ['EVENTS_NATS_SUBJECT_PREFIX', 'tabula.*.events'], ['EVENTS_NATS_SUBJECT_PREFIX', 'tabula..events'], ['EVENTS_NATS_SUBJECT_PREFIX', '.tabula'],
    ];
    for (const [name, value] of bad) {
      expect(() => loadConfig({ EVENTS_NATS_URL: 'nats://127.0.0.1:4222', [name]: value }), `${name}=${value}`).toThrowError(new RegExp(`^${name}:`));
    }
  });

  it.each([
    ['PORT', 'eighty'], ['PORT', '70000'], ['RATE_LIMIT_MAX', '0'], ['RATE_LIMIT_WINDOW_MS', '-5'], ['BLOCK_INTERVAL_MS', '1.5'],
    ['BLOCK_TXS_MAX', '0'], ['BLOCK_TXS_MAX', '100001'], ['NATIVE_SYMBOL', 'usdg'], ['NATIVE_SYMBOL', 'TOO-LONG-SYMBOL'],
    ['NATIVE_PRICE_USD', '0'], ['NATIVE_PRICE_USD', 'abc'], ['NATIVE_PRICE_USD', '0.0000000000001'], ['LOG_LEVEL', 'loud'],
    ['JWT_ISSUER', 'not a url'], ['JWT_JWKS_URL', 'ftp://x/jwks'], ['JWT_SECRET', 'short'], ['API_KEYS', 'tiny'],
    ['CORS_ORIGINS', 'app.example.com'], ['CORS_ORIGINS', 'https://app.example.com/path'],
    ['DATABASE_URL', 'mysql://x'], ['DATABASE_URL', 'sqlite:'], ['DATABASE_URL', 'postgres://h/db?schema=Bad-Name'],
    ['DATABASE_URL', 'postgres://h/db?schema=a;drop'], ['LEDGER_ADMIN_SCOPE', 'two scopes'], ['REDIS_URL', 'http://cache:6379'],
    ['REDIS_URL', 'not a url'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrowError(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrowError(new RegExp(`^${name}:`));
  });

  it('reads the webhook settings: retries, timeout, allowed hosts and concurrency, within their bounds', () => {
    expect(loadConfig({}).webhooks).toEqual({ retry_base_ms: 1000, retry_period_s: 86_400, timeout_ms: 10_000, allowed_hosts: [], concurrency_max: 16 });
    expect(loadConfig({
      WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_RETRY_PERIOD_S: '5', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1, Hooks.Internal,[::1],fd00::5', WEBHOOK_CONCURRENCY_MAX: '4',
    }).webhooks).toEqual({ retry_base_ms: 50, retry_period_s: 5, timeout_ms: 2000, allowed_hosts: ['127.0.0.1', 'hooks.internal', '[::1]', 'fd00::5'], concurrency_max: 4 });
    const bad: Array<[string, string]> = [
      ['WEBHOOK_RETRY_BASE_MS', '0'], ['WEBHOOK_RETRY_BASE_MS', '1s'], ['WEBHOOK_RETRY_PERIOD_S', '0'], ['WEBHOOK_RETRY_PERIOD_S', '2592001'],
      ['WEBHOOK_TIMEOUT_MS', '99'], ['WEBHOOK_TIMEOUT_MS', '120001'], ['WEBHOOK_ALLOWED_HOSTS', 'http://127.0.0.1'], ['WEBHOOK_ALLOWED_HOSTS', '10.0.0.0/8'],
      ['WEBHOOK_ALLOWED_HOSTS', 'a b'], ['WEBHOOK_CONCURRENCY_MAX', '0'],
    ];
    for (const [name, value] of bad) expect(() => loadConfig({ [name]: value }), `${name}=${value}`).toThrow(new RegExp(`^${name}:`));
  });

  it('refuses to start in production without JWT configuration', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrowError(/JWT_ISSUER/);
    expect(loadConfig({ NODE_ENV: 'production', CHECKPOINT_SIGNING_KEY: KEY, JWT_JWKS_URL: 'https://idp.example/jwks.json', JWT_ISSUER: 'https://idp.example/', JWT_AUDIENCE: 'tabula' }).production).toBe(true);
  });

  it('binds tokens in production: an identity provider needs JWT_AUDIENCE and JWT_ISSUER (issue 15)', () => {
    const jwks = 'https://idp.example/jwks.json';
    expect(() => loadConfig({ NODE_ENV: 'production', JWT_JWKS_URL: jwks })).toThrowError(/^JWT_AUDIENCE:/);
    expect(() => loadConfig({ NODE_ENV: 'production', JWT_ISSUER: 'https://idp.example/' })).toThrowError(/^JWT_AUDIENCE:/);
    expect(() => loadConfig({ NODE_ENV: 'production', JWT_JWKS_URL: jwks, JWT_AUDIENCE: 'tabula' })).toThrowError(/^JWT_ISSUER:/);
    // A shared secret alone is no identity provider: nothing more is asked; outside production nothing either.
    expect(loadConfig({ NODE_ENV: 'production', CHECKPOINT_SIGNING_KEY: KEY, JWT_SECRET: 'a-secret-that-is-at-least-32-bytes-long' }).jwt.audience).toBeUndefined();
    expect(loadConfig({ JWT_JWKS_URL: jwks }).jwt.jwks_url).toBe(jwks);
  });

  it('accepts an identity provider over http only on loopback, and reads the JWKS cache and token types', () => {
    for (const name of ['JWT_ISSUER', 'JWT_JWKS_URL']) {
      expect(() => loadConfig({ [name]: 'http://idp.example.invalid/' })).toThrowError(new RegExp(`^${name}: must be https`));
      for (const host of ['127.0.0.1:9000', '127.8.9.10', 'localhost:8080', '[::1]:8080']) expect(loadConfig({ [name]: `http://${host}/` }).production).toBe(false);
    }
    const defaults = loadConfig({}).jwt;
    expect([defaults.types, defaults.jwks_cache_max_age_ms, defaults.jwks_stale_grace_ms]).toEqual([[], 600_000, 86_400_000]);
    const set = loadConfig({ JWT_TYPES: 'at+jwt, application/at+jwt', JWKS_CACHE_MAX_AGE_MS: '1000', JWKS_STALE_GRACE_MS: '0' }).jwt;
    expect([set.types, set.jwks_cache_max_age_ms, set.jwks_stale_grace_ms]).toEqual([['at+jwt', 'application/at+jwt'], 1000, 0]);
    for (const [name, value] of [['JWT_TYPES', 'at jwt'], ['JWKS_CACHE_MAX_AGE_MS', '999'], ['JWKS_STALE_GRACE_MS', '604800001']]) {
      expect(() => loadConfig({ [name as string]: value }), `${name}=${value}`).toThrowError(new RegExp(`^${name}:`));
    }
  });

  it('reads the price exactly', () => {
    expect(loadConfig({ NATIVE_PRICE_USD: '0.000000000001' }).native_price_units).toBe(1n);
    expect(loadConfig({ NATIVE_PRICE_USD: '1234.5' }).native_price_units).toBe(1_234_500_000_000_000n);
  });
});
