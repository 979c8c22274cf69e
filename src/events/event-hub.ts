/**
 * The event hub: this instance's window on the ledger's event log. It keeps the newest events, encoded
 * once, in a bounded window that every stream, webhook deliverer and publisher near the head reads
 * from, so a thousand subscribers cost one store read per change. It learns that the log grew from
 * this instance's own commits (`changed()`), from the store's change signal (PostgreSQL LISTEN/NOTIFY,
 * for commits of other instances) and from a slow poll in case a signal was lost; older events are
 * read from the store on demand. Cursors whose next event is older than the retention are refused.
 *
 * The window is filled only while someone reads it. With no read for `window_idle_ms` (no stream
 * open, no webhook endpoint behind, no publisher), a change only moves the head forward (one read of
 * the store's head, or none when the change told the head) and empties the window; the next read goes
 * to the store, and the window fills again from then on. Reading and encoding every event that nobody
 * reads took a tenth of the service's time under batch submissions (issue 10's profiles).
 */
import type { Logger } from 'pino';
import { GoneError } from '../domain/shared/errors.js';
import type { TokenRegistry } from '../domain/shared/tokens.js';
import { unixSeconds, type Clock } from '../service/clock.js';
import { EVENT_READ_LIMIT_MAX, type LedgerStore } from '../service/ledger-store.js';
import { encodeEvent, type EncodedEvent, type EventFeed } from './event.js';
import { EventWindow } from './event-window.js';

/**
 * Something that calls back when another writer may have added events (e.g. LISTEN/NOTIFY), with the
 * log's head as of that write when it knows it (null when it does not: a reconnection, say).
 */
export type EventSignal = {
  start(on_change: (head: number | null) => void): Promise<void>;
  stop(): Promise<void>;
};

export type EventHubOptions = {
  /** A cursor whose next event occurred longer ago than this is refused with 410. */
  retention_s: number;
  /** Events kept encoded in memory, newest first out when the window is full. */
  window_events_max: number;
  /** How often the head is read from the store even when no signal came. */
  poll_interval_ms: number;
  /** After this long with no read, the window is no longer filled (until the next read). */
  window_idle_ms: number;
};

export const DEFAULT_EVENT_HUB_OPTIONS: EventHubOptions = { retention_s: 7 * 24 * 3600, window_events_max: 20_000, poll_interval_ms: 1000, window_idle_ms: 10_000 };

export class CursorExpiredError extends GoneError {
  constructor(after: number, occurred_at: number) {
    super('cursor_expired', `the event after ${after} occurred at ${occurred_at}, before the retention window; resume from a newer cursor`);
  }
}

export class EventHub implements EventFeed {
  private readonly store: LedgerStore;
  private readonly tokens: TokenRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly options: EventHubOptions;
  private readonly signal: EventSignal | null;
  /** The newest events, contiguous up to `loaded` (when not empty). */
  private readonly window: EventWindow;
  private loaded = 0;
  private readonly listeners = new Set<(head: number) => void>();
  private refreshing: Promise<void> | null = null;
  private refresh_again = false;
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;
  /** When `read` was last called (monotonic, `performance.now()`); none yet: the window is idle. */
  private last_read_ms = Number.NEGATIVE_INFINITY;
  /** The highest head any change has told of (never lowered: a head told is a head reached). */
  private announced_head = 0;
  /** Whether a change since the last refresh began told of no head: then only the store knows. */
  private head_unknown = false;

  constructor(store: LedgerStore, tokens: TokenRegistry, clock: Clock, logger: Logger, options: EventHubOptions, signal: EventSignal | null = null) {
    this.store = store;
    this.tokens = tokens;
    this.clock = clock;
    this.logger = logger;
    this.options = options;
    this.signal = signal;
    this.window = new EventWindow(options.window_events_max, 1);
  }

