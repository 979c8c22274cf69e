/**
 * The composition root: config → store → service → server, each handed what it needs. `startTabula`
 * is what `run-service.ts` (behind `main.ts` and `tabula serve`) runs and what in-process tests use;
 * `stop` is the graceful shutdown.
 */
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { hasJwtKeys, type Config, ConfigError } from './config.js';
import { balanceCheckpointExtension } from './balance-commitments/balance-checkpoint-extension.js';
import { BalanceCommitmentKeeper } from './balance-commitments/balance-commitment-keeper.js';
import { createApiKeyCheck } from './auth/api-key-check.js';
import { PendingBacklog } from './backpressure/pending-backlog.js';
import { readOrCreateDevSecret, devSecretPath } from './auth/dev-secret.js';
import { createDevTokenSigner } from './auth/dev-token-signer.js';
import { createTokenVerifier } from './auth/token-verifier.js';
import { TokenRegistry } from './domain/shared/tokens.js';
import { CheckpointBuilder, type CheckpointExtensionProvider } from './checkpoints/checkpoint-builder.js';
import { devCheckpointKeyPath, readOrCreateDevCheckpointKey } from './checkpoints/checkpoint-key.js';
import { fillHistory } from './service/history-writer.js';
import { HistoryService } from './service/history-service.js';
import { MemoryRateLimitStore, RateLimiter, type RateLimitStore } from './http/rate-limit.js';
import { FailOpenRateLimitStore, RedisRateLimitStore } from './http/redis-rate-limit.js';
import { DEFAULT_EVENT_STREAM_LIMITS, type EventStreamLimits } from './http/routes/events.js';
import { buildMetricsServer, buildServer, type App } from './http/server.js';
import { LedgerMetrics } from './metrics/ledger-metrics.js';
import { BlockProducer, type SealedBlockSummary } from './service/block-producer.js';
import { systemClock, type Clock } from './service/clock.js';
import { LedgerService } from './service/ledger-service.js';
import type { LedgerStore } from './service/ledger-store.js';
import { SoleSealerLease, type SealerLease } from './service/sealer-lease.js';
import { StorageHealth } from './service/storage-health.js';
import { DEFAULT_WRITER_LIMITS, SubmissionWriter } from './service/submission-writer.js';
import { DEFAULT_EVENT_HUB_OPTIONS, EventHub, type EventHubOptions, type EventSignal } from './events/event-hub.js';
import { NatsPublisher, type PublisherLease } from './events/nats/nats-publisher.js';
import { PostgresEventSignal } from './store/postgres/postgres-event-signal.js';
import { PostgresSealerLease } from './store/postgres/postgres-sealer-lease.js';
import { PostgresStore } from './store/postgres/postgres-store.js';
import { loggerFormatOptions } from './logging/log-format.js';
import { LOCK_CLASS } from './store/postgres/schema.js';
import { SqliteStore } from './store/sqlite/sqlite-store.js';
import { storeThreadWanted } from './store/sqlite/thread/store-thread-setting.js';
import { ThreadedSqliteStore } from './store/sqlite/thread/threaded-sqlite-store.js';
import type { WalCheckpointStats } from './store/sqlite/wal-checkpointer.js';
import { AddressGuard } from './webhooks/address-guard.js';
import { RETRY_DELAY_CAP_MS } from './webhooks/retry-backoff.js';
import { WebhookDeliverer } from './webhooks/webhook-deliverer.js';
import { WebhookSender } from './webhooks/webhook-sender.js';
import { ENDPOINTS_MAX, WebhookService } from './webhooks/webhook-service.js';
import { SealedRecordCache } from './read-cache/sealed-record-cache.js';
import type { WebhookStore } from './webhooks/webhook-store.js';

const IDEMPOTENCY_PRUNE_INTERVAL_MS = 10 * 60_000;
/** How often the pending backlog is counted in the store (a block sealed here frees its places without a count). */
const BACKLOG_REFRESH_MS = 500;
/** Retry-After of a `pending_backlog_full` refusal: about one block interval, at most this. */
const BACKLOG_RETRY_AFTER_S_MAX = 30;
/** At shutdown the sealer seals what is pending, up to this many blocks; the next sealer takes the rest. */
const SHUTDOWN_BLOCKS_MAX = 100;
/** AUTH_FAILURES_MAX bad tokens per client address per this window. */
const AUTH_FAILURE_WINDOW_MS = 60_000;
/** How long a shutdown lets open connections finish their requests before it closes them. */
const SHUTDOWN_CONNECTIONS_GRACE_MS = 5000;

