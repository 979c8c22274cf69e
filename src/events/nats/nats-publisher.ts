/**
 * The NATS publisher: sends every event of the log, in sequence order, to a JetStream stream. Only
 * the holder of the publisher lease publishes (on SQLite the process is alone and always holds it).
 * Each session connects, reads the last event the stream holds and resumes right after it, then
 * publishes one event at a time, waiting for each PubAck before the next, so the stream never skips
 * and never reorders; a retry after a crash or a lost PubAck is stored once (`Nats-Msg-Id`).
 *
 * NATS being away never touches the ledger: the publisher only reads the event feed. It retries with
 * backoff, logs at most once a minute (with the count of failures), and catches up when NATS returns;
 * the lag (events behind the head) is on `/metrics`.
 */
import type { Logger } from 'pino';
import { assert } from '../../domain/shared/errors.js';
import type { SealerLease } from '../../service/sealer-lease.js';
import type { EventFeed } from '../event.js';
import { JetStreamTarget, type JetStreamSettings } from './jetstream-target.js';

/** The lease that elects the one publishing instance (the sealer lease's interface, on its own lock). */
export type PublisherLease = SealerLease;

export type NatsPublisherOptions = {
  /** Events read from the feed at once. */
  batch_events_max: number;
  /** The first retry after a failure waits this long; each further one twice as long, up to `retry_max_ms`. */
  retry_base_ms: number;
  retry_max_ms: number;
  /** How often the lease is asked for (by a non-holder) or confirmed (by the holder). */
  lease_interval_ms: number;
  /** Failures are logged at most once per this interval. */
  failure_log_interval_ms: number;
  connect_timeout_ms: number;
  request_timeout_ms: number;
};

export const DEFAULT_NATS_PUBLISHER_OPTIONS: NatsPublisherOptions = {
  batch_events_max: 500,
  retry_base_ms: 250,
  retry_max_ms: 5000,
  lease_interval_ms: 1000,
  failure_log_interval_ms: 60_000,
  connect_timeout_ms: 2000,
  request_timeout_ms: 5000,
};

export class NatsPublisher {
  private readonly feed: EventFeed;
  private readonly lease: PublisherLease;
  private readonly settings: JetStreamSettings;
  private readonly logger: Logger;
  private readonly options: NatsPublisherOptions;
  /** The last sequence the stream is known to hold (0 until a session has read it). */
  private published = 0;
  private leading = false;
  private stopped = false;
  private running: Promise<void> | null = null;
  private target: JetStreamTarget | null = null;
  /** Ends the current wait: `on_advance` says whether a new event may end it (a backoff may not). */
  private waiting: { done: () => void; on_advance: boolean } | null = null;
  private consecutive_failures = 0;
  private failures_unlogged = 0;
  private last_failure_log_ms = Number.NEGATIVE_INFINITY;

