/**
 * The tab's one event stream (`GET /api/events`), shared by every live view. It opens when the first
 * view subscribes, resumes with Last-Event-ID after a drop (no event lost, none twice), and closes when
 * no view has needed it for a while (the tab hidden, or no live view on screen) and on sign-out; it
 * then starts afresh from the head when needed again. When it cannot be opened or keeps failing
 * (refused, cut, or held back by a proxy that buffers it), its mode says `polling`: the views poll
 * instead, and the stream is tried again now and then. Pure of the DOM: `source` does the reading.
 */
import { ApiError, RateLimitedError, UnauthorizedError } from '@tabula/client';

export const LEDGER_EVENT_TYPES = ['transaction.accepted', 'transaction.confirmed', 'transaction.failed', 'block.sealed'] as const;
export type LedgerEventType = (typeof LEDGER_EVENT_TYPES)[number];

/** What the views use of a transaction event's record (the whole record is refetched through the API). */
export type TransactionEventData = { tx_hash: string; from: string; to: string; status: string };
/** What the views use of a `block.sealed` event's header. */
export type BlockEventData = { number: number; hash: string };

type EventBase = { id: string; sequence: number; occurred_at: number };
export type LedgerEvent =
  | (EventBase & { type: 'transaction.accepted' | 'transaction.confirmed' | 'transaction.failed'; data: TransactionEventData })
  | (EventBase & { type: 'block.sealed'; data: BlockEventData });

/**
 * `idle`: not needed yet; `connecting`: opening (or reopening after a drop); `live`: open and flowing;
 * `polling`: it keeps failing, the views poll; `paused`: closed while the tab is hidden.
 */
export type StreamMode = 'idle' | 'connecting' | 'live' | 'polling' | 'paused';

/** Told what one connection brings: any bytes at all (`activity`, heartbeats included) and each event. */
export type StreamSink = { activity(): void; event(event: LedgerEvent): void };

/**
 * Opens one connection, resuming after `last_event_id` (null: from the current head), and feeds `sink`
 * until the server ends the stream (resolves) or it fails (rejects: an ApiError for an error answer).
 */
export type StreamSource = (request: { last_event_id: string | null; signal: AbortSignal }, sink: StreamSink) => Promise<void>;

export type EventStreamLimits = {
  /** The wait before reopening after the first failure; doubled after each further one. */
  reconnect_base_ms: number;
  reconnect_max_ms: number;
  /** Failures in a row after which the mode is `polling`. */
  failures_before_polling: number;
  /** How often the stream is tried again while the views poll. */
  polling_retry_ms: number;
  /** An opened stream that sends nothing for this long is held back (a buffering proxy): a failure. */
  first_byte_timeout_ms: number;
  /** An open stream silent for this long (the server sends a heartbeat every 15 s) is dead: a drop. */
  stall_timeout_ms: number;
  /** A stream that stayed open this long counts as working again: the failures in a row start over. */
  healthy_after_ms: number;
  /** How long the stream stays open once no view needs it (hidden tab, no live view). */
  linger_ms: number;
};

export const DEFAULT_EVENT_STREAM_LIMITS: EventStreamLimits = {
  reconnect_base_ms: 1000,
  reconnect_max_ms: 30_000,
  failures_before_polling: 3,
  polling_retry_ms: 60_000,
  first_byte_timeout_ms: 5000,
  stall_timeout_ms: 45_000,
  healthy_after_ms: 10_000,
  linger_ms: 60_000,
};

/** What a view gets: the events, and the mode as it changes. */
export type StreamListener = { event?(event: LedgerEvent): void; mode?(mode: StreamMode): void };

/** What the views need of the stream (so that tests can hand them a fake). */
export type LiveFeed = {
  mode(): StreamMode;
  /** Registers a view that needs the stream (opening it if need be); returns the function that lets go. */
  subscribe(listener: StreamListener): () => void;
};

export type EventStreamOptions = {
  source: StreamSource;
  /** Told of a failure that concerns the whole page (401: sign-out; 429: the rate-limit banner). */
  onError?: (error: unknown) => void;
  limits?: Partial<EventStreamLimits>;
};

type Connection = { controller: AbortController; opened_at_ms: number | null; watchdog: ReturnType<typeof setTimeout> | undefined };

