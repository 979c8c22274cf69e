/**
 * One HTTP exchange with the service: credentials, a timeout per attempt, bounded retries with
 * backoff (honouring `Retry-After`), one token refresh on 401, and typed errors. Only `fetch`,
 * `AbortSignal` and `setTimeout`: it runs in Node and in browsers alike.
 */
import { apiErrorFor, ApiError, NetworkError, RequestTimeoutError, ResponseFormatError, type Problem } from './errors.js';

/** Returns the bearer token; called again with `refresh: true` once after a 401. */
export type TokenProvider = (context: { refresh: boolean }) => string | Promise<string>;

export type RetryOptions = {
  /** Attempts in all, the first included: 1..10, default 4. */
  attempts?: number;
  /** First backoff delay; doubles per attempt, with full jitter. Default 200 ms. */
  base_delay_ms?: number;
  /** The longest wait between attempts; a `Retry-After` beyond it is not waited for. Default 10 s. */
  max_delay_ms?: number;
};

export type TransportOptions = {
  base_url: string;
  api_key: string | undefined;
  jwt: string | TokenProvider | undefined;
  timeout_ms: number;
  retry: Required<RetryOptions>;
  fetch: typeof fetch;
};

export type RequestSpec = {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Whether to retry on network errors, timeouts, 429 and 5xx (true for every call of the SDK). */
  retry: boolean;
  /** Whether to send `Authorization` (not for /healthz and /readyz). */
  auth: boolean;
  signal?: AbortSignal | undefined;
};

export type Answer = { status: number; headers: Headers; text: string };

export const ATTEMPTS_MAX = 10;
const RESPONSE_BYTES_MAX = 16 * 1024 * 1024;

export class Transport {
  private readonly options: TransportOptions;

  constructor(options: TransportOptions) {
    this.options = options;
  }

