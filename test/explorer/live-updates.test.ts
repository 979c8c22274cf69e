/**
 * How the explorer's live views stay current, without a browser and on fake timers: the tab's one
 * event stream (lazy, shared, resumed with Last-Event-ID, closed when not needed, falling back to
 * polling when it cannot be opened or keeps failing), the refresher that loads a view again on a
 * relevant event (at most once per 500 ms) or polls when the stream is not live, the fetch-based
 * SSE reader, and which events concern which view.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateLimitedError, ServerError, UnauthorizedError, ApiError, NetworkError } from '@tabula/client';
import {
  DEFAULT_EVENT_STREAM_LIMITS, EventStream, parseLedgerEvent, StreamStalledError,
  type LedgerEvent, type LiveFeed, type StreamListener, type StreamMode, type StreamSink,
} from '../../explorer/src/event-stream.js';
import { changesBalance, concernsTransaction, isBlockSealed, sealsBlock, touchesAccount } from '../../explorer/src/live-events.js';
import { Refresher, REFRESH_INTERVAL_MS, type Outcome } from '../../explorer/src/refresher.js';
import { sseSource } from '../../explorer/src/sse-source.js';

const HASH = `0x${'ab'.repeat(32)}`;
const OTHER_HASH = `0x${'cd'.repeat(32)}`;
const LIMITS = DEFAULT_EVENT_STREAM_LIMITS;

function blockSealed(sequence: number, number = sequence): LedgerEvent {
  return { id: `evt_${sequence}_${'0'.repeat(12)}`, sequence, occurred_at: 0, type: 'block.sealed', data: { number, hash: HASH } };
}

function transactionEvent(sequence: number, type: 'transaction.accepted' | 'transaction.confirmed' | 'transaction.failed', tx: { tx_hash?: string; from?: string; to?: string } = {}): LedgerEvent {
  return {
    id: `evt_${sequence}_${'1'.repeat(12)}`, sequence, occurred_at: 0, type,
    data: { tx_hash: tx.tx_hash ?? HASH, from: tx.from ?? 'alice', to: tx.to ?? 'bob', status: type === 'transaction.accepted' ? 'pending' : 'confirmed' },
  };
}

/** A stream source the test drives: each connection, its request and sink, ended at will. */
class FakeSource {
  readonly connections: { last_event_id: string | null; signal: AbortSignal; sink: StreamSink; end(): void; fail(error: unknown): void }[] = [];
  readonly source = ({ last_event_id, signal }: { last_event_id: string | null; signal: AbortSignal }, sink: StreamSink) => new Promise<void>((resolve, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason));
    this.connections.push({ last_event_id, signal, sink, end: resolve, fail: reject });
  });

  last() {
    const connection = this.connections.at(-1);
    if (connection === undefined) throw new Error('no connection was opened');
    return connection;
  }

  /** The last connection opens (its first bytes arrive). */
  open() {
    this.last().sink.activity();
  }
}

function problem(status: number, code: string) {
  return { type: 'about:blank', title: code, status, detail: code, code };
}