/** One running Tabula: its server, store, service, sealer and the rest, as composed here. */
export type Tabula = {
  app: App;
  /** The server of `/metrics` when METRICS_PORT is set (not yet listening); null otherwise. */
  metrics_app: Awaited<ReturnType<typeof buildMetricsServer>> | null;
  metrics: LedgerMetrics;
  store: LedgerStore;
  lease: SealerLease;
  service: LedgerService;
  producer: BlockProducer;
  writer: SubmissionWriter;
  /** This instance's window on the event log: what streams, webhooks and publishers read. */
  events: EventHub;
  /** Publishes the event log to NATS JetStream when EVENTS_NATS_URL is set; null otherwise. */
  publisher: NatsPublisher | null;
  /** Webhooks (on the SQLite and PostgreSQL stores; null on a store of another kind). */
  webhooks: Webhooks | null;
  /** Stops accepting, seals what is pending, closes the store. */
  stop(): Promise<void>;
};

/** A store given here is closed by `stop`; without a lease it is taken to be this process's alone, and it delivers no webhooks. */
export type TabulaOptions = {
  logger?: Logger;
  clock?: Clock;
  store?: LedgerStore;
  lease?: SealerLease;
  /** The folder of the built explorer, served at `/` when it holds an index.html. */
  explorer_root?: string;
  /** Overrides of the event streams' limits (tests make a slow consumer's limits small). */
  event_stream_limits?: Partial<EventStreamLimits>;
  /** Overrides of the event hub's options (tests turn the backstop poll off to see the change signal work). */
  event_hub?: Partial<EventHubOptions>;
  /** Extension lines for signed checkpoints (e.g. a balance commitment); default none. Their lines are signed. */
  checkpoint_extensions?: readonly CheckpointExtensionProvider[];
};

/**
 * The store, the lease that decides which instance seals blocks in it, and the signal by which other
 * instances' events are heard of (null: this process is the store's only writer).
 */
export type Storage = {
  store: LedgerStore;
  lease: SealerLease;
  event_signal: EventSignal | null;
  health: StorageHealth | null;
  /** The webhook tables on the same database (null: no webhooks, e.g. for a store a test hands in). */
  webhooks: WebhookStore | null;
  /** SQLite: the counts of its WAL checkpoints, made off the event loop (absent on PostgreSQL). */
  wal_checkpoints?: () => WalCheckpointStats | null;
};

/** JSON lines, or pretty-printed through the `pino-pretty` transport when `config.log_format` says so. */
export function createLogger(config: Config): Logger {
  return pino({ level: config.log_level, base: { service: 'tabula' }, ...loggerFormatOptions(config.log_format) });
}

export async function openStorage(config: Config, logger: Logger, clock: Clock = systemClock): Promise<Storage> {
  const database = config.database;
  const health = new StorageHealth(clock, logger);
  if (database.kind === 'sqlite') {
    const options = { path: database.path, health, logger };
    const store = storeThreadWanted(config.sqlite_store_thread, os.availableParallelism()) ? await ThreadedSqliteStore.open(options) : SqliteStore.open(options);
    return { store, lease: new SoleSealerLease(), event_signal: null, health, webhooks: store.webhooks(), wal_checkpoints: () => store.walCheckpoints() };
  }
  const connection = { url: database.url, schema: database.schema, timeouts: config.postgres_timeouts };
  const store = await PostgresStore.open({ ...connection, logger, health });
  return {
    health,
    store,
    webhooks: store.webhooks(),
    lease: new PostgresSealerLease(connection, logger),
    event_signal: new PostgresEventSignal(connection, logger),
  };
}

/**
 * Rate-limit buckets: in Redis for every instance when REDIS_URL is set, else in memory. Redis that
 * cannot be reached (at start or later) never stops the service: the buckets fall back to memory.
 */
async function openRateLimitStore(config: Config, logger: Logger): Promise<{ store: RateLimitStore; fallbacks(): number; close(): Promise<void> }> {
  if (config.redis_url === undefined) return { store: new MemoryRateLimitStore(), fallbacks: () => 0, close: async () => {} };
  const redis = new RedisRateLimitStore({ url: config.redis_url, logger });
  if (!(await redis.connected())) logger.warn('Redis cannot be reached at start; rate limits are counted per instance until it can');
  const store = new FailOpenRateLimitStore(redis, new MemoryRateLimitStore(), logger);
  return { store, fallbacks: () => store.fallbacks, close: () => redis.close() };
}

