/**
 * Reads `GET /api/events` with fetch, since EventSource cannot send the Authorization header: one
 * connection per call, parsed by eventsource-parser, each message handed on as a LedgerEvent. An error
 * answer becomes the SDK's error class (401 UnauthorizedError, 429 RateLimitedError, …) so the page
 * treats it like any other call's.
 */
import { createParser } from 'eventsource-parser';
import { ApiError, NetworkError, RateLimitedError, ServerError, UnauthorizedError, type Problem } from '@tabula/client';
import { parseLedgerEvent, type StreamSource } from './event-stream.js';

export const EVENTS_PATH = '/api/events';
/** The longest line the parser holds (an event is a transaction record: a few KiB at the most). */
const MESSAGE_CHARS_MAX = 256 * 1024;
const ERROR_BODY_CHARS_MAX = 16 * 1024;

export type SseSourceOptions = {
  base_url: string;
  token: string;
  fetch?: typeof fetch;
};

export function sseSource(options: SseSourceOptions): StreamSource {
  const fetch_events = options.fetch ?? ((input, init) => fetch(input, init));
  return async ({ last_event_id, signal }, sink) => {
    const headers: Record<string, string> = { accept: 'text/event-stream', authorization: `Bearer ${options.token}` };
    if (last_event_id !== null) headers['last-event-id'] = last_event_id;
    let response: Response;
    try {
      response = await fetch_events(`${options.base_url}${EVENTS_PATH}`, { headers, signal, cache: 'no-store' });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw new NetworkError(`GET ${EVENTS_PATH} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    if (!response.ok) throw await errorOf(response);
    const content_type = response.headers.get('content-type') ?? '';
    if (!content_type.startsWith('text/event-stream') || response.body === null) {
      await response.body?.cancel();
      throw new NetworkError(`GET ${EVENTS_PATH} answered ${content_type || 'no content type'}, not an event stream`);
    }
    const parser = createParser({
      maxBufferSize: MESSAGE_CHARS_MAX,
      onEvent: (message) => {
        const event = parseLedgerEvent(message.data);
        if (event !== null) sink.event(event);
      },
      onError: () => undefined, // an unreadable line is skipped; the events around it still count
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        sink.activity();
        parser.feed(value);
      }
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw new NetworkError(`the event stream broke: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    } finally {
      reader.cancel().catch(() => undefined);
    }
  };
}

/** An error answer as the SDK's error class, from its problem+json body. */
async function errorOf(response: Response): Promise<ApiError> {
  const text = (await response.text().catch(() => '')).slice(0, ERROR_BODY_CHARS_MAX);
  const problem = problemOf(text, response.status);
  const retry_after = response.headers.get('retry-after');
  const retry_after_ms = retry_after !== null && /^[0-9]{1,9}$/.test(retry_after.trim()) ? Number(retry_after.trim()) * 1000 : null;
  if (response.status === 401) return new UnauthorizedError(problem, retry_after_ms);
  if (response.status === 429) return new RateLimitedError(problem, retry_after_ms);
  if (response.status >= 500) return new ServerError(problem, retry_after_ms);
  return new ApiError(problem, retry_after_ms);
}

function problemOf(text: string, status: number): Problem {
  try {
    const body = JSON.parse(text) as Partial<Problem> | null;
    if (typeof body === 'object' && body !== null && typeof body.code === 'string') {
      return { type: String(body.type ?? 'about:blank'), title: String(body.title ?? ''), status, detail: String(body.detail ?? ''), code: body.code };
    }
  } catch {
    // not problem+json: described below
  }
  return { type: 'about:blank', title: `HTTP ${status}`, status, detail: text.slice(0, 200), code: 'unexpected_status' };
}