  /** Sends `spec` until it gets a 2xx (returned) or a final error (thrown). */
  async send(spec: RequestSpec): Promise<Answer> {
    const attempts = spec.retry ? this.options.retry.attempts : 1;
    let refreshed = false;
    let last_error: Error = new NetworkError('no attempt was made');
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      const outcome = await this.attempt(spec, refreshed);
      if (outcome.kind === 'answer' && outcome.answer.status === 401 && !refreshed && typeof this.options.jwt === 'function') {
        refreshed = true;
        attempt -= 1; // a refresh is not a retry
        continue;
      }
      if (outcome.kind === 'answer' && outcome.answer.status < 300) return outcome.answer;
      last_error = outcome.kind === 'answer' ? toApiError(outcome.answer) : outcome.error;
      if (!isRetryable(last_error) || attempt === attempts) throw last_error;
      const delay_ms = this.delayBefore(attempt + 1, last_error);
      if (delay_ms === null) throw last_error;
      await sleep(delay_ms, spec.signal);
    }
    throw last_error;
  }

  /**
   * Opens a streaming response (one attempt, plus one token refresh after a 401): the 2xx response
   * with its body unread, or a typed error. The timeout covers the wait for the headers only; the
   * body runs until `spec.signal` aborts or the server ends it.
   */
  async open(spec: RequestSpec): Promise<Response> {
    for (let refresh = false; ; refresh = true) {
      const response = await this.openOnce(spec, refresh);
      if (response.status === 401 && !refresh && typeof this.options.jwt === 'function') {
        await response.body?.cancel();
        continue;
      }
      if (response.status < 300) return response;
      throw toApiError({ status: response.status, headers: response.headers, text: await readText(response) });
    }
  }

  private async openOnce(spec: RequestSpec, refresh: boolean): Promise<Response> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new RequestTimeoutError(this.options.timeout_ms)), this.options.timeout_ms);
    const signal = spec.signal === undefined ? timeout.signal : anySignal([timeout.signal, spec.signal]);
    try {
      return await this.options.fetch(`${this.options.base_url}${spec.path}`, { method: spec.method, headers: await this.headers(spec, refresh), signal });
    } catch (error) {
      if (spec.signal?.aborted === true) throw spec.signal.reason;
      if (timeout.signal.aborted) throw new RequestTimeoutError(this.options.timeout_ms, { cause: error });
      throw new NetworkError(`${spec.method} ${spec.path} failed: ${describe(error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  private async attempt(spec: RequestSpec, refresh: boolean): Promise<{ kind: 'answer'; answer: Answer } | { kind: 'error'; error: Error }> {
    const timeout = AbortSignal.timeout(this.options.timeout_ms);
    const signal = spec.signal === undefined ? timeout : anySignal([timeout, spec.signal]);
    try {
      const response = await this.options.fetch(`${this.options.base_url}${spec.path}`, {
        method: spec.method,
        headers: await this.headers(spec, refresh),
        ...(spec.body === undefined ? {} : { body: JSON.stringify(spec.body) }),
        signal,
      });
      const text = await readText(response);
      return { kind: 'answer', answer: { status: response.status, headers: response.headers, text } };
    } catch (error) {
      if (spec.signal?.aborted === true) throw spec.signal.reason;
      if (timeout.aborted) return { kind: 'error', error: new RequestTimeoutError(this.options.timeout_ms, { cause: error }) };
      if (error instanceof ResponseFormatError) return { kind: 'error', error };
      return { kind: 'error', error: new NetworkError(`${spec.method} ${spec.path} failed: ${describe(error)}`, { cause: error }) };
    }
  }

  private async headers(spec: RequestSpec, refresh: boolean): Promise<Record<string, string>> {
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json', ...spec.headers };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (this.options.api_key !== undefined) headers['x-api-key'] = this.options.api_key;
    const jwt = this.options.jwt;
    if (spec.auth && jwt !== undefined) {
      const token = typeof jwt === 'function' ? await jwt({ refresh }) : jwt;
      headers.authorization = `Bearer ${token}`;
    }
    return headers;
  }

  /** Milliseconds to wait before attempt `next`, or null when `Retry-After` asks for longer than allowed. */
  private delayBefore(next: number, error: Error): number | null {
    const { base_delay_ms, max_delay_ms } = this.options.retry;
    if (error instanceof ApiError && error.retry_after_ms !== null) {
      return error.retry_after_ms > max_delay_ms ? null : error.retry_after_ms;
    }
    const ceiling = Math.min(max_delay_ms, base_delay_ms * 2 ** (next - 2));
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }
}

/** Network errors, timeouts, 429 and 5xx: the request may not have been processed, or may be again safely. */
export function isRetryable(error: Error): boolean {
  if (error instanceof NetworkError || error instanceof RequestTimeoutError) return true;
  return error instanceof ApiError && (error.status === 429 || error.status >= 500);
}

function toApiError(answer: Answer): ApiError {
  return apiErrorFor(problemOf(answer), retryAfterMs(answer.headers.get('retry-after')));
}

function problemOf(answer: Answer): Problem {
  try {
    const problem = problemFrom(JSON.parse(answer.text), answer.status);
    if (problem !== null) return problem;
  } catch {
    // not problem+json: described below
  }
  return { type: 'about:blank', title: `HTTP ${answer.status}`, status: answer.status, detail: answer.text.slice(0, 200), code: 'unexpected_status' };
}

/** A problem+json body as the SDK's `Problem` (with `status` as given), or null when it has no `code`. */
export function problemFrom(value: unknown, status: number): Problem | null {
  const body = value as Partial<Problem> | null;
  if (typeof body !== 'object' || body === null || typeof body.code !== 'string') return null;
  return {
    type: String(body.type ?? 'about:blank'),
    title: String(body.title ?? ''),
    status,
    detail: String(body.detail ?? ''),
    code: body.code,
    ...(Array.isArray(body.errors) ? { errors: body.errors } : {}),
  };
}

/** `Retry-After` as delay-seconds or an HTTP date (RFC 9110 section 10.2.3). */
export function retryAfterMs(value: string | null, now_ms = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^[0-9]{1,9}$/.test(text)) return Number(text) * 1000;
  const date_ms = Date.parse(text);
  return Number.isNaN(date_ms) ? null : Math.max(0, date_ms - now_ms);
}

async function readText(response: Response): Promise<string> {
  const length = Number(response.headers.get('content-length') ?? '0');
  if (length > RESPONSE_BYTES_MAX) throw new ResponseFormatError(`response of ${length} bytes exceeds ${RESPONSE_BYTES_MAX}`);
  const text = await response.text();
  if (text.length > RESPONSE_BYTES_MAX) throw new ResponseFormatError(`response exceeds ${RESPONSE_BYTES_MAX} characters`);
  return text;
}

export function anySignal(signals: AbortSignal[]): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(signals);
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