  constructor(feed: EventFeed, lease: PublisherLease, settings: { servers: readonly string[]; stream: string; subject_prefix: string }, logger: Logger, options: Partial<NatsPublisherOptions> = {}) {
    this.feed = feed;
    this.lease = lease;
    this.options = { ...DEFAULT_NATS_PUBLISHER_OPTIONS, ...options };
    this.settings = { ...settings, connect_timeout_ms: this.options.connect_timeout_ms, request_timeout_ms: this.options.request_timeout_ms };
    this.logger = logger.child({ component: 'nats-publisher', stream: settings.stream });
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Events this instance knows to be behind the head (0 when another instance publishes). */
  lag(): number {
    return this.leading ? Math.max(0, this.feed.head() - this.published) : 0;
  }

  /** Whether this instance holds the publisher lease. */
  active(): boolean {
    return this.leading;
  }

  /** Stops publishing (an unanswered publish is abandoned: the next publisher resumes from the stream) and gives the lease up. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.waiting?.done();
    await this.target?.close();
    await this.running;
    await this.lease.release().catch(() => undefined);
    this.leading = false;
  }

  private async run(): Promise<void> {
    const stop_listening = this.feed.onAdvance(() => {
      if (this.waiting?.on_advance === true) this.waiting.done();
    });
    try {
      while (!this.stopped) {
        if (!(await this.holdLease())) {
          await this.sleep(this.options.lease_interval_ms, false);
          continue;
        }
        try {
          await this.session();
        } catch (error) {
          if (this.stopped) break;
          this.failed(error);
          await this.sleep(this.backoffMs(), false);
        }
      }
    } finally {
      stop_listening();
    }
  }

  /** One connection's worth of publishing: resumes from the stream, returns when the lease is lost or on stop. */
  private async session(): Promise<void> {
    this.target = await JetStreamTarget.open(this.settings);
    try {
      let cursor = await this.target.lastSequence();
      this.published = cursor;
      this.recovered(cursor);
      let lease_checked_ms = Date.now();
      while (!this.stopped) {
        if (Date.now() - lease_checked_ms >= this.options.lease_interval_ms) {
          if (!(await this.holdLease())) return;
          lease_checked_ms = Date.now();
        }
        const events = await this.feed.read(cursor, this.options.batch_events_max);
        if (events.length === 0) {
          await this.sleep(this.options.lease_interval_ms, true);
          continue;
        }
        for (const event of events) {
          if (this.stopped || !this.lease.held()) return;
          assert(event.sequence === cursor + 1, `the event feed skipped from ${cursor} to ${event.sequence}`);
          await this.target.publish(event);
          cursor = event.sequence;
          this.published = cursor;
        }
      }
    } finally {
      await this.target.close();
      this.target = null;
    }
  }

  /** Asks for (or confirms) the lease; a failure to ask counts as not holding it. Logs every change of hands. */
  private async holdLease(): Promise<boolean> {
    let held: boolean;
    try {
      held = await this.lease.acquire();
    } catch (error) {
      this.logger.warn({ err: error }, 'cannot ask for the events publisher lease; will retry');
      held = false;
    }
    if (held && !this.leading) this.logger.info('events publisher lease acquired: this instance publishes events to NATS');
    if (!held && this.leading) this.logger.warn('events publisher lease lost: another instance may publish events to NATS');
    this.leading = held;
    return held;
  }

  /** Counts a failure; logs the first at once and then at most once per interval, with how many it stands for. */
  private failed(error: unknown): void {
    this.consecutive_failures += 1;
    this.failures_unlogged += 1;
    const now = Date.now();
    if (now - this.last_failure_log_ms < this.options.failure_log_interval_ms) return;
    this.logger.warn(
      { err: error, failures: this.failures_unlogged, lag: this.lag(), retry_in_ms: this.backoffMs() },
      'publishing events to NATS failed; retrying with backoff (the ledger is not affected)',
    );
    this.failures_unlogged = 0;
    this.last_failure_log_ms = now;
  }

  private recovered(cursor: number): void {
    if (this.consecutive_failures > 0) {
      this.logger.info({ failures: this.consecutive_failures, resume_after: cursor, lag: this.lag() }, 'NATS answers again: publishing events resumes');
    } else {
      this.logger.info({ resume_after: cursor }, 'publishing events to NATS');
    }
    this.consecutive_failures = 0;
    this.failures_unlogged = 0;
    this.last_failure_log_ms = Number.NEGATIVE_INFINITY;
  }

  private backoffMs(): number {
    const exponent = Math.min(Math.max(this.consecutive_failures - 1, 0), 16);
    return Math.min(this.options.retry_max_ms, this.options.retry_base_ms * 2 ** exponent);
  }

  /** Waits `ms`, or less when the publisher stops (or, with `on_advance`, when the feed advances). */
  private sleep(ms: number, on_advance: boolean): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting = { done, on_advance };
    });
  }
}
