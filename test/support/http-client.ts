/** `app.inject()` with a bearer token, asserting that no request ever gets a 5xx. */
import { expect } from 'vitest';
import type { TestTabula } from './in-process-tabula.js';

export type Call = { status: number; headers: Record<string, string | string[] | number | undefined>; body: string; json: any };

export type Client = {
  get(url: string, token?: string | null, headers?: Record<string, string>): Promise<Call>;
  post(url: string, payload: unknown, token?: string | null, headers?: Record<string, string>): Promise<Call>;
};

export function clientFor(ledger: TestTabula, default_token: string): Client {
  const send = async (method: 'GET' | 'POST', url: string, payload: unknown, token: string | null | undefined, headers: Record<string, string> = {}) => {
    const bearer = token === undefined ? default_token : token;
    const response = await ledger.app.inject({
      method,
      url,
      headers: { ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }), ...headers },
      ...(payload === undefined ? {} : typeof payload === 'string' ? { payload } : { payload: payload as object }),
    });
    expect(response.statusCode, `${method} ${url} answered ${response.statusCode}: ${response.body}`).toBeLessThan(500);
    const is_json = String(response.headers['content-type'] ?? '').includes('json');
    return { status: response.statusCode, headers: response.headers, body: response.body, json: is_json ? JSON.parse(response.body) : undefined };
  };
  return {
    get: (url, token, headers) => send('GET', url, undefined, token, headers),
    post: (url, payload, token, headers) => send('POST', url, payload, token, headers),
  };
}

export function expectProblem(call: Call, status: number, code: string): void {
  expect(call.status, call.body).toBe(status);
  expect(call.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(call.json).toMatchObject({ status, code, type: `urn:tabula:problem:${code}` });
  expect(typeof call.json.title).toBe('string');
  expect(typeof call.json.detail).toBe('string');
}
