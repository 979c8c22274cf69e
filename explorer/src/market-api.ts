/**
 * The market's two reads, which the SDK does not wrap: a quote (`GET /api/price/quote`) and the price
 * candles (`GET /api/price/history`). They go with the signed-in user's token, keep every amount and
 * price as the exact decimal text the service sent, and fail with the SDK's error classes, so that
 * `api.describe` treats a 401 or a 429 here as it does everywhere else.
 */
import {
  ApiError, BadRequestError, NetworkError, NotFoundError, RateLimitedError, RequestTimeoutError, ServerError, UnauthorizedError,
  parseWithExactNumbers, topLevelArrayItemTexts, type Problem,
} from '@tabula/client';
import type { Candle, CandleInterval } from './market';

const REQUEST_TIMEOUT_MS = 10_000;

/** What a swap of `amount` `token` would receive now (not binding): exact decimal texts. */
export type Quote = { amount_out: string; token_out: string; price: string; price_after: string; fee: string };

export async function fetchQuote(token: string, amount: string, jwt: string, signal?: AbortSignal): Promise<Quote> {
  const query = new URLSearchParams({ token, amount });
  const text = await getText(`/api/price/quote?${query.toString()}`, jwt, signal);
  const body = parseWithExactNumbers(text, ['amount_out', 'price', 'price_after', 'fee']);
  return {
    amount_out: exactText(body, 'amount_out'),
    token_out: String(body.token_out),
    price: exactText(body, 'price'),
    price_after: exactText(body, 'price_after'),
    fee: exactText(body, 'fee'),
  };
}

export async function fetchCandles(interval: CandleInterval, limit: number, jwt: string, signal?: AbortSignal): Promise<Candle[]> {
  const text = await getText(`/api/price/history?interval=${interval}&limit=${limit}`, jwt, signal);
  return topLevelArrayItemTexts(text, 'candles').map((item) => {
    const candle = parseWithExactNumbers(item, ['open', 'high', 'low', 'close', 'volume_usd']);
    return {
      start: Number(candle.start),
      open: exactText(candle, 'open'),
      high: exactText(candle, 'high'),
      low: exactText(candle, 'low'),
      close: exactText(candle, 'close'),
      volume_usd: exactText(candle, 'volume_usd'),
    };
  });
}

function exactText(record: Record<string, unknown>, key: string): string {
  const text = record[`${key}_text`];
  if (typeof text !== 'string') throw new TypeError(`the answer has no number ${key}`);
  return text;
}

async function getText(path: string, jwt: string, signal?: AbortSignal): Promise<string> {
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  let response: Response;
  try {
    response = await fetch(path, {
      headers: { accept: 'application/json', authorization: `Bearer ${jwt}` },
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
  } catch (error) {
    if (signal?.aborted === true) throw error;
    if (timeout.aborted) throw new RequestTimeoutError(REQUEST_TIMEOUT_MS, { cause: error });
    throw new NetworkError('the service cannot be reached', { cause: error });
  }
  const text = await response.text();
  if (response.ok) return text;
  throw errorFor(problemOf(text, response.status), retryAfterMs(response.headers.get('retry-after')));
}

function problemOf(text: string, status: number): Problem {
  try {
    const body = JSON.parse(text) as Partial<Problem> | null;
    if (body !== null && typeof body === 'object' && typeof body.code === 'string') {
      return {
        type: String(body.type ?? 'about:blank'), title: String(body.title ?? ''), status, detail: String(body.detail ?? ''), code: body.code,
        ...(Array.isArray(body.errors) ? { errors: body.errors } : {}),
      };
    }
  } catch {
    // not problem+json: described below
  }
  return { type: 'about:blank', title: `HTTP ${status}`, status, detail: text.slice(0, 200), code: 'unexpected_status' };
}

function errorFor(problem: Problem, retry_after_ms: number | null): ApiError {
  if (problem.status === 400) return new BadRequestError(problem, retry_after_ms);
  if (problem.status === 401) return new UnauthorizedError(problem, retry_after_ms);
  if (problem.status === 404) return new NotFoundError(problem, retry_after_ms);
  if (problem.status === 429) return new RateLimitedError(problem, retry_after_ms);
  if (problem.status >= 500) return new ServerError(problem, retry_after_ms);
  return new ApiError(problem, retry_after_ms);
}

function retryAfterMs(value: string | null): number | null {
  if (value === null || !/^[0-9]{1,9}$/.test(value.trim())) return null;
  return Number(value.trim()) * 1000;
}
