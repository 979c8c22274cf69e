/**
 * The service's configuration: the only module that reads the environment. Every variable of the
 * contract is parsed and validated here; a bad value stops start-up with a message naming it.
 */
import net from 'node:net';
import path from 'node:path';
import { parseAmount } from './domain/amount.js';
import { PRICE_DECIMALS, USDG_SYMBOL } from './domain/tokens.js';
import { SCHEMA_NAME_PATTERN } from './store/postgres/connection.js';

/** PostgreSQL: `schema` comes from the URL's `?schema=` parameter (removed from `url`); null: the server's search_path. */
export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; schema: string | null };

export type JwtConfig = {
  issuer: string | undefined;
  jwks_url: string | undefined;
  audience: string | undefined;
  secret: string | undefined;
};

export type Config = {
  node_env: string;
  production: boolean;
  port: number;
  host: string;
  database: DatabaseConfig;
  /** Shared rate-limit counts for all instances; undefined: each process counts in memory. */
  redis_url: string | undefined;
  /** Where the embedded store and the development secret live. */
  data_dir: string;
  jwt: JwtConfig;
  /** Proxies trusted to name the client in `X-Forwarded-For` (addresses or CIDR ranges); empty: none. */
  trust_proxy: string[];
  /** Requests with a token that fails verification one client address may make per minute; past it, refused before any check. */
  auth_failures_max: number;
  admin_scope: string;
  api_keys: string[];
  rate_limit_max: number;
  rate_limit_window_ms: number;
  block_interval_ms: number;
  block_txs_max: number;
  native_symbol: string;
  native_price_text: string;
  native_price_units: bigint;
  log_level: string;
  /** When set, `GET /metrics` needs `Authorization: Bearer <metrics_token>`. */
  metrics_token: string | undefined;
  /** When set, `/metrics` is served on this port (on `host`) instead of the API port. */
  metrics_port: number | undefined;
  /** Web origins allowed to call the API from a browser (CORS); empty: same origin only. `*` allows any. */
  cors_origins: string[];
  events: EventsConfig;
};

/** The event log's retention and the limits of its live streams. */
export type EventsConfig = {
  /** How far back a cursor may resume: one whose next event is older is refused with 410. */
  retention_s: number;
  /** Event streams open on one instance at the most. */
  streams_max: number;
  /** Event streams one caller may have open at once. */
  streams_per_caller_max: number;
};

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

type Environment = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const BLOCK_TXS_LIMIT = 100_000;

export function loadConfig(env: Environment = process.env): Config {
  const node_env = env.NODE_ENV ?? 'development';
  const database = parseDatabaseUrl(text(env, 'DATABASE_URL') ?? 'sqlite:./data/ledger.db');
  const native_price_text = text(env, 'NATIVE_PRICE_USD') ?? '1';
  const config: Config = {
    node_env,
    production: node_env === 'production',
    port: integer(env, 'PORT', 8080, 0, 65_535),
    // Development mode (no identity provider) mints admin tokens to loopback callers: keep it on loopback unless told.
    host: text(env, 'HOST') ?? (node_env !== 'production' && !hasJwtKeys(jwtSettings(env)) ? '127.0.0.1' : '0.0.0.0'),
    database,
    redis_url: redisUrl(env, 'REDIS_URL'),
    data_dir: database.kind === 'sqlite' && database.path !== ':memory:' ? path.dirname(database.path) : path.resolve('data'),
    jwt: jwtSettings(env),
    trust_proxy: trustedProxies(env, 'TRUST_PROXY'),
    auth_failures_max: integer(env, 'AUTH_FAILURES_MAX', 60, 1, 1_000_000),
    admin_scope: scope(env, 'LEDGER_ADMIN_SCOPE') ?? 'ledger:admin',
    api_keys: list(env, 'API_KEYS'),
    rate_limit_max: integer(env, 'RATE_LIMIT_MAX', 1200, 1, 10_000_000),
    rate_limit_window_ms: integer(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1000, 86_400_000),
    block_interval_ms: integer(env, 'BLOCK_INTERVAL_MS', 1000, 10, 3_600_000),
    block_txs_max: integer(env, 'BLOCK_TXS_MAX', 10_000, 1, BLOCK_TXS_LIMIT),
    native_symbol: symbol(env, 'NATIVE_SYMBOL') ?? 'TAB',
    native_price_text,
    native_price_units: price('NATIVE_PRICE_USD', native_price_text),
    log_level: oneOf(env, 'LOG_LEVEL', LOG_LEVELS) ?? 'info',
    metrics_token: metricsToken(env, 'METRICS_TOKEN'),
    metrics_port: text(env, 'METRICS_PORT') === undefined ? undefined : integer(env, 'METRICS_PORT', 0, 1, 65_535),
    cors_origins: origins(env, 'CORS_ORIGINS'),
    events: {
      retention_s: integer(env, 'EVENTS_RETENTION_S', 7 * 86_400, 3600, 366 * 86_400),
      streams_max: integer(env, 'EVENTS_STREAMS_MAX', 2000, 1, 100_000),
      streams_per_caller_max: integer(env, 'EVENTS_STREAMS_PER_CALLER_MAX', 10, 1, 100_000),
    },
  };
  if (config.metrics_port !== undefined && config.metrics_port === config.port) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${config.port})`);
  }
  if (config.metrics_port !== undefined && config.metrics_token === undefined && !isLoopbackHost(config.host)) {
    throw new ConfigError('METRICS_TOKEN', `must be set when METRICS_PORT serves /metrics beyond loopback (HOST=${config.host}), or listen on a loopback HOST`);
  }
  if (config.production && !hasJwtKeys(config.jwt)) {
    throw new ConfigError('JWT_ISSUER', 'NODE_ENV=production needs JWT_ISSUER, JWT_JWKS_URL or JWT_SECRET');
  }
  return config;
}

/** A host that only this machine can reach: `localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  return net.isIPv4(bare) && bare.startsWith('127.');
}

