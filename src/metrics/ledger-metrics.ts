/**
 * The service's Prometheus metrics (prom-client). One `Registry` per ledger, built by the
 * composition and handed to whatever records into it: nothing registers into prom-client's global
 * default registry, so two ledgers in one process (as in tests) never mix their numbers.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BlockSealObserver, SealedBlockSummary } from '../service/block-producer.js';
import { RequestDurationHistogram } from './request-duration-histogram.js';

/** The SQLite store's checkpoint counts, as its checkpointer keeps them (null when it has none). */
type WalCheckpointCounts = { completed: number; partial: number; failed: number; write_waits: number; wal_bytes: number; off_loop: boolean };

/** Where the depth gauges read from when Prometheus scrapes. */
export type QueueSources = {
  /** Submissions waiting for their group commit. */
  writer_queue_length(): number;
  /** Transactions stored as pending, not yet in a block. */
  pending_transactions(): Promise<number>;
};

const HTTP_DURATION_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const SEAL_DURATION_BUCKETS_S = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BLOCK_SIZE_BUCKETS = [1, 10, 100, 1000, 10_000, 100_000];

/** What the webhook metrics read of an endpoint at scrape time. */
export type WebhookEndpointState = { endpoint: string; events: number; state: 'active' | 'failing' | 'disabled' };