  /** Starts from the store's current head (events before it are read from the store when asked for). */
  async start(): Promise<void> {
    this.loaded = await this.store.eventHead();
    this.window.clear(this.loaded + 1);
    await this.signal?.start((head) => this.changed(head));
    this.poll = setInterval(() => this.changed(), this.options.poll_interval_ms);
    this.poll.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poll !== null) clearInterval(this.poll);
    this.poll = null;
    await this.signal?.stop();
    if (this.refreshing !== null) await this.refreshing;
    this.listeners.clear();
  }

  head(): number {
    return this.loaded;
  }

  onAdvance(listener: (head: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The log may have grown: load what is new into the window, then tell the listeners. Never runs twice
   * at once. `head`, when the caller knows it, is the log's head as of the change: a change that tells
   * of no head past what is loaded costs no store read (on PostgreSQL this instance's own commit is told
   * twice, by its writer and by its NOTIFY, which carries the head).
   */
  changed(head: number | null = null): void {
    if (this.stopped) return;
    if (head === null) this.head_unknown = true;
    else this.announced_head = Math.max(this.announced_head, head);
    this.startRefresh();
  }

  private startRefresh(): void {
    if (this.stopped) return;
    if (this.refreshing !== null) {
      this.refresh_again = true;
      return;
    }
    this.refreshing = this.refresh()
      .catch((error: unknown) => this.logger.warn({ err: error }, 'reading new events failed; will retry at the next change or poll'))
      .finally(() => {
        this.refreshing = null;
        if (this.refresh_again) {
          this.refresh_again = false;
          this.startRefresh();
        }
      });
  }

  async read(after: number, limit: number): Promise<EncodedEvent[]> {
    this.last_read_ms = performance.now();
    const count = Math.min(limit, EVENT_READ_LIMIT_MAX);
    const events = after + 1 >= this.window.start() ? this.window.after(after, count) : await this.readStored(after, count);
    const first = events[0];
    if (first !== undefined && first.occurred_at < unixSeconds(this.clock) - this.options.retention_s) {
      throw new CursorExpiredError(after, first.occurred_at);
    }
    return events;
  }

  private async readStored(after: number, limit: number): Promise<EncodedEvent[]> {
    // Never past what this hub has loaded, so that every reader sees the same head.
    const events = (await this.store.readEvents(after, limit)).map((event) => encodeEvent(event, this.tokens));
    return events.filter((event) => event.sequence <= this.loaded);
  }

  /** Takes in what the changes since the last refresh told; a refresh that fails leaves the head unknown, for the next change or poll to read. */
  private async refresh(): Promise<void> {
    const head_unknown = this.head_unknown;
    this.head_unknown = false;
    try {
      await this.loadNew(head_unknown ? null : this.announced_head);
    } catch (error) {
      if (head_unknown) this.head_unknown = true;
      throw error;
    }
  }

  /** Loads what is new past the loaded head; `announced_head` is the head the changes told of, null when one of them did not know it. */
  private async loadNew(announced_head: number | null): Promise<void> {
    if (announced_head !== null && announced_head <= this.loaded) return;
    if (performance.now() - this.last_read_ms > this.options.window_idle_ms) {
      return this.skipToHead(announced_head ?? await this.store.eventHead());
    }
    for (;;) {
      const events = await this.store.readEvents(this.loaded, EVENT_READ_LIMIT_MAX);
      if (events.length === 0) return;
      for (const event of events) this.window.append(encodeEvent(event, this.tokens));
      this.loaded = (events.at(-1) as { sequence: number }).sequence;
      for (const listener of this.listeners) listener(this.loaded);
      if (events.length < EVENT_READ_LIMIT_MAX) return;
    }
  }

  /** Nobody reads the window: move the head forward without reading the events, and empty the window (it stays contiguous up to the head). */
  private skipToHead(head: number): void {
    if (head <= this.loaded) return;
    this.window.clear(head + 1);
    this.loaded = head;
    for (const listener of this.listeners) listener(this.loaded);
  }
}
