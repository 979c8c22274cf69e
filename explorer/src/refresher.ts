/**
 * When a view loads what it shows again. While the tab's event stream is live, only when an event
 * that may change it arrives (and once when the stream becomes live, for what it may have missed);
 * otherwise by polling, as before the stream. Either way at most one load every
 * `refresh_interval_ms`, never two at once, and always one after the last relevant event. After a
 * failed load it tries again by the poll interval, and it waits out a 429's Retry-After. Pure of
 * the DOM and of Preact, so it is tested with fake timers.
 */
import type { LedgerEvent, LiveFeed, StreamMode } from './event-stream.js';

export const REFRESH_INTERVAL_MS = 500;

export type Outcome<T> = { data: T } | { error: unknown };

export type RefresherOptions<T> = {
  load(signal: AbortSignal): Promise<T>;
  /** Each load's outcome, in order (never after `stop`). */
  report(outcome: Outcome<T>): void;
  /** Milliseconds between polls while the stream is not live; null: what is shown is final (neither polled nor followed). */
  poll_ms(data: T | null): number | null;
  /** Whether `event` may change what is shown. */
  relevant(event: LedgerEvent, data: T | null): boolean;
  /** The tab's event stream; null: poll only. */
  stream: LiveFeed | null;
  /** When loading may resume after a 429 (0: now). */
  paused_until_ms?: () => number;
  refresh_interval_ms?: number;
};

export class Refresher<T> {
  private readonly options: RefresherOptions<T>;
  private readonly interval_ms: number;
  private readonly controller = new AbortController();
  private data: T | null = null;
  private failed = false;
  private loading = false;
  /** A refresh was asked for while loading: load again once this load is done. */
  private again = false;
  private last_start_ms = -Infinity;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timer_due_ms = Infinity;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  constructor(options: RefresherOptions<T>) {
    this.options = options;
    this.interval_ms = options.refresh_interval_ms ?? REFRESH_INTERVAL_MS;
  }

  /** Follows the stream (opening it if need be) and loads at once. */
  start(): void {
    this.follow();
    this.run();
  }

  /** Loads again soon (within the refresh interval). */
  refresh(): void {
    this.request();
  }

  stop(): void {
    this.stopped = true;
    this.controller.abort();
    this.clearTimer();
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private run(): void {
    if (this.stopped) return;
    this.clearTimer();
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    this.last_start_ms = Date.now();
    const done = (outcome: Outcome<T>) => {
      this.loading = false;
      if (this.stopped) return;
      if ('data' in outcome) this.data = outcome.data;
      this.failed = !('data' in outcome);
      this.options.report(outcome);
      this.follow();
      if (this.again) {
        this.again = false;
        this.request();
      } else {
        this.schedulePoll();
      }
    };
    let loading: Promise<T>;
    try {
      loading = this.options.load(this.controller.signal);
    } catch (error) {
      loading = Promise.reject(error);
    }
    loading.then((data) => done({ data }), (error: unknown) => done({ error }));
  }

  /** A load within the refresh interval of the last one (and after a 429's pause), unless one is due sooner. */
  private request(): void {
    if (this.stopped) return;
    if (this.loading) {
      this.again = true;
      return;
    }
    const earliest_ms = Math.max(this.last_start_ms + this.interval_ms, this.options.paused_until_ms?.() ?? 0);
    const now_ms = Date.now();
    if (earliest_ms <= now_ms) {
      this.run();
      return;
    }
    if (this.timer !== undefined && this.timer_due_ms <= earliest_ms) return;
    this.setTimer(earliest_ms - now_ms);
  }

  /** The next poll, when the stream does not bring the news (or the last load failed). */
  private schedulePoll(): void {
    this.clearTimer();
    const poll_ms = this.options.poll_ms(this.data);
    if (poll_ms === null && !this.failed) return;
    if (!this.failed && this.followed()) return;
    const wait_ms = Math.max(poll_ms ?? this.interval_ms * 4, (this.options.paused_until_ms?.() ?? 0) - Date.now());
    this.setTimer(wait_ms);
  }

  /** Whether the stream brings the news now: live, or paused with the tab hidden (nothing to poll for). */
  private followed(): boolean {
    const mode = this.unsubscribe === null ? null : this.options.stream?.mode();
    return mode === 'live' || mode === 'paused';
  }

  /** Subscribes to the stream while what is shown can still change; lets go once it is final. */
  private follow(): void {
    const stream = this.options.stream;
    if (stream === null) return;
    const following = this.options.poll_ms(this.data) !== null;
    if (following && this.unsubscribe === null) {
      this.unsubscribe = stream.subscribe({
        event: (event) => {
          if (this.options.relevant(event, this.data)) this.request();
        },
        mode: (mode) => this.onMode(mode),
      });
    } else if (!following && this.unsubscribe !== null) {
      this.unsubscribe();
      this.unsubscribe = null;
    }
  }

  private onMode(mode: StreamMode): void {
    if (this.stopped) return;
    if (mode === 'live') {
      // Whatever changed before the stream (re)opened came with no event: load once.
      this.request();
      return;
    }
    if (mode === 'paused') {
      this.clearTimer();
      return;
    }
    if (!this.loading && this.timer === undefined) this.schedulePoll();
  }

  private setTimer(wait_ms: number): void {
    this.clearTimer();
    this.timer_due_ms = Date.now() + wait_ms;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timer_due_ms = Infinity;
      this.run();
    }, wait_ms);
  }

  private clearTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timer_due_ms = Infinity;
  }
}