export async function startTabula(config: Config, options: TabulaOptions = {}): Promise<Tabula> {
  const logger = options.logger ?? createLogger(config);
  const clock = options.clock ?? systemClock;
  const { store, lease, event_signal, health, webhooks: webhook_store, wal_checkpoints } = options.store === undefined
    ? await openStorage(config, logger, clock)
    : { store: options.store, lease: options.lease ?? new SoleSealerLease(), event_signal: null, health: null, webhooks: null };
  const tokens = new TokenRegistry(await claimNativeSymbol(store, config.native_symbol));
  const metrics = new LedgerMetrics();
  const hub_options = { ...DEFAULT_EVENT_HUB_OPTIONS, retention_s: config.events.retention_s, ...options.event_hub };
  const events = new EventHub(store, tokens, clock, logger, hub_options, event_signal);
  // Tells the hub of each group commit with the head it took: no read of the head (on PostgreSQL the
  // commit's NOTIFY tells of it again, and a head already loaded costs nothing).
  const writer = new SubmissionWriter(store, DEFAULT_WRITER_LIMITS, () => events.changed(store.appendedEventHead()));
  const backlog = new PendingBacklog((limit) => store.pendingCountUpTo(limit), {
    pending_max: config.pending_max, refresh_ms: BACKLOG_REFRESH_MS, retry_after_s: Math.min(BACKLOG_RETRY_AFTER_S_MAX, Math.max(1, Math.ceil(config.block_interval_ms / 1000))),
  });
  await backlog.start();
  metrics.watchBacklog(backlog);
  metrics.watchQueues({ writer_queue_length: () => writer.queue_length, pending_transactions: () => store.pendingCount() });
  const balance_commitment = new BalanceCommitmentKeeper(store, logger);
  const service = new LedgerService(store, writer, tokens, clock, {
    native_price_units: config.native_price_units, pool_fee_bps: config.pool_fee_bps, failure_budget_per_hour: config.failure_budget_per_hour, backlog, balance_commitment,
    ...(health === null ? {} : { storage: health }),
  });
  if (health !== null) metrics.watchStorage(health);
  if (wal_checkpoints !== undefined) metrics.watchWalCheckpoints(wal_checkpoints);
  const pool_fee_bps = await claimPoolFee(store, config.pool_fee_bps);
  const market = { native: tokens.native.symbol, usdg: tokens.usdg.symbol, fee_bps: pool_fee_bps, fallback_price_units: config.native_price_units };
  const producer_options = { block_interval_ms: config.block_interval_ms, block_txs_max: config.block_txs_max, market };
  const observer = { blockSealed: (summary: SealedBlockSummary) => { metrics.blockSealed(summary); events.changed(); void backlog.sealed(summary.transactions); } };
  const producer = new BlockProducer(store, clock, logger, producer_options, { lease, observer, commitment: balance_commitment });
  await producer.ensureGenesis();
  await balance_commitment.start();
  const history = await startHistory(config, store, logger, [balanceCheckpointExtension(store), ...(options.checkpoint_extensions ?? [])]);
  await events.start();
  const publisher = config.events.nats === null ? null : new NatsPublisher(events, publisherLease(config, logger, options.store !== undefined), config.events.nats, logger);
  publisher?.start();
  if (publisher !== null) metrics.watchEventsPublisher(publisher);
  const webhooks = webhook_store === null ? null : startWebhooks(config, { store, webhook_store, sole_writer: event_signal === null }, events, clock, logger, metrics);
  const dev_secret = hasJwtKeys(config.jwt) ? undefined : readOrCreateDevSecret(config.data_dir);
  if (dev_secret !== undefined) {
    logger.warn(
      { secret_file: devSecretPath(config.data_dir) },
      'no identity provider configured: development tokens only; mint one with `npm run token -- <user> [--admin]`',
    );
  }
  const verifier = await createTokenVerifier({
    jwt: config.jwt, admin_scope: config.admin_scope, dev_secret, logger, on_cache_lookup: (hit) => metrics.tokenCacheLookup(hit),
  });
  if (verifier.identity_provider !== null) metrics.watchIdentityProvider(verifier.identity_provider);
  const rate_limit_store = await openRateLimitStore(config, logger);
  const rate_limiter = new RateLimiter(rate_limit_store.store, config.rate_limit_max, config.rate_limit_window_ms);
  const auth_failure_limiter = new RateLimiter(new MemoryRateLimitStore(), config.auth_failures_max, AUTH_FAILURE_WINDOW_MS);
  metrics.watchRateLimitFallbacks(rate_limit_store.fallbacks);
  const api_key_check = config.api_keys.length > 0 ? createApiKeyCheck(config.api_keys) : null;
  // Only the development secret (never JWT_SECRET, never production) lets the explorer mint tokens.
  const dev_tokens = dev_secret !== undefined && !config.production
    ? createDevTokenSigner({ secret: dev_secret, admin_scope: config.admin_scope })
    : undefined;
  const explorer_root = explorerRoot(options.explorer_root, logger);
  // /metrics: on its own port when METRICS_PORT is set, else on the API port only when METRICS_TOKEN guards it.
  const metrics_route = config.metrics_port === undefined && config.metrics_token !== undefined ? { token: config.metrics_token } : null;
  let streams_open = 0;
  metrics.watchEvents({ head: () => events.head(), streams_open: () => streams_open });
  const read_cache = new SealedRecordCache(config.read_cache_max_bytes);
  metrics.watchReadCache(read_cache);
  const app = await buildServer({
    service, tokens, verifier, api_key_check, rate_limiter, auth_failure_limiter, clock, logger, metrics, metrics_route, dev_tokens, explorer_root, read_cache,
    trust_proxy: config.trust_proxy,
    connection_limits: config.http_limits,
    cors_origins: config.cors_origins,
    webhooks: webhooks?.service,
    history,
    events: {
      feed: events,
      limits: {
        ...DEFAULT_EVENT_STREAM_LIMITS,
        streams_max: config.events.streams_max,
        streams_per_caller_max: config.events.streams_per_caller_max,
        ...options.event_stream_limits,
      },
      store_head: () => store.eventHead(),
      on_streams_open: (open: number) => {
        streams_open = open;
      },
    },
  });
  const metrics_app = config.metrics_port === undefined ? null : await buildMetricsServer(metrics, config.metrics_token, logger);
  producer.start();
  const prune = setInterval(() => void service.pruneIdempotency().catch((error) => logger.error({ err: error }, 'pruning idempotency keys failed')), IDEMPOTENCY_PRUNE_INTERVAL_MS);
  prune.unref();

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      clearInterval(prune);
      backlog.stop();
      verifier.close();
      await metrics_app?.close();
      await closeServer(app, logger);
      await writer.drain();
      await producer.stop();
      if (producer.halted === null && lease.held()) await producer.drain(SHUTDOWN_BLOCKS_MAX);
      await publisher?.stop();
      await webhooks?.deliverer.stop();
      await events.stop();
      await lease.release();
      await rate_limit_store.close();
      await store.close();
    })();
    return stopping;
  };
  return { app, metrics_app, metrics, store, lease, service, producer, writer, events, publisher, webhooks, stop };
}

