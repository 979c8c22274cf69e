import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080, host: '127.0.0.1', admin_scope: 'ledger:admin', api_keys: [], rate_limit_max: 1200, rate_limit_window_ms: 60000,
      block_interval_ms: 1000, native_symbol: 'TAB', native_price_units: 1_000_000_000_000n, log_level: 'info', production: false,
    });
    expect(config.database).toEqual({ kind: 'sqlite', path: path.resolve('data/ledger.db') });
    expect(config.data_dir).toBe(path.resolve('data'));
  });

  it('listens on loopback in development mode unless HOST says otherwise, and everywhere once an identity provider is set', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ JWT_JWKS_URL: 'https://idp.example.com/jwks' }).host).toBe('0.0.0.0');
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) }).host).toBe('0.0.0.0');
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

  it('reads REDIS_URL for shared rate limits', () => {
    expect(loadConfig({}).redis_url).toBeUndefined();
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/2' }).redis_url).toBe('redis://127.0.0.1:6379/2');
    expect(loadConfig({ REDIS_URL: 'rediss://cache.internal:6380' }).redis_url).toBe('rediss://cache.internal:6380');
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

  it('refuses to start in production without JWT configuration', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrowError(/JWT_ISSUER/);
    expect(loadConfig({ NODE_ENV: 'production', JWT_JWKS_URL: 'https://idp.example/jwks.json' }).production).toBe(true);
  });

  it('reads the price exactly', () => {
    expect(loadConfig({ NATIVE_PRICE_USD: '0.000000000001' }).native_price_units).toBe(1n);
    expect(loadConfig({ NATIVE_PRICE_USD: '1234.5' }).native_price_units).toBe(1_234_500_000_000_000n);
  });
});
