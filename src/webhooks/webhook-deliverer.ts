/**
 * The deliverer: sends the event log to every active endpoint, at least once and in sequence order per
 * endpoint. Every poll (and whenever the log grows) it leases the endpoints that are due and runs one
 * worker per leased endpoint, at most `concurrency_max` at once, so a slow endpoint only holds its own
 * worker; endpoints already failing are claimed after the others and hold at most three quarters of
 * the workers (`failingWorkersMax`), so hanging receivers never take them all. A worker reads the log
 * after the endpoint's cursor, passes over events its filters leave out, and sends the next one; the
 * cursor moves only once the receiver answered 2xx, so a crash at any point re-sends (never skips) an
 * event. A failure schedules the next attempt with jittered exponential backoff and gives the lease
 * up; failures lasting longer than the retry period disable the endpoint.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { EncodedEvent, EventFeed } from '../events/event.js';
import type { Clock } from '../service/clock.js';
import { retryDelayMs } from './retry-backoff.js';
import { signatureHeader } from './webhook-signature.js';
import type { SendResult, WebhookSender } from './webhook-sender.js';
import type { AttemptOutcome, NewAttempt, WebhookEndpoint, WebhookStore } from './webhook-store.js';

/** Node's default bound on an event target's listeners, kept as the floor. */
const ABORT_LISTENERS_DEFAULT_MAX = 10;

export type DelivererOptions = {
  /** Endpoints delivered at once by this instance at the most. */
  concurrency_max: number;
  retry_base_ms: number;
  retry_cap_ms: number;
  /** An endpoint failing for longer than this is disabled. */
  retry_period_s: number;
  /** How long a lease lasts; it is renewed before every send, so it must exceed the send timeout. */
  lease_ms: number;
  /** How often due endpoints are looked for when the log does not grow. */
  poll_interval_ms: number;
};

/** Events read from the log per step of a worker. */
const EVENTS_PER_READ = 100;
/** While the store fails, the failure of looking for due endpoints is logged at most this often. */
const FAILURE_LOG_INTERVAL_MS = 60_000;

export type DeliveryObserver = { attempted(outcome: AttemptOutcome): void };

/** Whether an event passes an endpoint's filters. */
export function matchesFilters(endpoint: Pick<WebhookEndpoint, 'types' | 'accounts'>, event: EncodedEvent): boolean {
  if (endpoint.types !== null && !endpoint.types.includes(event.type)) return false;
  return endpoint.accounts === null || event.accounts.some((account) => endpoint.accounts?.includes(account));
}

/** The secrets that sign now: the current one and, during a rotation, the previous one. */
export function signingSecrets(endpoint: Pick<WebhookEndpoint, 'secret' | 'previous_secret' | 'previous_secret_expires_at_ms'>, now_ms: number): string[] {
  const previous = endpoint.previous_secret !== null && (endpoint.previous_secret_expires_at_ms ?? 0) > now_ms ? [endpoint.previous_secret] : [];
  return [endpoint.secret, ...previous];
}

/** The Standard Webhooks request of one event to one endpoint. */
export function webhookRequest(endpoint: WebhookEndpoint, event: EncodedEvent, now_ms: number) {
  const timestamp_s = Math.floor(now_ms / 1000);
  return {
    url: endpoint.url,
    body: event.json,
    headers: {
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp_s),
      'webhook-signature': signatureHeader(signingSecrets(endpoint, now_ms), event.id, timestamp_s, event.json),
    },
  };
}

export class WebhookDeliverer {
  /** This instance's name in leases. */
  readonly owner: string;
  private readonly store: WebhookStore;
  private readonly feed: EventFeed;
  private readonly sender: WebhookSender;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly options: DelivererOptions;
  private readonly observer: DeliveryObserver | null;
  private readonly workers = new Map<string, Promise<void>>();
  /** The workers whose endpoint was failing when it was claimed (its last attempt failed). */
  private failing_workers = 0;
  private readonly aborter = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private stop_listening: (() => void) | null = null;
  private ticking = false;
  private tick_again = false;
  /**
   * Whether an endpoint was active at the last look (the poll's, or an admin's change). While none is, a
   * new event looks for nothing: the store is not asked at every group commit for endpoints it has not.
   */
  private any_active = true;
  /** Counts admins' changes, so that a poll's answer read before one does not undo it. */
  private changes_seen = 0;
  private stopped = false;
  private failure_logged_at_ms = Number.NEGATIVE_INFINITY;
  /** Numbers the claims: each claim's leases carry the token `<owner>/<claims>`. */
  private claims = 0;
  private failures_unlogged = 0;