export type Webhooks = { service: WebhookService; deliverer: WebhookDeliverer };

/** How often due webhook endpoints are looked for when the log does not grow (retries come due this way). */
const WEBHOOK_POLL_INTERVAL_MS = 250;

/**
 * Webhooks on the ledger's own database. A lease outlasts a send (renewed before each one); on SQLite
 * this process is the only deliverer, so its owner name is fixed and a restart takes its leases back
 * at once, while on PostgreSQL each instance has its own and a dead one's leases expire.
 */
function startWebhooks(
  config: Config, stores: { store: LedgerStore; webhook_store: WebhookStore; sole_writer: boolean }, events: EventHub, clock: Clock, logger: Logger, metrics: LedgerMetrics,
): Webhooks {
  const { store, webhook_store } = stores;
  const settings = config.webhooks;
  const guard = new AddressGuard(settings.allowed_hosts);
  const sender = new WebhookSender(guard, settings.timeout_ms);
  // A store that cannot be read leaves the lag out of the scrape rather than failing the whole scrape.
  const attempted = metrics.watchWebhooks(async () => {
    const endpoints = await webhook_store.listEndpoints(null, ENDPOINTS_MAX).catch(() => []);
    return endpoints.map((endpoint) => ({
      endpoint: endpoint.id,
      events: Math.max(0, events.head() - endpoint.last_sequence),
      state: endpoint.status === 'disabled' ? 'disabled' : endpoint.failed_attempts > 0 ? 'failing' : 'active',
    } as const));
  }, () => deliverer.workerCounts());
  const deliverer = new WebhookDeliverer(webhook_store, events, sender, clock, logger, {
    concurrency_max: settings.concurrency_max,
    retry_base_ms: settings.retry_base_ms,
    retry_cap_ms: RETRY_DELAY_CAP_MS,
    retry_period_s: settings.retry_period_s,
    lease_ms: 2 * settings.timeout_ms + 5000,
    poll_interval_ms: WEBHOOK_POLL_INTERVAL_MS,
  }, { ...(stores.sole_writer ? { owner: 'sole-instance' } : {}), observer: { attempted } });
  const service = new WebhookService({
    store: webhook_store, feed: events, guard, sender, clock, store_head: () => store.eventHead(), on_change: () => deliverer.wake(),
  });
  deliverer.start();
  return { service, deliverer };
}

