/**
 * `GET /api/events`: the event log as Server-Sent Events. Each message carries the event's id (what
 * `Last-Event-ID` resumes from), its type and its JSON; heartbeat comments keep proxies from closing an
 * idle stream. A stream reads the log at its own pace from the hub, so a slow consumer only falls
 * behind; one whose socket stops draining is disconnected with a final comment and resumes later.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequestError, OverloadedError } from '../../domain/shared/errors.js';
import { parseUserId } from '../../domain/user-id.js';
import { EVENT_TYPES, isEventType, sequenceOfEventId, type EncodedEvent, type EventFeed, type EventType } from '../../events/event.js';
import { API_ERROR_CODES, API_SECURITY, errorResponses } from '../openapi.js';
import { principalOf } from '../request-guard.js';

export type EventStreamLimits = {
  /** Streams open on this instance at the most. */
  streams_max: number;
  /** Streams one caller (token subject) may have open at once. */
  streams_per_caller_max: number;
  heartbeat_interval_ms: number;
  /** Bytes written but not yet taken by the client, beyond which the stream is closed as too slow. */
  buffered_bytes_max: number;
  /** How long a stream may wait for the client to take what was written before it is closed as too slow. */
  drain_timeout_ms: number;
};

export const DEFAULT_EVENT_STREAM_LIMITS: EventStreamLimits = {
  streams_max: 2000, streams_per_caller_max: 10, heartbeat_interval_ms: 15_000, buffered_bytes_max: 1024 * 1024, drain_timeout_ms: 30_000,
};

/** Events read from the feed per write at the most. */
const EVENTS_PER_READ = 500;
const RECONNECT_DELAY_MS = 2000;
const STREAMS_RETRY_AFTER_S = 5;
const ACCOUNT_FILTER_LENGTH_MAX = 1024;
const SSE_EXAMPLE = [
  'retry: 2000', '',
  'id: evt_7_0b1f5c3e9a2d', 'event: block.sealed',
  'data: {"id":"evt_7_0b1f5c3e9a2d","sequence":7,"type":"block.sealed","occurred_at":1795547634,"schema_version":1,"data":{"number":2,"hash":"0x0b1f5c3e9a2d…","parent_hash":"0x…","timestamp":1795547634,"transactions_count":3,"transactions_root":"0x…"}}',
  '', ': heartbeat', '', '',
].join('\n');

type Options = {
  feed: EventFeed;
  limits: EventStreamLimits;
  store_head(): Promise<number>;
  /** Told how many streams are open whenever that changes (e.g. for a gauge). */
  on_streams_open?: (open: number) => void;
};

type Filter = { types: ReadonlySet<EventType> | null; account: string | null };

const EventsQuerySchema = Type.Object({
  types: Type.Optional(Type.String({ maxLength: 256, description: `Comma-separated event types to send (default: all): ${EVENT_TYPES.join(', ')}`, examples: ['transaction.confirmed,transaction.failed'] })),
  account: Type.Optional(Type.String({ maxLength: ACCOUNT_FILTER_LENGTH_MAX, description: 'Only transaction events whose `from` or `to` is this user', examples: ['alice'] })),
  after: Type.Optional(Type.String({ maxLength: 20, description: 'Start after this sequence (0: from the first event); `Last-Event-ID` wins when both are sent. Neither: from now on.', examples: ['0'] })),
});