describe('the event stream of a tab', () => {
  let source: FakeSource;
  let errors: unknown[];
  let stream: EventStream;
  let modes: StreamMode[];

  beforeEach(() => {
    vi.useFakeTimers();
    source = new FakeSource();
    errors = [];
    modes = [];
    stream = new EventStream({ source: source.source, onError: (error) => errors.push(error) });
    stream.watchMode((mode) => modes.push(mode));
  });
  afterEach(() => {
    stream.close();
    vi.useRealTimers();
  });

  it('opens lazily, once for every view, and hands each view every event', async () => {
    expect(stream.mode()).toBe('idle');
    expect(source.connections).toHaveLength(0);
    const first: LedgerEvent[] = [];
    const second: LedgerEvent[] = [];
    stream.subscribe({ event: (event) => first.push(event) });
    stream.subscribe({ event: (event) => second.push(event) });
    expect(source.connections).toHaveLength(1);
    expect(source.last().last_event_id).toBeNull();
    expect(stream.mode()).toBe('connecting');
    source.open();
    expect(stream.mode()).toBe('live');
    source.last().sink.event(blockSealed(1));
    source.last().sink.event(blockSealed(2));
    expect(first.map((event) => event.sequence)).toEqual([1, 2]);
    expect(second).toEqual(first);
    expect(source.connections).toHaveLength(1);
    expect(modes).toEqual(['connecting', 'live']);
  });

  it('resumes after a drop from the last event it saw (Last-Event-ID), after a short wait', async () => {
    stream.subscribe({});
    source.open();
    source.last().sink.event(blockSealed(7));
    source.last().fail(new NetworkError('connection reset'));
    await vi.advanceTimersByTimeAsync(0);
    expect(stream.mode()).toBe('connecting');
    await vi.advanceTimersByTimeAsync(LIMITS.reconnect_base_ms - 1);
    expect(source.connections).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(source.connections).toHaveLength(2);
    expect(source.last().last_event_id).toBe(blockSealed(7).id);
    source.open();
    expect(stream.mode()).toBe('live');
    // The server ending a healthy stream (e.g. "disconnected: slow consumer") is a drop too.
    await vi.advanceTimersByTimeAsync(LIMITS.healthy_after_ms);
    source.last().end();
    await vi.advanceTimersByTimeAsync(LIMITS.reconnect_base_ms);
    expect(source.connections).toHaveLength(3);
    expect(source.last().last_event_id).toBe(blockSealed(7).id);
  });

  it('falls back to polling when it cannot be opened, waiting longer after each failure, and tries again now and then', async () => {
    stream.subscribe({});
    for (let failure = 1; failure <= LIMITS.failures_before_polling; failure += 1) {
      source.last().fail(new ServerError(problem(502, 'unexpected_status')));
      await vi.advanceTimersByTimeAsync(0);
      if (failure < LIMITS.failures_before_polling) {
        expect(stream.mode()).toBe('connecting');
        await vi.advanceTimersByTimeAsync(LIMITS.reconnect_base_ms * 2 ** (failure - 1));
        expect(source.connections).toHaveLength(failure + 1);
      }
    }
    expect(stream.mode()).toBe('polling');
    await vi.advanceTimersByTimeAsync(LIMITS.polling_retry_ms - 1);
    expect(source.connections).toHaveLength(LIMITS.failures_before_polling);
    await vi.advanceTimersByTimeAsync(1);
    expect(source.connections).toHaveLength(LIMITS.failures_before_polling + 1);
    // Still polling while it tries; live once it flows.
    expect(stream.mode()).toBe('polling');
    source.open();
    expect(stream.mode()).toBe('live');
    expect(modes).toEqual(['connecting', 'polling', 'live']);
  });

  it('counts a stream held back by a proxy (nothing within the first-byte timeout) as a failure', async () => {
    stream.subscribe({});
    const held = source.last();
    await vi.advanceTimersByTimeAsync(LIMITS.first_byte_timeout_ms);
    expect(held.signal.aborted).toBe(true);
    expect(held.signal.reason).toBeInstanceOf(StreamStalledError);
    await vi.advanceTimersByTimeAsync(LIMITS.reconnect_base_ms);
    expect(source.connections).toHaveLength(2);
  });

  it('counts a stream cut again and again right after opening as failing, and one open long enough as working', async () => {
    stream.subscribe({});
    for (let cut = 1; cut <= LIMITS.failures_before_polling; cut += 1) {
      source.open();
      source.last().end();
      await vi.advanceTimersByTimeAsync(0);
      if (cut < LIMITS.failures_before_polling) await vi.advanceTimersByTimeAsync(LIMITS.reconnect_base_ms * 2 ** (cut - 1));
    }
    expect(stream.mode()).toBe('polling');
    await vi.advanceTimersByTimeAsync(LIMITS.polling_retry_ms);
    source.open();
    await vi.advanceTimersByTimeAsync(LIMITS.healthy_after_ms);
    source.last().end();
    await vi.advanceTimersByTimeAsync(0);
    expect(stream.mode()).toBe('connecting');
  });

  it('reopens a live stream that went silent past the heartbeat (stalled), from its last event', async () => {
    stream.subscribe({});
    source.open();
    source.last().sink.event(blockSealed(3));
    await vi.advanceTimersByTimeAsync(LIMITS.stall_timeout_ms - 1);
    source.last().sink.activity(); // a heartbeat
    await vi.advanceTimersByTimeAsync(LIMITS.stall_timeout_ms - 1);
    expect(source.last().signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(source.last().signal.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(LIMITS.reconnect_base_ms);
    expect(source.connections).toHaveLength(2);
    expect(source.last().last_event_id).toBe(blockSealed(3).id);
  });

  it('closes while the tab is hidden for long, then starts afresh from the head when shown', async () => {
    stream.subscribe({});
    source.open();
    source.last().sink.event(blockSealed(4));
    // The server's heartbeats keep the stream open meanwhile.
    const wait = async (ms: number) => {
      for (let waited = 0; waited < ms; waited += 1000) {
        await vi.advanceTimersByTimeAsync(Math.min(1000, ms - waited));
        if (!source.last().signal.aborted) source.last().sink.activity();
      }
    };
    stream.setVisible(false);
    await wait(LIMITS.linger_ms - 1);
    expect(source.last().signal.aborted).toBe(false);
    stream.setVisible(true);
    stream.setVisible(false);
    await wait(LIMITS.linger_ms);
    expect(source.last().signal.aborted).toBe(true);
    expect(source.connections).toHaveLength(1);
    expect(stream.mode()).toBe('paused');
    stream.setVisible(true);
    expect(source.connections).toHaveLength(2);
    expect(source.last().last_event_id).toBeNull();
  });

  it('closes a while after the last view lets go, and on sign-out for good', async () => {
    const release = stream.subscribe({});
    source.open();
    release();
    release();
    await vi.advanceTimersByTimeAsync(LIMITS.linger_ms);
    expect(source.last().signal.aborted).toBe(true);
    expect(stream.mode()).toBe('idle');
    stream.subscribe({});
    expect(source.connections).toHaveLength(2);
    stream.close();
    expect(source.last().signal.aborted).toBe(true);
    stream.subscribe({});
    await vi.advanceTimersByTimeAsync(LIMITS.polling_retry_ms);
    expect(source.connections).toHaveLength(2);
    expect(stream.mode()).toBe('idle');
  });

  it('reports a refused token to the page and does not try again with it', async () => {
    stream.subscribe({});
    const refused = new UnauthorizedError(problem(401, 'invalid_token'));
    source.last().fail(refused);
    await vi.advanceTimersByTimeAsync(LIMITS.polling_retry_ms);
    expect(errors).toEqual([refused]);
    expect(source.connections).toHaveLength(1);
    expect(stream.mode()).toBe('polling');
  });

  it('waits out a 429 (reported to the page), starts from the head after 410 cursor_expired, and polls at once on too_many_streams', async () => {
    stream.subscribe({});
    source.open();
    source.last().sink.event(blockSealed(9));
    const limited = new RateLimitedError(problem(429, 'rate_limited'), 20_000);
    source.last().fail(limited);
    await vi.advanceTimersByTimeAsync(20_000 - 1);
    expect(source.connections).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(errors).toEqual([limited]);
    expect(source.connections).toHaveLength(2);
    expect(source.last().last_event_id).toBe(blockSealed(9).id);

    source.last().fail(new ApiError(problem(410, 'cursor_expired')));
    await vi.advanceTimersByTimeAsync(LIMITS.reconnect_base_ms * 2);
    expect(source.connections).toHaveLength(3);
    expect(source.last().last_event_id).toBeNull();

    source.last().fail(new ServerError(problem(503, 'too_many_streams'), 5000));
    await vi.advanceTimersByTimeAsync(0);
    expect(stream.mode()).toBe('polling');
    await vi.advanceTimersByTimeAsync(LIMITS.polling_retry_ms);
    expect(source.connections).toHaveLength(4);
  });

  it('keeps handing events to the other views when one view throws', async () => {
    const seen: number[] = [];
    const thrown: unknown[] = [];
    const original = globalThis.queueMicrotask;
    globalThis.queueMicrotask = (callback) => original(() => {
      try {
        callback();
      } catch (error) {
        thrown.push(error);
      }
    });
    try {
      stream.subscribe({ event: () => { throw new Error('a view broke'); } });
      stream.subscribe({ event: (event) => seen.push(event.sequence) });
      source.open();
      source.last().sink.event(blockSealed(1));
      await vi.advanceTimersByTimeAsync(0);
      expect(seen).toEqual([1]);
      expect(thrown).toHaveLength(1);
    } finally {
      globalThis.queueMicrotask = original;
    }
  });
});

/** A stream whose mode and events the test sets, counting its subscribers. */
class FakeFeed implements LiveFeed {
  private current: StreamMode = 'idle';
  readonly listeners = new Set<StreamListener>();
  mode() {
    return this.current;
  }
  subscribe(listener: StreamListener) {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }
  set(mode: StreamMode) {
    this.current = mode;
    for (const listener of [...this.listeners]) listener.mode?.(mode);
  }
  emit(event: LedgerEvent) {
    for (const listener of [...this.listeners]) listener.event?.(event);
  }
}

describe('a live view', () => {
  const POLL_MS = 2000;
  let feed: FakeFeed;
  let loads: number;
  let outcomes: Outcome<number>[];
  let refresher: Refresher<number>;
  let result: () => Promise<number>;
  let final: (data: number | null) => boolean;
  let paused_until_ms: number;

  function start(options: { load_ms?: number } = {}) {
    refresher = new Refresher<number>({
      load: async () => {
        loads += 1;
        if (options.load_ms !== undefined) await new Promise((resolve) => setTimeout(resolve, options.load_ms));
        return result();
      },
      report: (outcome) => outcomes.push(outcome),
      poll_ms: (data) => (final(data) ? null : POLL_MS),
      relevant: (event) => event.type === 'block.sealed',
      stream: feed,
      paused_until_ms: () => paused_until_ms,
    });
    refresher.start();
  }

  beforeEach(() => {
    vi.useFakeTimers();
    feed = new FakeFeed();
    loads = 0;
    outcomes = [];
    result = async () => loads;
    final = () => false;
    paused_until_ms = 0;
  });
  afterEach(() => {
    refresher.stop();
    vi.useRealTimers();
  });

  it('loads once and then only on a relevant event while the stream is live: no polling', async () => {
    feed.set('live');
    start();
    await vi.advanceTimersByTimeAsync(0);
    expect(loads).toBe(1);
    expect(feed.listeners.size).toBe(1);
    await vi.advanceTimersByTimeAsync(10 * POLL_MS);
    expect(loads).toBe(1);
    feed.emit(transactionEvent(1, 'transaction.accepted'));
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(loads).toBe(1);
    feed.emit(blockSealed(2));
    await vi.advanceTimersByTimeAsync(0);
    expect(loads).toBe(2);
    expect(outcomes.at(-1)).toEqual({ data: 2 });
  });

  it(`costs at most one load per ${REFRESH_INTERVAL_MS} ms for a burst of events, and always one after the last`, async () => {
    feed.set('live');
    start();
    await vi.advanceTimersByTimeAsync(REFRESH_INTERVAL_MS);
    const starts: number[] = [];
    result = async () => {
      starts.push(Date.now());
      return loads;
    };
    // 100 blocks in 2 s: every 20 ms.
    for (let block = 1; block <= 100; block += 1) {
      feed.emit(blockSealed(block));
      await vi.advanceTimersByTimeAsync(20);
    }
    await vi.advanceTimersByTimeAsync(REFRESH_INTERVAL_MS);
    expect(starts.length).toBeLessThanOrEqual(2000 / REFRESH_INTERVAL_MS + 1);
    expect(starts.length).toBeGreaterThanOrEqual(2);
    for (let index = 1; index < starts.length; index += 1) expect((starts[index] ?? 0) - (starts[index - 1] ?? 0)).toBeGreaterThanOrEqual(REFRESH_INTERVAL_MS);
    // The last load started after the last event.
    expect(starts.at(-1)).toBeGreaterThanOrEqual(Date.now() - REFRESH_INTERVAL_MS - 20);
  });

  it('never loads twice at once: an event during a load brings one more load after it', async () => {
    feed.set('live');
    start({ load_ms: 1500 });
    await vi.advanceTimersByTimeAsync(100);
    feed.emit(blockSealed(1));
    feed.emit(blockSealed(2));
    expect(loads).toBe(1);
    await vi.advanceTimersByTimeAsync(1400);
    expect(loads).toBe(2);
    await vi.advanceTimersByTimeAsync(1500 + POLL_MS * 3);
    expect(loads).toBe(2);
    expect(outcomes).toHaveLength(2);
  });

  it('polls while the stream is not live, loads once when it becomes live (for what it missed), and polls again when it falls back', async () => {
    start();
    feed.set('connecting');
    await vi.advanceTimersByTimeAsync(0);
    expect(loads).toBe(1);
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(loads).toBe(2);
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(loads).toBe(3);
    feed.set('live');
    await vi.advanceTimersByTimeAsync(REFRESH_INTERVAL_MS);
    expect(loads).toBe(4);
    await vi.advanceTimersByTimeAsync(5 * POLL_MS);
    expect(loads).toBe(4);
    feed.set('polling');
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(loads).toBe(5);
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(loads).toBe(6);
    // Paused (the tab hidden long): nothing.
    feed.set('paused');
    await vi.advanceTimersByTimeAsync(5 * POLL_MS);
    expect(loads).toBe(6);
  });

  it('polls without a stream at all', async () => {
    refresher = new Refresher<number>({ load: async () => ++loads, report: () => undefined, poll_ms: () => POLL_MS, relevant: () => true, stream: null });
    refresher.start();
    await vi.advanceTimersByTimeAsync(3 * POLL_MS);
    expect(loads).toBe(4);
  });

  it('lets go of the stream once what it shows is final (a sealed transaction), and loads no more', async () => {
    final = (data) => data !== null && data >= 2;
    feed.set('live');
    start();
    await vi.advanceTimersByTimeAsync(0);
    expect(feed.listeners.size).toBe(1);
    feed.emit(blockSealed(1));
    await vi.advanceTimersByTimeAsync(REFRESH_INTERVAL_MS);
    expect(loads).toBe(2);
    expect(feed.listeners.size).toBe(0);
    feed.set('polling');
    await vi.advanceTimersByTimeAsync(5 * POLL_MS);
    expect(loads).toBe(2);
  });

  it('tries a failed load again by the poll interval even while live, keeping the last data', async () => {
    feed.set('live');
    start();
    await vi.advanceTimersByTimeAsync(0);
    result = async () => {
      throw new Error('the service cannot be reached');
    };
    feed.emit(blockSealed(1));
    await vi.advanceTimersByTimeAsync(REFRESH_INTERVAL_MS);
    expect(loads).toBe(2);
    expect(outcomes.at(-1)).toEqual({ error: expect.any(Error) });
    result = async () => loads;
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(loads).toBe(3);
    expect(outcomes.at(-1)).toEqual({ data: 3 });
    await vi.advanceTimersByTimeAsync(5 * POLL_MS);
    expect(loads).toBe(3);
  });

  it("waits out a 429's pause, for events and polls alike", async () => {
    feed.set('live');
    start();
    await vi.advanceTimersByTimeAsync(0);
    paused_until_ms = Date.now() + 10_000;
    feed.emit(blockSealed(1));
    await vi.advanceTimersByTimeAsync(10_000 - 1);
    expect(loads).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(loads).toBe(2);
  });

  it('stops: no load, no report and no subscription after stop()', async () => {
    feed.set('connecting');
    start({ load_ms: 100 });
    refresher.stop();
    await vi.advanceTimersByTimeAsync(5 * POLL_MS);
    feed.emit(blockSealed(1));
    expect(loads).toBe(1);
    expect(outcomes).toEqual([]);
    expect(feed.listeners.size).toBe(0);
  });
});

describe('the SSE reader', () => {
  type Call = { url: string; headers: Record<string, string> };

  /** A fetch that answers with `chunks` as an event stream (or `answer` as given), recording each call. */
  function fakeFetch(calls: Call[], answer: { status?: number; content_type?: string; chunks?: string[]; body?: string; headers?: Record<string, string> }): typeof fetch {
    return async (input, init) => {
      calls.push({ url: String(input), headers: init?.headers as Record<string, string> });
      const encoder = new TextEncoder();
      const body = answer.chunks === undefined ? (answer.body ?? '') : new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of answer.chunks ?? []) controller.enqueue(encoder.encode(chunk));
          controller.close();
        },
      });
      return new Response(body, { status: answer.status ?? 200, headers: { 'content-type': answer.content_type ?? 'text/event-stream; charset=utf-8', ...answer.headers } });
    };
  }

  const event_json = (event: LedgerEvent) => JSON.stringify({ ...event, schema_version: 1 });

  it('sends the token and Last-Event-ID, and hands on each event, across chunk boundaries, heartbeats counted as activity', async () => {
    const calls: Call[] = [];
    const sealed = blockSealed(5);
    const accepted = transactionEvent(6, 'transaction.accepted', { from: 'carol' });
    const message = `id: ${accepted.id}\nevent: ${accepted.type}\ndata: ${event_json(accepted)}\n\n`;
    const read = sseSource({
      base_url: 'http://127.0.0.1:1', token: 'the.jwt.token',
      fetch: fakeFetch(calls, {
        chunks: [
          'retry: 2000\n\n',
          `id: ${sealed.id}\nevent: block.sealed\ndata: ${event_json(sealed)}\n\n`,
          ': heartbeat\n\n',
          message.slice(0, 40), message.slice(40),
          `id: evt_7_${'2'.repeat(12)}\nevent: checkpoint.made\ndata: {"id":"evt_7_${'2'.repeat(12)}","sequence":7,"type":"checkpoint.made","data":{}}\n\n`,
          ': disconnected: the server is shutting down; resume from your last event id\n\n',
        ],
      }),
    });
    const events: LedgerEvent[] = [];
    let activity = 0;
    await read({ last_event_id: 'evt_4_aaaaaaaaaaaa', signal: new AbortController().signal }, { activity: () => void (activity += 1), event: (event) => events.push(event) });
    expect(calls).toEqual([{ url: 'http://127.0.0.1:1/api/events', headers: { accept: 'text/event-stream', authorization: 'Bearer the.jwt.token', 'last-event-id': 'evt_4_aaaaaaaaaaaa' } }]);
    expect(events).toEqual([sealed, accepted]);
    expect(activity).toBe(7);
  });

  it('sends no Last-Event-ID for a fresh start', async () => {
    const calls: Call[] = [];
    await sseSource({ base_url: '', token: 't', fetch: fakeFetch(calls, { chunks: [] }) })({ last_event_id: null, signal: new AbortController().signal }, { activity: () => undefined, event: () => undefined });
    expect(calls[0]?.headers).not.toHaveProperty('last-event-id');
  });

  it("turns error answers into the SDK's errors, and refuses what is not an event stream", async () => {
    const read = (answer: Parameters<typeof fakeFetch>[1]) => sseSource({ base_url: '', token: 't', fetch: fakeFetch([], answer) })(
      { last_event_id: null, signal: new AbortController().signal }, { activity: () => undefined, event: () => undefined });
    const body = (status: number, code: string) => JSON.stringify(problem(status, code));
    await expect(read({ status: 401, content_type: 'application/problem+json', body: body(401, 'invalid_token') })).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(read({ status: 429, content_type: 'application/problem+json', body: body(429, 'rate_limited'), headers: { 'retry-after': '7' } })).rejects.toMatchObject({ retry_after_ms: 7000, code: 'rate_limited' });
    await expect(read({ status: 410, content_type: 'application/problem+json', body: body(410, 'cursor_expired') })).rejects.toMatchObject({ status: 410, code: 'cursor_expired' });
    await expect(read({ status: 503, content_type: 'application/problem+json', body: body(503, 'too_many_streams') })).rejects.toBeInstanceOf(ServerError);
    await expect(read({ status: 502, content_type: 'text/html', body: '<h1>Bad gateway</h1>' })).rejects.toMatchObject({ code: 'unexpected_status' });
    await expect(read({ content_type: 'text/html', body: '<html>a login page</html>' })).rejects.toBeInstanceOf(NetworkError);
  });

  it('turns a refused connection into a NetworkError, and an abort into its reason', async () => {
    const refused: typeof fetch = async () => {
      throw new TypeError('Failed to fetch');
    };
    const sink = { activity: () => undefined, event: () => undefined };
    await expect(sseSource({ base_url: '', token: 't', fetch: refused })({ last_event_id: null, signal: new AbortController().signal }, sink)).rejects.toBeInstanceOf(NetworkError);
    const controller = new AbortController();
    const reason = new Error('closed by the page');
    controller.abort(reason);
    const aborted: typeof fetch = async (_input, init) => {
      throw init?.signal?.reason;
    };
    await expect(sseSource({ base_url: '', token: 't', fetch: aborted })({ last_event_id: null, signal: controller.signal }, sink)).rejects.toBe(reason);
  });

  it('reads only the event objects it knows', () => {
    const sealed = blockSealed(1);
    expect(parseLedgerEvent(event_json(sealed))).toEqual(sealed);
    expect(parseLedgerEvent('not json')).toBeNull();
    expect(parseLedgerEvent('{"id":"evt_1_x","sequence":1,"type":"block.sealed","data":{"number":"1"}}')).toBeNull();
    expect(parseLedgerEvent('{"id":"evt_1_x","sequence":1,"type":"transaction.confirmed","data":{"tx_hash":1}}')).toBeNull();
    expect(parseLedgerEvent('{"id":"evt_1_x","sequence":1,"type":"something.new","data":{}}')).toBeNull();
  });
});