export class LedgerMetrics implements BlockSealObserver {
  readonly registry: Registry;
  private readonly http_duration: RequestDurationHistogram;
  /** Submissions by type, then outcome: numbers counted per submission, handed to prom-client when it is scraped. */
  private readonly submissions = new Map<string, Map<string, number>>();
  private readonly sealed: Counter<'type' | 'status' | 'error'>;
  private readonly seal_duration: Histogram;
  private readonly block_size: Histogram;
  /** Token cache lookups, counted as numbers per request and handed to prom-client when it is scraped. */
  private readonly token_cache_lookups = { hit: 0, miss: 0 };
  private readonly budget_refusals: Counter<'type'>;

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    collectDefaultMetrics({ register: registry });
    this.http_duration = new RequestDurationHistogram(
      'tabula_http_request_duration_seconds', 'HTTP requests by method, route and status: count and duration in seconds', HTTP_DURATION_BUCKETS_S,
    );
    // prom-client's registry takes any object that gives its values in the shape of its own metrics.
    registry.registerMetric(this.http_duration as unknown as Parameters<Registry['registerMetric']>[0]);
    const submissions = this.submissions;
    new Counter({
      name: 'tabula_submissions_total',
      help: 'Submitted transactions by type and outcome (accepted, replayed, or the error code that refused them)',
      labelNames: ['type', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const [type, by_outcome] of submissions) {
          for (const [outcome, count] of by_outcome) this.inc({ type, outcome }, count);
        }
      },
    });
    this.sealed = new Counter({
      name: 'tabula_transactions_sealed_total',
      help: 'Transactions sealed into blocks, by type, status (confirmed or failed) and error',
      labelNames: ['type', 'status', 'error'],
      registers,
    });
    this.seal_duration = new Histogram({
      name: 'tabula_block_seal_duration_seconds',
      help: 'Time to seal one block: read pending, apply, hash, and commit',
      buckets: SEAL_DURATION_BUCKETS_S,
      registers,
    });
    this.block_size = new Histogram({ name: 'tabula_block_transactions', help: 'Transactions per sealed block', buckets: BLOCK_SIZE_BUCKETS, registers });
    const token_cache_lookups = this.token_cache_lookups;
    new Counter({
      name: 'tabula_token_cache_lookups_total',
      help: 'Lookups in the cache of verified tokens, by result (hit or miss)',
      labelNames: ['result'],
      registers,
      collect() {
        this.reset();
        this.inc({ result: 'hit' }, token_cache_lookups.hit);
        this.inc({ result: 'miss' }, token_cache_lookups.miss);
      },
    });
    this.budget_refusals = new Counter({
      name: 'tabula_failure_budget_refusals_total',
      help: "Debits refused because they were not covered and their caller had spent its failure budget for the hour (FAILURE_BUDGET_PER_HOUR), by type",
      labelNames: ['type'],
      registers,
    });
    for (const type of ['transfer', 'burn']) this.budget_refusals.inc({ type }, 0);
  }

  /** Registers the read cache's figures (src/read-cache), read at scrape time: nothing is counted per request. */
  watchReadCache(cache: { readonly bytes: number; readonly size: number; readonly hits: number; readonly misses: number; readonly bytes_max: number }): void {
    const registers = [this.registry];
    new Counter({
      name: 'tabula_read_cache_lookups_total',
      help: 'Look-ups of sealed transactions, blocks and history pages in the cache of serialised answers, by result (hit or miss)',
      labelNames: ['result'],
      registers,
      collect() {
        this.reset();
        this.inc({ result: 'hit' }, cache.hits);
        this.inc({ result: 'miss' }, cache.misses);
      },
    });
    new Gauge({
      name: 'tabula_read_cache_bytes',
      help: 'Bytes the cache of serialised answers holds (estimated; READ_CACHE_MAX_BYTES at most)',
      registers,
      collect() {
        this.set(cache.bytes);
      },
    });
    new Gauge({
      name: 'tabula_read_cache_entries',
      help: 'Answers the cache of serialised answers holds',
      registers,
      collect() {
        this.set(cache.size);
      },
    });
  }

  /** Registers the gauges that read queue depths at scrape time. */
  watchQueues(sources: QueueSources): void {
    const registers = [this.registry];
    new Gauge({
      name: 'tabula_submission_queue_depth',
      help: 'Submissions waiting for their group commit',
      registers,
      collect() {
        this.set(sources.writer_queue_length());
      },
    });
    new Gauge({
      name: 'tabula_pending_transactions',
      help: 'Transactions stored as pending and not yet sealed into a block',
      registers,
      async collect() {
        this.set(await sources.pending_transactions());
      },
    });
  }

  /** Registers the bound on the pending backlog: its limit, this instance's estimate, and the submissions refused. */
  watchBacklog(backlog: { readonly pending_max: number; readonly estimate: number; readonly refused: number }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'tabula_pending_max',
      help: 'PENDING_MAX: transactions waiting to be sealed at most before submissions are refused',
      registers,
      collect() {
        this.set(backlog.pending_max);
      },
    });
    new Gauge({
      name: 'tabula_pending_backlog_estimate',
      help: "Transactions waiting to be sealed as this instance counts them for PENDING_MAX (the store's count, at most 0.5 s old, plus its own appends since)",
      registers,
      collect() {
        this.set(backlog.estimate);
      },
    });
    new Counter({
      name: 'tabula_pending_backlog_refusals_total',
      help: 'Transactions refused with 503 pending_backlog_full (a batch counts its items)',
      registers,
      collect() {
        this.reset();
        this.inc(backlog.refused);
      },
    });
  }

  /** Registers the count of writes the storage refused (disk full, read-only, unreachable) and whether it refuses now. */
  watchStorage(health: { readonly failures: number; readonly failing: boolean }): void {
    const registers = [this.registry];
    new Counter({
      name: 'tabula_storage_write_failures_total',
      help: 'Writes the store refused because of the storage (disk full, read-only, connection lost)',
      registers,
      collect() {
        this.reset();
        this.inc(health.failures);
      },
    });
    new Gauge({
      name: 'tabula_storage_refusing_writes',
      help: '1 while the store refuses writes (readiness fails meanwhile), else 0',
      registers,
      collect() {
        this.set(health.failing ? 1 : 0);
      },
    });
  }

  /**
   * Registers the SQLite store's WAL checkpoints, made on a worker thread: by outcome, the writes that
   * waited for one (the WAL past its limit), the WAL's size, and whether they are still off the event loop.
   */
  watchWalCheckpoints(source: () => WalCheckpointCounts | null): void {
    const registers = [this.registry];
    new Counter({
      name: 'tabula_sqlite_wal_checkpoints_total',
      help: 'WAL checkpoints made by the checkpoint worker, by outcome (completed: the whole WAL copied; partial: a reader held some of it; failed)',
      labelNames: ['outcome'],
      registers,
      collect() {
        const stats = source();
        this.reset();
        if (stats === null) return;
        this.inc({ outcome: 'completed' }, stats.completed);
        this.inc({ outcome: 'partial' }, stats.partial);
        this.inc({ outcome: 'failed' }, stats.failed);
      },
    });
    new Counter({
      name: 'tabula_sqlite_wal_write_waits_total',
      help: 'Appends and block commits that waited for a checkpoint because the WAL was past its limit',
      registers,
      collect() {
        this.reset();
        this.inc(source()?.write_waits ?? 0);
      },
    });
    new Gauge({
      name: 'tabula_sqlite_wal_bytes',
      help: 'Size of the SQLite WAL file at the last commit the checkpointer was told of, or its last tick (once a second)',
      registers,
      collect() {
        this.set(source()?.wal_bytes ?? 0);
      },
    });
    new Gauge({
      name: 'tabula_sqlite_wal_checkpoints_off_loop',
      help: '1 while WAL checkpoints run on their worker thread; 0 once it failed and SQLite checkpoints in the commit again',
      registers,
      collect() {
        this.set(source()?.off_loop === true ? 1 : 0);
      },
    });
  }

  /** Registers the gauges of the event log: the newest event this instance has, and the streams open on it. */
  watchEvents(sources: { head(): number; streams_open(): number }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'tabula_events_head_sequence',
      help: 'Sequence of the newest event of the log this instance has loaded',
      registers,
      collect() {
        this.set(sources.head());
      },
    });
    new Gauge({
      name: 'tabula_event_streams_open',
      help: 'Event streams (GET /api/events) open on this instance',
      registers,
      collect() {
        this.set(sources.streams_open());
      },
    });
  }

  /** Registers the gauges of the NATS publisher: how many events it is behind the head, and whether this instance publishes. */
  watchEventsPublisher(publisher: { lag(): number; active(): boolean }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'tabula_events_publish_lag',
      help: 'Events of the log not yet stored in the NATS stream by this instance (0 on instances that do not publish)',
      registers,
      collect() {
        this.set(publisher.lag());
      },
    });
    new Gauge({
      name: 'tabula_events_publisher_active',
      help: '1 while this instance holds the events publisher lease (publishes to NATS), else 0',
      registers,
      collect() {
        this.set(publisher.active() ? 1 : 0);
      },
    });
  }

  /**
   * Registers the webhook metrics: attempts by outcome (delivered, failed, refused), counted through the
   * returned function; each endpoint's lag (events of the log after its cursor) and the endpoints by
   * state, read at scrape time; and this instance's delivery workers, busy and held by failing endpoints.
   */
  watchWebhooks(
    endpoints: () => Promise<ReadonlyArray<WebhookEndpointState>>,
    workers: () => { busy: number; failing: number; max: number },
  ): (outcome: string) => void {
    const registers = [this.registry];
    // A scrape collects every metric at once: the two gauges that read the endpoints share one read.
    let reading: Promise<ReadonlyArray<WebhookEndpointState>> | null = null;
    const read = () => (reading ??= endpoints().finally(() => {
      reading = null;
    }));
    const attempts = new Counter({
      name: 'tabula_webhook_deliveries_total',
      help: 'Webhook delivery attempts made by this instance, by outcome (delivered, failed, refused)',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['delivered', 'failed', 'refused']) attempts.inc({ outcome }, 0);
    new Gauge({
      name: 'tabula_webhook_endpoint_lag_events',
      help: 'Events of the log after a webhook endpoint\'s cursor (not yet delivered or passed over by its filters)',
      labelNames: ['endpoint'],
      registers,
      async collect() {
        const states = await read();
        this.reset();
        for (const { endpoint, events } of states) this.set({ endpoint }, events);
      },
    });
    new Gauge({
      name: 'tabula_webhook_endpoints',
      help: 'Webhook endpoints by state: active (its last attempt did not fail), failing (active, its last attempt failed), disabled',
      labelNames: ['state'],
      registers,
      async collect() {
        const states = await read();
        for (const state of ['active', 'failing', 'disabled'] as const) this.set({ state }, states.filter((endpoint) => endpoint.state === state).length);
      },
    });
    new Gauge({
      name: 'tabula_webhook_workers',
      help: 'Delivery workers of this instance: busy, held by failing endpoints, and the most there may be (WEBHOOK_CONCURRENCY_MAX)',
      labelNames: ['state'],
      registers,
      collect() {
        const now = workers();
        this.set({ state: 'busy' }, now.busy);
        this.set({ state: 'failing' }, now.failing);
        this.set({ state: 'max' }, now.max);
      },
    });
    return (outcome) => attempts.inc({ outcome });
  }

  /** Registers the failed fetches of the identity provider's keys and the age of the key set in use (see docs/operations.md). */
  watchIdentityProvider(keys: { readonly fetch_failures: number; age_s(): number | null }): void {
    const registers = [this.registry];
    new Counter({
      name: 'tabula_jwks_fetch_failures_total',
      help: "Fetches of the identity provider's discovery document or JWKS that failed",
      registers,
      collect() {
        this.reset();
        this.inc(keys.fetch_failures);
      },
    });
    new Gauge({
      name: 'tabula_jwks_age_seconds',
      help: "Seconds since the identity provider's keys in use were fetched (-1 before the first fetch)",
      registers,
      collect() {
        this.set(keys.age_s() ?? -1);
      },
    });
  }

  /** Registers the counter of rate-limit decisions made in memory because the shared store (Redis) failed. */
  watchRateLimitFallbacks(fallbacks: () => number): void {
    new Counter({
      name: 'tabula_rate_limit_fallbacks_total',
      help: 'Rate-limit decisions made in this instance\'s memory because Redis could not be reached',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(fallbacks());
      },
    });
  }

  httpRequest(method: string, route: string, status_code: number, duration_ms: number): void {
    this.http_duration.observe(method, route, status_code, duration_ms / 1000);
  }

  submission(type: string, outcome: string, count = 1): void {
    // Both labels come from fixed lists (the transaction types and `invalid`; the error catalogue's codes).
    let by_outcome = this.submissions.get(type);
    if (by_outcome === undefined) {
      by_outcome = new Map();
      this.submissions.set(type, by_outcome);
    }
    by_outcome.set(outcome, (by_outcome.get(outcome) ?? 0) + count);
    if (outcome === 'failure_budget_exceeded') this.budget_refusals.inc({ type }, count);
  }

  tokenCacheLookup(hit: boolean): void {
    if (hit) this.token_cache_lookups.hit += 1;
    else this.token_cache_lookups.miss += 1;
  }

  blockSealed(summary: SealedBlockSummary): void {
    this.seal_duration.observe(summary.duration_ms / 1000);
    this.block_size.observe(summary.transactions);
    for (const { type, status, error, count } of summary.outcomes) this.sealed.inc({ type, status, error }, count);
  }

  /** The exposition text and its content type. */
  async exposition(): Promise<{ content_type: string; body: string }> {
    return { content_type: this.registry.contentType, body: await this.registry.metrics() };
  }
}
