/**
 * The service's configuration: the only module that reads the environment. Every variable of the
 * contract is parsed and validated here; a bad value stops start-up with a message naming it.
 */
import net from 'node:net';
import path from 'node:path';
import { parseAmount } from './domain/shared/amount.js';
import { PENDING_MAX_DEFAULT, PENDING_MAX_LIMIT } from './backpressure/pending-backlog.js';
import { FAILURE_BUDGET_PER_HOUR_DEFAULT, FAILURE_BUDGET_PER_HOUR_MAX } from './failure-budget/failure-budget-policy.js';
import { PRICE_DECIMALS, USDG_SYMBOL } from './domain/shared/tokens.js';
import { POOL_FEE_BPS_DEFAULT, POOL_FEE_BPS_MAX } from './domain/market/pool.js';
import { READ_CACHE_DEFAULT_BYTES, READ_CACHE_LIMIT_BYTES } from './read-cache/sealed-record-cache.js';
import { HEAP_GROWING_PERCENT_DEFAULT, HEAP_GROWING_PERCENT_MAX } from './runtime/heap-growth.js';
import { POSTGRES_TIMEOUTS_DEFAULT, SCHEMA_NAME_PATTERN, type PostgresTimeouts } from './store/postgres/connection.js';
import { parseCheckpointKey, type CheckpointKey } from './checkpoints/checkpoint-key.js';
import { SQLITE_STORE_THREAD_SETTINGS, type SqliteStoreThreadSetting } from './store/sqlite/thread/store-thread-setting.js';
import { chooseLogFormat, LOG_FORMAT_SETTINGS, type LogFormat, type LogFormatSetting } from './logging/log-format.js';

/** PostgreSQL: `schema` comes from the URL's `?schema=` parameter (removed from `url`); null: the server's search_path. */
export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; schema: string | null };

export type JwtConfig = {
  issuer: string | undefined;
  jwks_url: string | undefined;
  audience: string | undefined;
  secret: string | undefined;
  /** JWT_TYPES: when not empty, a token's `typ` header must be one of these (e.g. `at+jwt`). */
  types: string[];
  /** JWKS_CACHE_MAX_AGE_MS: how long fetched keys are fresh before they are refetched (in the background). */
  jwks_cache_max_age_ms: number;
  /** JWKS_STALE_GRACE_MS: how long past that the last keys fetched keep verifying while the IdP cannot be reached. */
  jwks_stale_grace_ms: number;
};

export type Config = {
  node_env: string;
  production: boolean;
  port: number;
  host: string;
  database: DatabaseConfig;
  /** HTTP connections: timeouts that close slow or idle clients, and the cap on open connections (HTTP_* variables). */
  http_limits: HttpLimits;
  /** PostgreSQL only: how long a silent database or network is waited on (DATABASE_QUERY_TIMEOUT_MS, SEALER_LEASE_TIMEOUT_MS). */
  postgres_timeouts: PostgresTimeouts;
  /** Shared rate-limit counts for all instances; undefined: each process counts in memory. */
  redis_url: string | undefined;
  /** Where the embedded store and the development secret live. */
  data_dir: string;
  jwt: JwtConfig;
  /** CHECKPOINT_SIGNING_KEY: signs checkpoints; undefined outside production means a development key in `data_dir`. */
  checkpoint_signing_key: CheckpointKey | undefined;
  /** Proxies trusted to name the client in `X-Forwarded-For` (addresses or CIDR ranges); empty: none. */
  trust_proxy: string[];
  /** Requests with a token that fails verification one client address may make per minute; past it, refused before any check. */
  auth_failures_max: number;
  admin_scope: string;
  api_keys: string[];
  rate_limit_max: number;
  rate_limit_window_ms: number;
  /** FAILURE_BUDGET_PER_HOUR: uncovered debits one subject may submit per clock hour; past it, 429 (src/failure-budget). */
  failure_budget_per_hour: number;
  block_interval_ms: number;
  block_txs_max: number;
  /** Transactions stored and waiting to be sealed at the most; past it submissions get 503 pending_backlog_full. */
  pending_max: number;
  /** SQLITE_STORE_THREAD: the SQLite store on a thread of its own (src/store/sqlite/thread); `auto` decides by the CPUs. */
  sqlite_store_thread: SqliteStoreThreadSetting;
  /** READ_CACHE_MAX_BYTES: serialised answers of sealed transactions, blocks and final history pages kept in memory at the most (src/read-cache); 0: none. */
  read_cache_max_bytes: number;
  /**
   * HEAP_GROWING_PERCENT: how far V8 lets its old generation grow past what survived the last full
   * collection before it collects again (src/runtime); 0 leaves V8's own choice (up to 4×).
   */
  heap_growing_percent: number;
  native_symbol: string;
  native_price_text: string;
  native_price_units: bigint;
  /** The market pool's fee in basis points of what a swap pays in (fixed at the ledger's creation, like the symbol). */
  pool_fee_bps: number;
  log_level: string;
  /** JSON lines or pretty-printed: LOG_FORMAT, or when unset pretty only on a terminal outside production. */
  log_format: LogFormat;
  /** When set, `GET /metrics` needs `Authorization: Bearer <metrics_token>`. */
  metrics_token: string | undefined;
  /** When set, `/metrics` is served on this port (on `host`) instead of the API port. */
  metrics_port: number | undefined;
  /** Web origins allowed to call the API from a browser (CORS); empty: same origin only. `*` allows any. */
  cors_origins: string[];
  events: EventsConfig;
  webhooks: WebhooksConfig;
};

