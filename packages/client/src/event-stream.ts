/**
 * `client.events()`: the event log (`GET /api/events`) as an async iterable of typed events. It
 * reconnects on a dropped connection, an idle one, a 429 or a 5xx (jittered exponential backoff,
 * honouring `Retry-After`, bounded in delay and in failed connections in a row) and resumes with
 * `Last-Event-ID` after the last event it took, so the caller sees every event once, in order. It
 * checks the order itself (consecutive sequences on an unfiltered stream) and, with `verify`, each
 * event against the chain. Breaking out of the loop or aborting `signal` closes the connection.
 */
import { ApiError, NetworkError, ResponseFormatError, VerificationError } from './errors.js';
import type { EventVerifier } from './event-verification.js';
import { parseWithExactNumbers, topLevelMemberText } from './exact-json.js';
import { SseParser, type SseChunk, type SseMessage } from './server-sent-events.js';
import { anySignal, isRetryable, sleep } from './transport.js';
import type { EventsOptions, EventType, ReconnectOptions, TabulaEvent, Transaction } from './types.js';

/** Opens `GET /api/events<query>` with extra headers: the 2xx response, or a typed error. */
export type StreamOpener = (path: string, headers: Record<string, string>, signal: AbortSignal) => Promise<Response>;

const EVENT_TYPES: readonly EventType[] = ['transaction.accepted', 'transaction.confirmed', 'transaction.failed', 'block.sealed'];
const ATTEMPTS_DEFAULT = 30;
const ATTEMPTS_MAX = 1000;
const BASE_DELAY_MS_FALLBACK = 1000;
const MAX_DELAY_MS_DEFAULT = 30_000;
const IDLE_TIMEOUT_MS_DEFAULT = 45_000;
const DELAY_MS_LIMIT = 3_600_000;
/** The longest `Retry-After` waited out (beyond `max_delay_ms`, which bounds the backoff only). */
const RETRY_AFTER_MS_MAX = 300_000;
/** A connection that stayed up this long counts as good: the failures before it are forgiven. */
const HEALTHY_CONNECTION_MS = 60_000;
const TRANSACTION_AMOUNTS = ['amount', 'min_receive', 'amount_out'];

type Settings = { attempts: number; base_delay_ms: number | null; max_delay_ms: number; idle_timeout_ms: number };
type Position = { id: string; sequence: number };

/** Checks the options before anything is sent; a bad one throws a `RangeError`. */
export function eventsPath(options: EventsOptions): string {
  const query = new URLSearchParams();
  if (options.types !== undefined) {
    const unknown = options.types.filter((type) => !EVENT_TYPES.includes(type));
    if (options.types.length === 0 || unknown.length > 0) throw new RangeError(`types must list event types among ${EVENT_TYPES.join(', ')}`);
    query.set('types', options.types.join(','));
  }
  if (options.account !== undefined) {
    if (typeof options.account !== 'string' || options.account === '') throw new RangeError('account must be a non-empty user id');
    query.set('account', options.account);
  }
  if (options.after !== undefined && (!Number.isSafeInteger(options.after) || options.after < 0)) throw new RangeError(`after must be a non-negative integer, got ${options.after}`);
  const search = query.toString();
  return `/api/events${search === '' ? '' : `?${search}`}`;
}

function settingsOf(reconnect: ReconnectOptions = {}): Settings {
  const attempts = reconnect.attempts ?? ATTEMPTS_DEFAULT;
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > ATTEMPTS_MAX) throw new RangeError(`reconnect.attempts must be an integer from 1 to ${ATTEMPTS_MAX}`);
  const delay = (value: number | undefined, name: string): number | undefined => {
    if (value !== undefined && (!Number.isFinite(value) || value <= 0 || value > DELAY_MS_LIMIT)) throw new RangeError(`reconnect.${name} must be a number of milliseconds from 1 to ${DELAY_MS_LIMIT}`);
    return value;
  };
  return {
    attempts,
    base_delay_ms: delay(reconnect.base_delay_ms, 'base_delay_ms') ?? null,
    max_delay_ms: delay(reconnect.max_delay_ms, 'max_delay_ms') ?? MAX_DELAY_MS_DEFAULT,
    idle_timeout_ms: delay(reconnect.idle_timeout_ms, 'idle_timeout_ms') ?? IDLE_TIMEOUT_MS_DEFAULT,
  };
}