export const eventRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { feed, limits, store_head, on_streams_open }) => {
  const open_by_caller = new Map<string, number>();
  let open_total = 0;
  const shared: SharedChunk = { after: -1, last: -1, bytes: Buffer.alloc(0) };
  /** Ends every open stream: the server does not finish closing while a stream holds its connection. */
  const closers = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const close of closers) close();
    done();
  });

  app.get('/events', {
    schema: {
      summary: 'The event log as a live stream (Server-Sent Events)',
      description: [
        'Events in sequence order: `transaction.accepted`, `transaction.confirmed`, `transaction.failed` and `block.sealed`.',
        'Each message is `id:` (the event id), `event:` (its type) and `data:` (the event as JSON). Resume with `Last-Event-ID`',
        'or `?after=<sequence>`: no gap and no duplicate. Without either, the stream starts at the current head.',
      ].join(' '),
      operationId: 'streamEvents',
      tags: ['events'],
      security: API_SECURITY,
      querystring: EventsQuerySchema,
      response: {
        200: {
          description: 'A stream of events (`text/event-stream`)',
          content: { 'text/event-stream': { schema: { type: 'string' }, example: SSE_EXAMPLE } },
        },
        ...errorResponses(['invalid_event_cursor', 'invalid_event_filter', 'cursor_expired', 'too_many_streams', ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => {
    const caller = principalOf(request).sub;
    const filter = parseFilter(request.query.types, request.query.account);
    const cursor = await startingCursor(request.headers['last-event-id'], request.query.after, feed, store_head);
    // The first read refuses an expired cursor before the stream is opened, so that it gets its 410.
    await feed.read(cursor, 1);
    if (open_total >= limits.streams_max || (open_by_caller.get(caller) ?? 0) >= limits.streams_per_caller_max) {
      throw new OverloadedError('too_many_streams', 'too many event streams are open; close one or retry later', STREAMS_RETRY_AFTER_S);
    }
    // HEAD: what a GET would answer, without its body. A stream would never send its headers (Node
    // writes no body for HEAD, and the headers wait for one) and would hold a stream's place.
    if (request.method === 'HEAD') return reply.code(200).headers(STREAM_HEADERS).send();
    open_total += 1;
    on_streams_open?.(open_total);
    open_by_caller.set(caller, (open_by_caller.get(caller) ?? 0) + 1);
    try {
      await stream(request, reply, { feed, limits, filter, cursor, closers, shared });
    } finally {
      open_total -= 1;
      on_streams_open?.(open_total);
      const left = (open_by_caller.get(caller) ?? 1) - 1;
      if (left === 0) open_by_caller.delete(caller);
      else open_by_caller.set(caller, left);
    }
  });
};

function parseFilter(types: string | undefined, account: string | undefined): Filter {
  let type_set: Set<EventType> | null = null;
  if (types !== undefined) {
    const names = types.split(',').map((name) => name.trim()).filter((name) => name !== '');
    const unknown = names.filter((name) => !isEventType(name));
    if (names.length === 0 || unknown.length > 0) {
      throw new InvalidRequestError('invalid_event_filter', `types must list event types among ${EVENT_TYPES.join(', ')}`, 'types');
    }
    type_set = new Set(names as EventType[]);
  }
  if (account === undefined) return { types: type_set, account: null };
  try {
    return { types: type_set, account: parseUserId(account, 'account') };
  } catch (error) {
    throw new InvalidRequestError('invalid_event_filter', error instanceof Error ? error.message : 'account is not a valid user id', 'account');
  }
}

/** The sequence to send events after: `Last-Event-ID`, else `after`, else the current head. */
async function startingCursor(
  last_event_id: string | string[] | undefined, after: string | undefined, feed: EventFeed, store_head: () => Promise<number>,
): Promise<number> {
  let cursor: number | null = null;
  if (typeof last_event_id === 'string' && last_event_id !== '') {
    cursor = sequenceOfEventId(last_event_id);
    if (cursor === null) throw new InvalidRequestError('invalid_event_cursor', 'Last-Event-ID is not an event id of this service', 'Last-Event-ID');
  } else if (after !== undefined) {
    if (!/^(0|[1-9][0-9]{0,15})$/.test(after)) throw new InvalidRequestError('invalid_event_cursor', 'after must be an integer ≥ 0', 'after');
    cursor = Number(after);
  }
  if (cursor === null) return feed.head();
  // This instance may lag the store by a moment; a cursor beyond the store's head names no event at all.
  if (cursor > feed.head() && cursor > (await store_head())) {
    throw new InvalidRequestError('invalid_event_cursor', `no event has sequence ${cursor} yet`, 'after');
  }
  return cursor;
}

function matches(event: EncodedEvent, filter: Filter): boolean {
  if (filter.types !== null && !filter.types.has(event.type)) return false;
  return filter.account === null || event.accounts.includes(filter.account);
}

function message(event: EncodedEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${event.json}\n\n`;
}

/** The headers of a stream's answer (and of a HEAD's). */
const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
} as const;

/**
 * The last unfiltered chunk written: streams woken by the same advance read the same range, so they
 * write the same bytes, encoded once, rather than a copy each (a thousand streams held a thousand
 * copies of every event in their socket buffers).
 */
type SharedChunk = { after: number; last: number; bytes: Buffer };

type StreamState = { feed: EventFeed; limits: EventStreamLimits; filter: Filter; cursor: number; closers: Set<() => void>; shared: SharedChunk };

/** The messages of `events` (read after `after`) that pass the filter; an unfiltered range is encoded once for every stream. */
function chunkOf(events: EncodedEvent[], after: number, state: StreamState): Buffer | string {
  if (state.filter.types !== null || state.filter.account !== null) return events.filter((event) => matches(event, state.filter)).map(message).join('');
  const last = (events.at(-1) as EncodedEvent).sequence;
  if (state.shared.after !== after || state.shared.last !== last) {
    state.shared.bytes = Buffer.from(events.map(message).join(''));
    state.shared.after = after;
    state.shared.last = last;
  }
  return state.shared.bytes;
}

/** Writes events from `cursor` on until the client goes away, the stream is too slow, or the server closes. */
async function stream(request: FastifyRequest, reply: FastifyReply, state: StreamState): Promise<void> {
  reply.hijack();
  const response = reply.raw;
  // The body ends when the connection does (`connection: close` below), so it needs no chunked
  // framing: each write goes to the socket as it is. Chunking cost each of a thousand streams a chunk
  // header, a trailing CRLF and a four-part `writev` per wake: a third or more of each write's CPU
  // (docs/performance.md, "Event streams without chunked framing").
  response.removeHeader('transfer-encoding');
  response.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    ...STREAM_HEADERS,
    // A stream's connection is never reused: when the stream ends, so does the connection (and a
    // closing server is not kept waiting for it).
    connection: 'close',
  });
  response.write(`retry: ${RECONNECT_DELAY_MS}\n\n`);
  let closed = false;
  let advanced = false;
  let wake: (() => void) | null = null;
  const wakeUp = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  const stop_listening = state.feed.onAdvance(() => {
    advanced = true;
    wakeUp();
  });
  const close = () => {
    closed = true;
    wakeUp();
  };
  const shut_down = () => {
    disconnect(response, 'the server is shutting down; resume from your last event id');
    close();
  };
  state.closers.add(shut_down);
  request.raw.socket.on('close', close);
  response.on('close', close);
  const heartbeat = setInterval(() => response.write(': heartbeat\n\n'), state.limits.heartbeat_interval_ms);
  let cursor = state.cursor;
  try {
    while (!closed) {
      advanced = false;
      const events = await state.feed.read(cursor, EVENTS_PER_READ);
      if (events.length === 0) {
        if (!advanced && !closed) await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const chunk = chunkOf(events, cursor, state);
      cursor = (events.at(-1) as EncodedEvent).sequence;
      if (chunk.length === 0) continue;
      const drained = response.write(chunk);
      if (response.writableLength > state.limits.buffered_bytes_max) {
        disconnect(response, 'slow consumer: too much unread; resume from your last event id');
        return;
      }
      if (!drained && !(await drainedInTime(response, state.limits.drain_timeout_ms, () => closed))) {
        disconnect(response, 'slow consumer: not reading; resume from your last event id');
        return;
      }
    }
  } catch (error) {
    request.log.warn({ err: error }, 'event stream ended by an error');
    disconnect(response, error instanceof Error && 'code' in error && error.code === 'cursor_expired' ? 'cursor expired' : 'server error; resume from your last event id');
  } finally {
    clearInterval(heartbeat);
    stop_listening();
    state.closers.delete(shut_down);
    request.raw.socket.off('close', close);
    if (!response.writableEnded) response.end();
  }
}

function disconnect(response: FastifyReply['raw'], reason: string): void {
  if (response.writableEnded) return;
  response.end(`: disconnected: ${reason}\n\n`);
}

function drainedInTime(response: FastifyReply['raw'], timeout_ms: number, closed: () => boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (drained: boolean) => {
      clearTimeout(timer);
      response.off('drain', on_drain);
      response.off('close', on_close);
      resolve(drained && !closed());
    };
    const on_drain = () => done(true);
    const on_close = () => done(false);
    const timer = setTimeout(() => done(false), timeout_ms);
    response.on('drain', on_drain);
    response.on('close', on_close);
  });
}