/** Webhook deliveries (src/webhooks/): retries, the request timeout, and the hosts allowed despite being private. */
export type WebhooksConfig = {
  /** The first retry waits about this long; each further one about twice as long (capped at 1 h). */
  retry_base_ms: number;
  /** An endpoint whose deliveries keep failing for this long is disabled. */
  retry_period_s: number;
  timeout_ms: number;
  /** Host names and addresses that may be sent to even though private, loopback or link-local. */
  allowed_hosts: string[];
  /** Endpoints one instance delivers to at once. */
  concurrency_max: number;
};

/** The event log's retention and the limits of its live streams. */
export type EventsConfig = {
  /** How far back a cursor may resume: one whose next event is older is refused with 410. */
  retention_s: number;
  /** Event streams open on one instance at the most. */
  streams_max: number;
  /** Event streams one caller may have open at once. */
  streams_per_caller_max: number;
  /** Publishing every event to NATS JetStream; null: no publishing. */
  nats: NatsConfig | null;
};

/**
 * Where the event log is published: the NATS servers (`nats://` or `tls://`), the JetStream stream, and
 * the subjects' prefix (events go to `<subject_prefix>.<type>`).
 */
export type NatsConfig = { servers: string[]; stream: string; subject_prefix: string };

/** A JetStream stream name: no dots, wildcards, spaces or path separators. */
export const NATS_STREAM_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Dot-separated tokens of letters, digits, _ and - (no wildcards, no empty token). */
const NATS_SUBJECT_PREFIX_PATTERN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const NATS_SUBJECT_PREFIX_LENGTH_MAX = 200;

/** See ConnectionLimits in src/http/server.ts. */
export type HttpLimits = { request_timeout_ms: number; headers_timeout_ms: number; keep_alive_timeout_ms: number; connections_max: number };

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

/** What only the entry point knows about the process it runs in (never read here): whether stdout is a terminal. */
export type ConfigRuntime = { stdout_terminal?: boolean };