export async function* streamEvents(open: StreamOpener, verifier: EventVerifier | null, options: EventsOptions): AsyncGenerator<TabulaEvent, void, undefined> {
  const path = eventsPath(options);
  const settings = settingsOf(options.reconnect);
  const consecutive = options.types === undefined && options.account === undefined;
  const user_signal = options.signal;
  let last: Position | null = null;
  let server_retry_ms: number | null = null;
  let failures = 0;
  for (;;) {
    user_signal?.throwIfAborted();
    const connection = new AbortController();
    const signal = user_signal === undefined ? connection.signal : anySignal([user_signal, connection.signal]);
    const opened_at = Date.now();
    let delivered = false;
    let failure: Error;
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (last !== null) headers['last-event-id'] = last.id;
      const after = last === null && options.after !== undefined ? `${path.includes('?') ? '&' : '?'}after=${options.after}` : '';
      const response = await open(`${path}${after}`, headers, signal);
      for await (const chunk of chunksOf(response, connection, settings.idle_timeout_ms)) {
        if (chunk.retry_ms !== null) server_retry_ms = chunk.retry_ms;
        for (const message of chunk.messages) {
          const { position, event } = parseMessage(message);
          checkOrder(position.sequence, last?.sequence ?? options.after ?? null, consecutive);
          if (event !== null && verifier !== null) await verifier.check(event, user_signal);
          last = position;
          if (event === null) continue; // a type this SDK does not know yet: skipped, but resumed past
          delivered = true;
          yield event;
        }
      }
      failure = new NetworkError('the event stream was closed by the server');
    } catch (error) {
      if (user_signal?.aborted === true) throw user_signal.reason;
      if (!(error instanceof Error) || !isRetryable(error)) throw error;
      failure = error;
    } finally {
      connection.abort();
    }
    failures = delivered || Date.now() - opened_at >= HEALTHY_CONNECTION_MS ? 1 : failures + 1;
    if (failures >= settings.attempts) throw failure;
    await sleep(reconnectDelay(failures, failure, server_retry_ms, settings), user_signal);
  }
}

/** Jittered exponential backoff from the base (the caller's, else the stream's `retry:`) up to `max_delay_ms`, or the `Retry-After` when longer (up to 5 min). */
function reconnectDelay(failures: number, failure: Error, server_retry_ms: number | null, settings: Settings): number {
  const base = settings.base_delay_ms ?? server_retry_ms ?? BASE_DELAY_MS_FALLBACK;
  const ceiling = Math.min(settings.max_delay_ms, base * 2 ** Math.min(failures - 1, 30));
  const jittered = ceiling / 2 + (Math.random() * ceiling) / 2;
  const retry_after = failure instanceof ApiError ? (failure.retry_after_ms ?? 0) : 0;
  return Math.round(Math.max(jittered, Math.min(retry_after, RETRY_AFTER_MS_MAX)));
}

/** The stream's chunks, parsed; a connection silent for `idle_timeout_ms` is aborted as a `NetworkError`. */
async function* chunksOf(response: Response, connection: AbortController, idle_timeout_ms: number): AsyncGenerator<SseChunk, void, undefined> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.toLowerCase().startsWith('text/event-stream') || response.body === null) {
    await response.body?.cancel();
    throw new ResponseFormatError(`GET /api/events answered ${response.status} with ${type === '' ? 'no content type' : type}, not an event stream`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  try {
    for (;;) {
      const idle = new NetworkError(`the event stream sent nothing for ${idle_timeout_ms} ms`);
      const timer = setTimeout(() => connection.abort(idle), idle_timeout_ms);
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (error) {
        if (connection.signal.reason === idle) throw idle;
        throw new NetworkError(`the event stream broke: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      } finally {
        clearTimeout(timer);
      }
      if (result.done) {
        yield parser.push(decoder.decode());
        return;
      }
      yield parser.push(decoder.decode(result.value, { stream: true }));
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** The event a message carries (null for a type this SDK does not know), checked against the message's id and type. */
function parseMessage(message: SseMessage): { position: Position; event: TabulaEvent | null } {
  const { position, type, event } = parseEventText(message.data);
  if (position.id !== message.id || type !== message.event) {
    throw new ResponseFormatError(`an event stream message says id ${message.id} and type ${message.event}, its event ${position.id} and ${type}`);
  }
  return { position, event };
}

/**
 * An event object's JSON as a typed event (transaction records with their exact `amount_text`), or
 * `event: null` for a type this SDK does not know. Throws a `ResponseFormatError` when it is not one.
 */
export function parseEventText(text: string): { position: Position; type: string; event: TabulaEvent | null } {
  let object: { id?: unknown; sequence?: unknown; type?: unknown; data?: unknown } | null;
  try {
    object = JSON.parse(text) as typeof object;
  } catch (error) {
    throw new ResponseFormatError('an event is not JSON', { cause: error });
  }
  if (typeof object !== 'object' || object === null || typeof object.id !== 'string' || typeof object.type !== 'string'
    || !Number.isSafeInteger(object.sequence) || (object.sequence as number) < 1 || typeof object.data !== 'object' || object.data === null) {
    throw new ResponseFormatError('an event is not an event object ({id, sequence, type, occurred_at, schema_version, data})');
  }
  const position = { id: object.id, sequence: object.sequence as number };
  const type = object.type as EventType;
  if (!EVENT_TYPES.includes(type)) return { position, type, event: null };
  if (type === 'block.sealed') return { position, type, event: object as TabulaEvent };
  const data = parseWithExactNumbers(topLevelMemberText(text, 'data') as string, TRANSACTION_AMOUNTS) as Transaction;
  return { position, type, event: { ...object, data } as TabulaEvent };
}

function checkOrder(sequence: number, previous: number | null, consecutive: boolean): void {
  if (previous === null) return;
  if (consecutive ? sequence === previous + 1 : sequence > previous) return;
  const expected = consecutive ? `${previous + 1}` : `one after ${previous}`;
  throw new VerificationError('event_sequence_gap', `the event stream sent sequence ${sequence} where ${expected} was due`);
}