export class EventStream implements LiveFeed {
  private readonly source: StreamSource;
  private readonly on_error: (error: unknown) => void;
  private readonly limits: EventStreamLimits;
  private readonly listeners = new Set<StreamListener>();
  private readonly mode_watchers = new Set<(mode: StreamMode) => void>();
  private current_mode: StreamMode = 'idle';
  private connection: Connection | null = null;
  private last_event_id: string | null = null;
  private failures = 0;
  private visible = true;
  private closed = false;
  private retry_timer: ReturnType<typeof setTimeout> | undefined;
  private linger_timer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: EventStreamOptions) {
    this.source = options.source;
    this.on_error = options.onError ?? (() => undefined);
    this.limits = { ...DEFAULT_EVENT_STREAM_LIMITS, ...options.limits };
  }

  mode(): StreamMode {
    return this.current_mode;
  }

  subscribe(listener: StreamListener): () => void {
    this.listeners.add(listener);
    this.update();
    return () => {
      if (!this.listeners.delete(listener)) return;
      this.update();
    };
  }

  /** Follows the mode without needing the stream (e.g. the indicator); returns the function that stops. */
  watchMode(watcher: (mode: StreamMode) => void): () => void {
    this.mode_watchers.add(watcher);
    return () => this.mode_watchers.delete(watcher);
  }

  /** The tab was shown or hidden: hidden for `linger_ms`, the stream closes; shown, it opens again. */
  setVisible(visible: boolean): void {
    this.visible = visible;
    this.update();
  }

  /** Closes the stream for good (sign-out): nothing opens it again. */
  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.disconnect();
    this.setMode('idle');
  }

  private needed(): boolean {
    return !this.closed && this.visible && this.listeners.size > 0;
  }

  /** Opens, keeps or (after lingering) closes the stream, as the views and the tab's visibility need. */
  private update(): void {
    if (this.closed) return;
    if (this.needed()) {
      clearTimeout(this.linger_timer);
      this.linger_timer = undefined;
      if (this.connection === null && this.retry_timer === undefined) this.connect();
      return;
    }
    const open = this.connection !== null || this.retry_timer !== undefined;
    if (!open) {
      this.setMode(this.listeners.size > 0 ? 'paused' : 'idle');
      return;
    }
    if (this.linger_timer !== undefined) return;
    this.linger_timer = setTimeout(() => {
      this.linger_timer = undefined;
      if (this.needed()) return;
      this.disconnect();
      // Back later, it starts from the head and the views load once: cheaper than replaying what was missed.
      this.last_event_id = null;
      this.failures = 0;
      this.setMode(this.listeners.size > 0 ? 'paused' : 'idle');
    }, this.limits.linger_ms);
  }

  private connect(): void {
    const connection: Connection = { controller: new AbortController(), opened_at_ms: null, watchdog: undefined };
    this.connection = connection;
    if (this.current_mode !== 'polling') this.setMode('connecting');
    this.watch(connection, this.limits.first_byte_timeout_ms);
    const sink: StreamSink = {
      activity: () => this.onActivity(connection),
      event: (event) => this.onEvent(connection, event),
    };
    let outcome: Promise<void>;
    try {
      outcome = this.source({ last_event_id: this.last_event_id, signal: connection.controller.signal }, sink);
    } catch (error) {
      outcome = Promise.reject(error);
    }
    outcome.then(() => this.onEnd(connection, null), (error: unknown) => this.onEnd(connection, error ?? new Error('the stream failed')));
  }

  /** Aborts `connection` as stalled when nothing arrives within `timeout_ms`. */
  private watch(connection: Connection, timeout_ms: number): void {
    clearTimeout(connection.watchdog);
    connection.watchdog = setTimeout(() => connection.controller.abort(new StreamStalledError(timeout_ms)), timeout_ms);
  }

  private onActivity(connection: Connection): void {
    if (connection !== this.connection) return;
    this.watch(connection, this.limits.stall_timeout_ms);
    if (connection.opened_at_ms !== null) return;
    connection.opened_at_ms = Date.now();
    this.setMode('live');
  }

  private onEvent(connection: Connection, event: LedgerEvent): void {
    if (connection !== this.connection) return;
    this.onActivity(connection);
    this.last_event_id = event.id;
    for (const listener of [...this.listeners]) {
      try {
        listener.event?.(event);
      } catch (error) {
        // One view's mistake must not cost the others their events.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  /** The connection ended (`error` null: the server closed it): reopen, after a wait that grows with failures. */
  private onEnd(connection: Connection, error: unknown): void {
    clearTimeout(connection.watchdog);
    if (connection !== this.connection) return; // closed on purpose
    this.connection = null;
    const stalled = connection.controller.signal.reason;
    const failure = stalled instanceof StreamStalledError ? stalled : error;
    const opened_at_ms = connection.opened_at_ms;
    if (opened_at_ms !== null && Date.now() - opened_at_ms >= this.limits.healthy_after_ms) this.failures = 0;
    const delay_ms = this.afterFailure(failure);
    if (delay_ms === null) return;
    this.setMode(this.failures >= this.limits.failures_before_polling ? 'polling' : 'connecting');
    this.retry_timer = setTimeout(() => {
      this.retry_timer = undefined;
      if (this.needed()) this.connect();
      else this.update();
    }, delay_ms);
  }

  /** Counts the failure and says how long to wait before reopening (null: do not). */
  private afterFailure(error: unknown): number | null {
    this.failures += 1;
    if (error instanceof UnauthorizedError) {
      // The page signs out; a stream with this token will not open again.
      this.on_error(error);
      this.setMode('polling');
      return null;
    }
    if (error instanceof ApiError && (error.code === 'invalid_event_cursor' || error.code === 'cursor_expired')) {
      // The event after the last one seen is gone (retention) or unknown here: start from the head.
      this.last_event_id = null;
    }
    let delay_ms = this.failures >= this.limits.failures_before_polling
      ? this.limits.polling_retry_ms
      : Math.min(this.limits.reconnect_max_ms, this.limits.reconnect_base_ms * 2 ** (this.failures - 1));
    if (error instanceof RateLimitedError) this.on_error(error);
    if (error instanceof ApiError && error.code === 'too_many_streams') {
      this.failures = Math.max(this.failures, this.limits.failures_before_polling);
      delay_ms = this.limits.polling_retry_ms;
    }
    if (error instanceof ApiError && error.retry_after_ms !== null) delay_ms = Math.max(delay_ms, error.retry_after_ms);
    return delay_ms;
  }

  private disconnect(): void {
    clearTimeout(this.retry_timer);
    clearTimeout(this.linger_timer);
    this.retry_timer = undefined;
    this.linger_timer = undefined;
    const connection = this.connection;
    this.connection = null;
    if (connection === null) return;
    clearTimeout(connection.watchdog);
    connection.controller.abort(new StreamClosedError());
  }

  private setMode(mode: StreamMode): void {
    if (mode === this.current_mode) return;
    this.current_mode = mode;
    for (const listener of [...this.listeners]) listener.mode?.(mode);
    for (const watcher of [...this.mode_watchers]) watcher(mode);
  }
}

/** Nothing arrived on an open stream for too long. */
export class StreamStalledError extends Error {
  constructor(timeout_ms: number) {
    super(`the event stream sent nothing for ${timeout_ms} ms`);
    this.name = 'StreamStalledError';
  }
}

/** The page closed the stream (sign-out, hidden tab, no live view). */
export class StreamClosedError extends Error {
  constructor() {
    super('the event stream was closed by the page');
    this.name = 'StreamClosedError';
  }
}

/** An event object from its JSON, or null for one the explorer does not know (a newer type) or cannot read. */
export function parseLedgerEvent(json: string): LedgerEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const event = value as Record<string, unknown>;
  const data = event.data as Record<string, unknown> | null | undefined;
  if (typeof event.id !== 'string' || typeof event.sequence !== 'number' || typeof data !== 'object' || data === null) return null;
  const base: EventBase = { id: event.id, sequence: event.sequence, occurred_at: typeof event.occurred_at === 'number' ? event.occurred_at : 0 };
  if (event.type === 'block.sealed') {
    if (typeof data.number !== 'number' || typeof data.hash !== 'string') return null;
    return { ...base, type: 'block.sealed', data: { number: data.number, hash: data.hash } };
  }
  if (event.type !== 'transaction.accepted' && event.type !== 'transaction.confirmed' && event.type !== 'transaction.failed') return null;
  if (typeof data.tx_hash !== 'string' || typeof data.from !== 'string' || typeof data.to !== 'string') return null;
  return { ...base, type: event.type, data: { tx_hash: data.tx_hash, from: data.from, to: data.to, status: String(data.status ?? '') } };
}