  constructor(
    store: WebhookStore, feed: EventFeed, sender: WebhookSender, clock: Clock, logger: Logger, options: DelivererOptions,
    extra: { owner?: string; observer?: DeliveryObserver } = {},
  ) {
    this.store = store;
    this.feed = feed;
    this.sender = sender;
    this.clock = clock;
    this.logger = logger;
    this.options = options;
    this.owner = extra.owner ?? `deliverer-${randomBytes(8).toString('hex')}`;
    this.observer = extra.observer ?? null;
    // Every send in flight listens on the one signal that stop() aborts: up to concurrency_max of them,
    // which past Node's default of 10 printed a leak warning (to stderr, outside the log) that was none.
    setMaxListeners(Math.max(ABORT_LISTENERS_DEFAULT_MAX, 2 * options.concurrency_max), this.aborter.signal);
  }

  /** Starts delivering; leases this owner held before a restart (on SQLite, whose owner name is fixed) are ended first. */
  start(): void {
    this.logger.info({ owner: this.owner }, 'webhook deliverer started');
    void this.store.releaseLeasesOf(`${this.owner}/`)
      .catch((error: unknown) => this.tickFailed(error))
      .finally(() => {
        if (this.stopped) return;
        this.stop_listening = this.feed.onAdvance(() => this.eventsArrived());
        this.timer = setInterval(() => this.poll(), this.options.poll_interval_ms);
        this.timer.unref();
        this.poll();
      });
  }

  /** The workers delivering now, those held by endpoints that were failing when claimed, and the most there may be. */
  workerCounts(): { busy: number; failing: number; max: number } {
    return { busy: this.workers.size, failing: this.failing_workers, max: this.options.concurrency_max };
  }

  /** Stops leasing, cuts the sends in flight (their events are sent again later) and gives the leases up. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stop_listening?.();
    if (this.timer !== null) clearInterval(this.timer);
    this.aborter.abort();
    await Promise.allSettled([...this.workers.values()]);
  }

  /** Look for due endpoints now: an admin changed one (it may be active now). */
  wake(): void {
    this.any_active = true;
    this.changes_seen += 1;
    this.look();
  }

  /** Every `poll_interval_ms`: learns whether any endpoint is active (another instance may have added one), then looks. */
  private poll(): void {
    const changes_before = this.changes_seen;
    void this.store.hasActiveEndpoints()
      .then((active) => {
        if (this.changes_seen === changes_before) this.any_active = active;
      }, (error: unknown) => this.tickFailed(error))
      .finally(() => this.look());
  }

  /** The log grew: look for due endpoints, unless none was active at the last look. */
  private eventsArrived(): void {
    if (this.any_active) this.look();
  }

  private look(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.tick_again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((error: unknown) => this.tickFailed(error))
      .finally(() => {
        this.ticking = false;
        if (this.tick_again) {
          this.tick_again = false;
          this.look();
        }
      });
  }

  /** Logs the first failure and then at most one a minute (the poll runs 4 times a second). */
  private tickFailed(error: unknown): void {
    this.failures_unlogged += 1;
    const now = this.clock.now_ms();
    if (now - this.failure_logged_at_ms < FAILURE_LOG_INTERVAL_MS) return;
    this.logger.warn({ err: error, failures: this.failures_unlogged }, 'looking for due webhook endpoints failed; trying again at the next poll');
    this.failure_logged_at_ms = now;
    this.failures_unlogged = 0;
  }

  private async tick(): Promise<void> {
    const free = this.options.concurrency_max - this.workers.size;
    if (free <= 0) return;
    const now = this.clock.now_ms();
    this.claims += 1;
    const failing_room = failingWorkersMax(this.options.concurrency_max) - this.failing_workers;
    const claimed = await this.store.claimDue(`${this.owner}/${this.claims}`, now, now + this.options.lease_ms, this.feed.head(), free, failing_room);
    for (const endpoint of claimed) {
      // An endpoint still worked on here (its lease ended by an admin's change) waits for its worker to stop.
      if (this.workers.has(endpoint.id)) {
        await this.store.releaseLease(endpoint.id, endpoint.lease_owner as string);
        continue;
      }
      const failing = endpoint.failed_attempts > 0;
      if (failing) this.failing_workers += 1;
      const worker = this.work(endpoint)
        .catch((error: unknown) => this.logger.warn({ err: error, endpoint: endpoint.id }, 'delivering to a webhook endpoint failed; it is tried again at the next poll'))
        .finally(() => {
          if (failing) this.failing_workers -= 1;
          this.workers.delete(endpoint.id);
          if (!this.stopped) this.look();
        });
      this.workers.set(endpoint.id, worker);
    }
  }

  /** Delivers to one leased endpoint until it is caught up, fails, or the lease is lost; then gives the lease up. */
  private async work(leased: WebhookEndpoint): Promise<void> {
    let endpoint = leased;
    try {
      for (;;) {
        if (this.stopped) return;
        const next = await this.step(endpoint);
        if (next === null) return;
        endpoint = next;
      }
    } finally {
      await this.store.releaseLease(endpoint.id, leased.lease_owner as string).catch(() => undefined);
    }
  }