export function loadConfig(env: Environment = process.env, runtime: ConfigRuntime = {}): Config {
  const node_env = nodeEnvironment(env);
  const database = parseDatabaseUrl(text(env, 'DATABASE_URL') ?? DATABASE_URL_DEFAULT);
  const native_price_text = text(env, 'NATIVE_PRICE_USD') ?? '1';
  const config: Config = {
    node_env,
    production: node_env === 'production',
    port: integer(env, 'PORT', 8080, 0, 65_535),
    // Development mode (no identity provider) mints admin tokens to loopback callers: keep it on loopback unless told.
    host: text(env, 'HOST') ?? (node_env !== 'production' && !hasJwtKeys(jwtSettings(env)) ? '127.0.0.1' : '0.0.0.0'),
    database,
    http_limits: httpLimits(env),
    postgres_timeouts: {
      query_timeout_ms: integer(env, 'DATABASE_QUERY_TIMEOUT_MS', POSTGRES_TIMEOUTS_DEFAULT.query_timeout_ms, 1000, 600_000),
      lease_timeout_ms: integer(env, 'SEALER_LEASE_TIMEOUT_MS', POSTGRES_TIMEOUTS_DEFAULT.lease_timeout_ms, 2000, 600_000),
    },
    redis_url: redisUrl(env, 'REDIS_URL'),
    data_dir: database.kind === 'sqlite' && database.path !== ':memory:' ? path.dirname(database.path) : path.resolve('data'),
    jwt: jwtSettings(env),
    trust_proxy: trustedProxies(env, 'TRUST_PROXY'),
    auth_failures_max: integer(env, 'AUTH_FAILURES_MAX', 60, 1, 1_000_000),
    admin_scope: scope(env, 'LEDGER_ADMIN_SCOPE') ?? 'ledger:admin',
    api_keys: list(env, 'API_KEYS'),
    rate_limit_max: integer(env, 'RATE_LIMIT_MAX', 1200, 1, 10_000_000),
    rate_limit_window_ms: integer(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1000, 86_400_000),
    failure_budget_per_hour: integer(env, 'FAILURE_BUDGET_PER_HOUR', FAILURE_BUDGET_PER_HOUR_DEFAULT, 0, FAILURE_BUDGET_PER_HOUR_MAX),
    block_interval_ms: integer(env, 'BLOCK_INTERVAL_MS', 1000, 10, 3_600_000),
    block_txs_max: integer(env, 'BLOCK_TXS_MAX', 10_000, 1, BLOCK_TXS_LIMIT),
    pending_max: integer(env, 'PENDING_MAX', PENDING_MAX_DEFAULT, 1, PENDING_MAX_LIMIT),
    sqlite_store_thread: (oneOf(env, 'SQLITE_STORE_THREAD', [...SQLITE_STORE_THREAD_SETTINGS]) ?? 'auto') as SqliteStoreThreadSetting,
    read_cache_max_bytes: integer(env, 'READ_CACHE_MAX_BYTES', READ_CACHE_DEFAULT_BYTES, 0, READ_CACHE_LIMIT_BYTES),
    heap_growing_percent: integer(env, 'HEAP_GROWING_PERCENT', HEAP_GROWING_PERCENT_DEFAULT, 0, HEAP_GROWING_PERCENT_MAX),
    native_symbol: symbol(env, 'NATIVE_SYMBOL') ?? 'TAB',
    native_price_text,
    native_price_units: price('NATIVE_PRICE_USD', native_price_text),
    pool_fee_bps: integer(env, 'POOL_FEE_BPS', POOL_FEE_BPS_DEFAULT, 0, POOL_FEE_BPS_MAX),
    log_level: oneOf(env, 'LOG_LEVEL', LOG_LEVELS) ?? 'info',
    log_format: chooseLogFormat((oneOf(env, 'LOG_FORMAT', [...LOG_FORMAT_SETTINGS]) ?? 'auto') as LogFormatSetting, {
      stdout_terminal: runtime.stdout_terminal === true, production: node_env === 'production',
    }),
    metrics_token: metricsToken(env, 'METRICS_TOKEN'),
    checkpoint_signing_key: checkpointKey(env, 'CHECKPOINT_SIGNING_KEY'),
    metrics_port: text(env, 'METRICS_PORT') === undefined ? undefined : integer(env, 'METRICS_PORT', 0, 1, 65_535),
    cors_origins: origins(env, 'CORS_ORIGINS'),
    events: {
      retention_s: integer(env, 'EVENTS_RETENTION_S', 7 * 86_400, 3600, 366 * 86_400),
      streams_max: integer(env, 'EVENTS_STREAMS_MAX', 2000, 1, 100_000),
      streams_per_caller_max: integer(env, 'EVENTS_STREAMS_PER_CALLER_MAX', 10, 1, 100_000),
      nats: natsSettings(env),
    },
    webhooks: {
      retry_base_ms: integer(env, 'WEBHOOK_RETRY_BASE_MS', 1000, 10, 3_600_000),
      retry_period_s: integer(env, 'WEBHOOK_RETRY_PERIOD_S', 86_400, 1, 30 * 86_400),
      timeout_ms: integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
      allowed_hosts: hostList(env, 'WEBHOOK_ALLOWED_HOSTS'),
      concurrency_max: integer(env, 'WEBHOOK_CONCURRENCY_MAX', 16, 1, 1000),
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
  if (config.production) requireBoundTokens(config.jwt);
  if (config.production && config.checkpoint_signing_key === undefined) {
    throw new ConfigError('CHECKPOINT_SIGNING_KEY', 'NODE_ENV=production needs CHECKPOINT_SIGNING_KEY (base64 of a 32-byte Ed25519 seed, or a PKCS#8 PEM key) to sign checkpoints');
  }
  return config;
}

/**
 * RFC 8725 sections 3.8 and 3.9: in production, tokens from an identity provider must name us (`aud`)
 * and it (`iss`), or a token it minted for another application or tenant would pass as ours.
 */
function requireBoundTokens(jwt: JwtConfig): void {
  if (jwt.issuer === undefined && jwt.jwks_url === undefined) return;
  if (jwt.audience === undefined) {
    throw new ConfigError('JWT_AUDIENCE', 'NODE_ENV=production with an identity provider needs JWT_AUDIENCE (the `aud` its tokens carry for this service)');
  }
  if (jwt.issuer === undefined) {
    throw new ConfigError('JWT_ISSUER', 'NODE_ENV=production with JWT_JWKS_URL needs JWT_ISSUER too (the `iss` its tokens carry), so that tokens of another issuer are refused');
  }
}

/** A host that only this machine can reach: `localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  return net.isIPv4(bare) && bare.startsWith('127.');
}

function httpLimits(env: Environment): HttpLimits {
  const limits = {
    request_timeout_ms: integer(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 1000, 600_000),
    headers_timeout_ms: integer(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 1000, 600_000),
    keep_alive_timeout_ms: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, 1000, 600_000),
    connections_max: integer(env, 'HTTP_CONNECTIONS_MAX', 10_000, 10, 1_000_000),
  };
  if (limits.headers_timeout_ms > limits.request_timeout_ms) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${limits.request_timeout_ms})`);
  }
  return limits;
}

function jwtSettings(env: Environment): JwtConfig {
  return {
    issuer: identityProviderUrl(env, 'JWT_ISSUER'),
    jwks_url: identityProviderUrl(env, 'JWT_JWKS_URL'),
    audience: text(env, 'JWT_AUDIENCE'),
    secret: secret(env, 'JWT_SECRET'),
    types: tokenTypes(env, 'JWT_TYPES'),
    jwks_cache_max_age_ms: integer(env, 'JWKS_CACHE_MAX_AGE_MS', 10 * 60_000, 1000, 86_400_000),
    jwks_stale_grace_ms: integer(env, 'JWKS_STALE_GRACE_MS', 86_400_000, 0, 7 * 86_400_000),
  };
}

/** An identity provider's address: https, or http only on a loopback host (keys fetched in clear could be swapped). */
function identityProviderUrl(env: Environment, name: string): string | undefined {
  const value = url(env, name);
  if (value !== undefined && new URL(value).protocol === 'http:' && !isLoopbackHost(new URL(value).hostname)) {
    throw new ConfigError(name, `must be https (plain http is accepted only on a loopback host: 127.0.0.0/8, ::1, localhost); got "${value}"`);
  }
  return value;
}

/** Comma-separated media types for the `typ` header, e.g. `at+jwt` (RFC 9068) or `JWT`; at most 10. */
function tokenTypes(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = commaItems(name, value);
  if (items.length > 10 || items.some((item) => !/^[A-Za-z0-9][A-Za-z0-9.+\-/]{0,63}$/.test(item))) {
    throw new ConfigError(name, `must be up to 10 comma-separated token types such as at+jwt (got "${value}")`);
  }
  return items;
}

/**
 * Proxies whose `X-Forwarded-For` names the client: comma-separated addresses or CIDR ranges
 * (e.g. `10.0.0.5,192.168.0.0/16`). Unset: forwarding headers are never trusted.
 */
function trustedProxies(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = commaItems(name, value);
  for (const item of items) {
    const [address, bits, extra] = item.split('/');
    const family = net.isIP(address ?? '');
    const width = family === 4 ? 32 : 128;
    const valid = family !== 0 && extra === undefined && (bits === undefined || (/^[0-9]{1,3}$/.test(bits) && Number(bits) <= width));
    if (!valid) throw new ConfigError(name, `each entry must be an IP address or CIDR range such as 10.0.0.0/8 (got "${item}")`);
  }
  return items;
}

/** Comma-separated host names and IP addresses (IPv6 with or without brackets). */
function hostList(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = commaItems(name, value).map((item) => item.toLowerCase());
  for (const item of items) {
    const bare = item.startsWith('[') && item.endsWith(']') ? item.slice(1, -1) : item;
    const valid = net.isIP(bare) !== 0 || /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/.test(bare);
    if (!valid) throw new ConfigError(name, `each entry must be a host name or an IP address (got "${item}")`);
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

function checkpointKey(env: Environment, name: string): CheckpointKey | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  try {
    return parseCheckpointKey(value);
  } catch (error) {
    throw new ConfigError(name, error instanceof Error ? error.message : 'is not a usable Ed25519 key');
  }
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

/**
 * The items of a comma-separated setting, trimmed, empty ones left out. A setting that is given but
 * lists nothing (",", " , ") is refused rather than taken as unset: `API_KEYS="${K1},${K2}"` with both
 * empty would otherwise leave the API open, and `EVENTS_NATS_URL=","` would let the client pick a server.
 */
function commaItems(name: string, value: string): string[] {
  const items = value.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length === 0) throw new ConfigError(name, `lists nothing (got "${value}"): name at least one, or leave it unset`);
  return items;
}

/** The values of NODE_ENV the service knows. */
const NODE_ENVIRONMENTS = ['production', 'development', 'test'];

/**
 * NODE_ENV, trimmed and lower-cased; unset (or empty) is development. Any other value is refused: a
 * typo such as "prod" or "production " silently ran in development mode, without the checks
 * production makes at start (an identity provider's audience and issuer, the checkpoint key).
 */
function nodeEnvironment(env: Environment): string {
  const value = (env.NODE_ENV ?? '').trim().toLowerCase();
  if (value === '') return 'development';
  if (!NODE_ENVIRONMENTS.includes(value)) throw new ConfigError('NODE_ENV', `must be production, development or test (got "${env.NODE_ENV}")`);
  return value;
}

function list(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = commaItems(name, value);
  if (items.some((item) => item.length < 16)) throw new ConfigError(name, 'every key must be at least 16 characters');
  return items;
}

/** Comma-separated origins (`https://app.example.com`, scheme + host + optional port), or `*`. */
function origins(env: Environment, name: string): string[] {
  const value = text(env, name);
  if (value === undefined) return [];
  const items = commaItems(name, value);
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

/** Where the ledger lives when DATABASE_URL is not set. */
export const DATABASE_URL_DEFAULT = 'sqlite:./data/ledger.db';

/** A DATABASE_URL (sqlite:<file> or postgres://…[?schema=]) as the service reads it; also used by the CLI's database commands. */
export function parseDatabaseUrl(value: string): DatabaseConfig {
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

/**
 * EVENTS_NATS_URL: one or more comma-separated `nats://` or `tls://` URLs; EVENTS_NATS_STREAM: the
 * stream; EVENTS_NATS_SUBJECT_PREFIX: where the subjects start.
 */
function natsSettings(env: Environment): NatsConfig | null {
  const value = text(env, 'EVENTS_NATS_URL');
  const stream = text(env, 'EVENTS_NATS_STREAM') ?? 'TABULA';
  if (!NATS_STREAM_NAME_PATTERN.test(stream)) {
    throw new ConfigError('EVENTS_NATS_STREAM', `must be 1 to 64 letters, digits, _ or - (got "${stream}")`);
  }
  const subject_prefix = text(env, 'EVENTS_NATS_SUBJECT_PREFIX') ?? 'tabula.events';
  if (!NATS_SUBJECT_PREFIX_PATTERN.test(subject_prefix) || subject_prefix.length > NATS_SUBJECT_PREFIX_LENGTH_MAX) {
    throw new ConfigError('EVENTS_NATS_SUBJECT_PREFIX', `must be dot-separated tokens of letters, digits, _ or -, at most ${NATS_SUBJECT_PREFIX_LENGTH_MAX} characters, no wildcards (got "${subject_prefix}")`);
  }
  if (value === undefined) return null;
  const servers = commaItems('EVENTS_NATS_URL', value);
  for (const server of servers) {
    let valid: boolean;
    try {
      const parsed = new URL(server);
      valid = (parsed.protocol === 'nats:' || parsed.protocol === 'tls:') && parsed.hostname !== '';
    } catch {
      valid = false;
    }
    if (!valid) throw new ConfigError('EVENTS_NATS_URL', 'each entry must be a nats:// or tls:// URL such as nats://127.0.0.1:4222');
  }
  return { servers, stream, subject_prefix };
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