/** On PostgreSQL the instances elect one publisher with a lock of its own; a store this process owns alone needs none. */
function publisherLease(config: Config, logger: Logger, store_given: boolean): PublisherLease {
  const database = config.database;
  if (store_given || database.kind === 'sqlite') return new SoleSealerLease();
  return new PostgresSealerLease({ url: database.url, schema: database.schema, timeouts: config.postgres_timeouts }, logger, LOCK_CLASS.publisher);
}

/**
 * Closes the server; a connection still open after a grace period (a client that keeps a connection it
 * no longer uses busy, for one) is cut, so that a shutdown never waits on a client.
 */
async function closeServer(app: App, logger: Logger): Promise<void> {
  const grace = setTimeout(() => {
    logger.warn('connections still open after the shutdown grace period: closing them');
    app.server.closeAllConnections();
  }, SHUTDOWN_CONNECTIONS_GRACE_MS);
  try {
    await app.close();
  } finally {
    clearTimeout(grace);
  }
}

function explorerRoot(root: string | undefined, logger: Logger): string | undefined {
  if (root === undefined) return undefined;
  if (fs.existsSync(path.join(root, 'index.html'))) return root;
  logger.warn({ explorer_root: root }, 'the explorer is not built (run `npm run build`): serving the API only');
  return undefined;
}

/**
 * The history tree, filled in for blocks that predate it (before the sealer starts), and the checkpoint
 * signer: CHECKPOINT_SIGNING_KEY, or outside production a development key in the data folder.
 */
async function startHistory(
  config: Config, store: LedgerStore, logger: Logger, extensions: readonly CheckpointExtensionProvider[],
): Promise<{ history: HistoryService; checkpoints: CheckpointBuilder }> {
  const filled = await fillHistory(store);
  if (filled > 0) logger.info({ blocks: filled }, 'history tree filled in for blocks sealed before it existed');
  let key = config.checkpoint_signing_key;
  if (key === undefined) {
    key = readOrCreateDevCheckpointKey(config.data_dir);
    logger.warn({ key_file: devCheckpointKeyPath(config.data_dir), key_id: key.key_id }, 'no CHECKPOINT_SIGNING_KEY: checkpoints are signed with a development key');
  }
  const history = new HistoryService(store);
  return { history, checkpoints: new CheckpointBuilder(store, history, key, extensions) };
}

/** The native symbol is part of every hash: it is fixed when the ledger is created. */
/** The pool's fee is part of what every swap's outcome depends on: fixed when the ledger is created, like its symbol. */
async function claimPoolFee(store: LedgerStore, configured: number): Promise<number> {
  const stored = await store.claimSetting('pool_fee_bps', String(configured));
  if (stored !== String(configured)) {
    throw new ConfigError('POOL_FEE_BPS', `this ledger was created with ${stored}; it cannot change to ${configured}`);
  }
  return configured;
}

async function claimNativeSymbol(store: LedgerStore, configured: string): Promise<string> {
  const stored = await store.claimSetting('native_symbol', configured);
  if (stored !== configured) {
    throw new ConfigError('NATIVE_SYMBOL', `this ledger was created with ${stored}; it cannot change to ${configured}`);
  }
  return stored;
}