function jwtSettings(env: Environment): JwtConfig {
  return { issuer: url(env, 'JWT_ISSUER'), jwks_url: url(env, 'JWT_JWKS_URL'), audience: text(env, 'JWT_AUDIENCE'), secret: secret(env, 'JWT_SECRET') };
}

/**
 * Proxies whose `X-Forwarded-For` names the client: comma-separated addresses or CIDR ranges
 * (e.g. `10.0.0.5,192.168.0.0/16`). Unset: forwarding headers are never trusted.
 */
function trustedProxies(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = value.split(',').map((item) => item.trim()).filter((item) => item !== '');
  for (const item of items) {
    const [address, bits, extra] = item.split('/');
    const family = net.isIP(address ?? '');
    const width = family === 4 ? 32 : 128;
    const valid = family !== 0 && extra === undefined && (bits === undefined || (/^[0-9]{1,3}$/.test(bits) && Number(bits) <= width));
    if (!valid) throw new ConfigError(name, `each entry must be an IP address or CIDR range such as 10.0.0.0/8 (got "${item}")`);
  }
  return items;
}

export function hasJwtKeys(jwt: JwtConfig): boolean {
  return jwt.issuer !== undefined || jwt.jwks_url !== undefined || jwt.secret !== undefined;
}

function text(env: Environment, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function integer(env: Environment, name: string, fallback: number, min: number, max: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max} (got "${value}")`);
  }
  return Number(value);
}

function url(env: Environment, name: string): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  try {
    const parsed = new URL(value);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error('protocol');
  } catch {
    throw new ConfigError(name, `must be an http(s) URL (got "${value}")`);
  }
  return value;
}

function secret(env: Environment, name: string): string | undefined {
  const value = text(env, name);
  if (value !== undefined && Buffer.byteLength(value) < 32) {
    throw new ConfigError(name, 'must be at least 32 bytes long (HS256 needs a 256-bit key)');
  }
  return value;
}

function metricsToken(env: Environment, name: string): string | undefined {
  const value = text(env, name);
  if (value !== undefined && (value.length < 16 || /\s/.test(value))) {
    throw new ConfigError(name, 'must be at least 16 characters without spaces');
  }
  return value;
}

function scope(env: Environment, name: string): string | undefined {
  const value = text(env, name);
  if (value !== undefined && /\s/.test(value)) throw new ConfigError(name, 'must be a single scope without spaces');
  return value;
}

function list(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = value.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.some((item) => item.length < 16)) throw new ConfigError(name, 'every key must be at least 16 characters');
  return items;
}

/** Comma-separated origins (`https://app.example.com`, scheme + host + optional port), or `*`. */
function origins(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = value.split(',').map((item) => item.trim()).filter((item) => item !== '');
  for (const item of items) {
    if (item === '*') continue;
    let origin: string | undefined;
    try {
      origin = new URL(item).origin;
    } catch {
      origin = undefined;
    }
    if (origin !== item) throw new ConfigError(name, `each entry must be an origin such as https://app.example.com, or * (got "${item}")`);
  }
  return items;
}

function symbol(env: Environment, name: string): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  if (!/^[A-Za-z][A-Za-z0-9]{0,11}$/.test(value) || value.toUpperCase() === USDG_SYMBOL) {
    throw new ConfigError(name, `must be 1 to 12 letters or digits, starting with a letter, and not ${USDG_SYMBOL}`);
  }
  return value;
}

function price(name: string, value: string): bigint {
  try {
    return parseAmount(value, PRICE_DECIMALS);
  } catch {
    throw new ConfigError(name, `must be a positive decimal with at most ${PRICE_DECIMALS} fractional digits (got "${value}")`);
  }
}

function oneOf(env: Environment, name: string, allowed: string[]): string | undefined {
  const value = text(env, name);
  if (value !== undefined && !allowed.includes(value)) throw new ConfigError(name, `must be one of ${allowed.join(', ')}`);
  return value;
}

function parseDatabaseUrl(value: string): DatabaseConfig {
  if (value.startsWith('sqlite:')) {
    const file = value.slice('sqlite:'.length).replace(/^\/\//, '');
    if (file === '') throw new ConfigError('DATABASE_URL', 'sqlite: needs a file path, e.g. sqlite:./data/ledger.db');
    return { kind: 'sqlite', path: file === ':memory:' ? file : path.resolve(file) };
  }
  if (value.startsWith('postgres://') || value.startsWith('postgresql://')) return parsePostgresUrl(value);
  throw new ConfigError('DATABASE_URL', 'must start with sqlite: or postgres://');
}

function parsePostgresUrl(value: string): DatabaseConfig {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL');
  }
  const schema = parsed.searchParams.get('schema');
  if (schema === null) return { kind: 'postgres', url: value, schema: null };
  if (!SCHEMA_NAME_PATTERN.test(schema)) {
    throw new ConfigError('DATABASE_URL', `?schema= must be a lower-case identifier of at most 63 characters (got "${schema}")`);
  }
  parsed.searchParams.delete('schema');
  return { kind: 'postgres', url: parsed.toString(), schema };
}

function redisUrl(env: Environment, name: string): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  try {
    const parsed = new URL(value);
    if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new Error('protocol');
  } catch {
    throw new ConfigError(name, `must be a redis:// or rediss:// URL (got "${value}")`);
  }
  return value;
}