  /** One event (or a run of filtered-out events); the endpoint as it is after, or null when the worker is done. */
  private async step(endpoint: WebhookEndpoint): Promise<WebhookEndpoint | null> {
    let events: EncodedEvent[];
    try {
      events = await this.feed.read(endpoint.last_sequence, EVENTS_PER_READ);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'cursor_expired') throw error;
      this.logger.warn({ endpoint: endpoint.id }, 'webhook endpoint disabled: its next event is older than the retention; replay from a newer sequence');
      await this.change(endpoint, { status: 'disabled', disabled_reason: 'cursor_expired' });
      return null;
    }
    if (events.length === 0) return null;
    const event = events.find((candidate) => matchesFilters(endpoint, candidate));
    if (event === undefined) {
      const last = (events.at(-1) as EncodedEvent).sequence;
      return this.change(endpoint, { last_sequence: last });
    }
    // Renewing the lease before the send keeps it ours for longer than the send can take.
    const skipped = event.sequence - 1 > endpoint.last_sequence ? { last_sequence: event.sequence - 1 } : {};
    const held = await this.change(endpoint, skipped);
    if (held === null || this.stopped) return null;
    const result = await this.sender.send(webhookRequest(held, event, this.clock.now_ms()), this.aborter.signal);
    if (this.stopped && result.outcome !== 'delivered') return null;
    this.observer?.attempted(result.outcome);
    return result.outcome === 'delivered' ? this.succeeded(held, event, result) : this.failed(held, event, result);
  }

  private async succeeded(endpoint: WebhookEndpoint, event: EncodedEvent, result: SendResult): Promise<WebhookEndpoint | null> {
    const now = this.clock.now_ms();
    const changes = { last_sequence: event.sequence, failed_attempts: 0, failing_since_ms: null, next_attempt_at_ms: now };
    return this.change(endpoint, changes, attemptOf(endpoint, event, result, now, null));
  }

  /** Schedules the next attempt, or disables the endpoint once it has failed for the whole retry period; the worker stops. */
  private async failed(endpoint: WebhookEndpoint, event: EncodedEvent, result: SendResult): Promise<null> {
    const now = this.clock.now_ms();
    const failing_since_ms = endpoint.failing_since_ms ?? now;
    const failed_attempts = endpoint.failed_attempts + 1;
    const exhausted = now - failing_since_ms >= this.options.retry_period_s * 1000;
    const next_attempt_at_ms = now + retryDelayMs(failed_attempts, this.options.retry_base_ms, this.options.retry_cap_ms);
    const changes = exhausted
      ? { failed_attempts, failing_since_ms, status: 'disabled' as const, disabled_reason: 'retries_exhausted' }
      : { failed_attempts, failing_since_ms, next_attempt_at_ms };
    if (exhausted) this.logger.warn({ endpoint: endpoint.id, event: event.id }, 'webhook endpoint disabled: deliveries failed for the whole retry period');
    await this.change(endpoint, changes, attemptOf(endpoint, event, result, now, exhausted ? null : next_attempt_at_ms));
    return null;
  }

  /** Writes as the lease holder; null when the lease was lost (another instance took the endpoint over). */
  private async change(endpoint: WebhookEndpoint, changes: Partial<WebhookEndpoint>, attempt?: NewAttempt): Promise<WebhookEndpoint | null> {
    const now = this.clock.now_ms();
    const held = await this.store.updateLeased(endpoint.id, endpoint.lease_owner as string, now + this.options.lease_ms, changes, attempt);
    if (!held) {
      this.logger.info({ endpoint: endpoint.id }, 'webhook endpoint lease lost; another instance delivers it');
      return null;
    }
    return { ...endpoint, ...changes, updated_at_ms: now };
  }
}

export function attemptOf(endpoint: WebhookEndpoint, event: EncodedEvent, result: SendResult, now_ms: number, next_attempt_at_ms: number | null, origin: 'scheduled' | 'manual' = 'scheduled'): NewAttempt {
  return {
    endpoint_id: endpoint.id, event_id: event.id, sequence: event.sequence, outcome: result.outcome, response_status: result.response_status,
    latency_ms: result.latency_ms, error: result.error, attempted_at_ms: now_ms, next_attempt_at_ms, origin,
  };
}

/**
 * Workers that endpoints already failing may hold at once: three quarters of them (all, below four),
 * so that receivers that hang (each holding its worker for up to the send timeout) never take every
 * worker, and an endpoint that answers is not kept waiting behind them. Claims take endpoints that are
 * not failing first, too.
 */
export function failingWorkersMax(concurrency_max: number): number {
  return concurrency_max - Math.floor(concurrency_max / 4);
}