describe('which events concern which view', () => {
  it('a new block: the statistics and block lists, and a block page waiting for that block', () => {
    expect(isBlockSealed(blockSealed(3))).toBe(true);
    expect(isBlockSealed(transactionEvent(3, 'transaction.confirmed'))).toBe(false);
    expect(sealsBlock(blockSealed(3, 12), 12)).toBe(true);
    expect(sealsBlock(blockSealed(3, 13), 12)).toBe(true);
    expect(sealsBlock(blockSealed(3, 11), 12)).toBe(false);
  });

  it("a transaction's page: its own events only, whatever the hash's case", () => {
    expect(concernsTransaction(transactionEvent(1, 'transaction.accepted'), HASH)).toBe(true);
    expect(concernsTransaction(transactionEvent(1, 'transaction.failed'), HASH.toUpperCase().replace('0X', '0x'))).toBe(true);
    expect(concernsTransaction(transactionEvent(1, 'transaction.confirmed', { tx_hash: OTHER_HASH }), HASH)).toBe(false);
    expect(concernsTransaction(blockSealed(1), HASH)).toBe(false);
  });

  it("an account: its history on any of its transactions, its balances on confirmed ones only, ids matched exactly", () => {
    expect(touchesAccount(transactionEvent(1, 'transaction.accepted', { from: 'alice' }), 'alice')).toBe(true);
    expect(touchesAccount(transactionEvent(1, 'transaction.failed', { to: 'alice', from: 'carol' }), 'alice')).toBe(true);
    expect(touchesAccount(transactionEvent(1, 'transaction.accepted', { from: 'Alice', to: 'bob' }), 'alice')).toBe(false);
    expect(touchesAccount(blockSealed(1), 'alice')).toBe(false);
    expect(changesBalance(transactionEvent(1, 'transaction.confirmed', { to: 'alice' }), 'alice')).toBe(true);
    expect(changesBalance(transactionEvent(1, 'transaction.accepted', { to: 'alice' }), 'alice')).toBe(false);
    expect(changesBalance(transactionEvent(1, 'transaction.failed', { from: 'alice' }), 'alice')).toBe(false);
  });
});
