/**
 * The contract's error shape at the edges only a real socket reaches: every error answer of the
 * running service, including those produced before routing (malformed URLs, oversized headers,
 * malformed requests) and by the limits (body size, rate limit), is RFC 9457 problem+json with a
 * `code`.
 */
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startEnvironment, type E2eEnvironment } from './support/fixture.js';
import { type ApiClient, type ApiResponse, type ProblemRecord, serverErrors } from './support/http.js';

const RATE_LIMIT_MAX = 40;
/** An hour: a request refills every 90 s, far longer than the test takes, so the count is exact. */
const RATE_LIMIT_WINDOW_MS = 3_600_000;

type RawResponse = { status: number; headers: Map<string, string>; body: string };

function expectProblem(response: { status: number; content_type: string | null; body: string }, status: number, code?: string): void {
  expect(response.status, response.body).toBe(status);
  expect({ content_type: response.content_type, body: response.body }).toMatchObject({
    content_type: expect.stringMatching(/^application\/problem\+json/) as unknown,
    body: expect.stringMatching(/"code":"[a-z_]+"/) as unknown,
  });
  const body = JSON.parse(response.body) as ProblemRecord;
  expect(body.status).toBe(status);
  if (code !== undefined) expect(body.code).toBe(code);
}

function fromApi(response: ApiResponse): { status: number; content_type: string | null; body: string } {
  return { status: response.status, content_type: response.headers.get('content-type'), body: response.text };
}

function fromRaw(response: RawResponse | undefined): { status: number; content_type: string | null; body: string } {
  return { status: response?.status ?? 0, content_type: response?.headers.get('content-type') ?? null, body: response?.body ?? '' };
}

describe('e2e: error answers at the HTTP edge are problem+json', () => {
  let env: E2eEnvironment;
  let alice: ApiClient;

  beforeAll(async () => {
    env = await startEnvironment({ env: { RATE_LIMIT_MAX: String(RATE_LIMIT_MAX), RATE_LIMIT_WINDOW_MS: String(RATE_LIMIT_WINDOW_MS) } });
    alice = await env.as('edge-alice');
  });

  afterAll(async () => {
    await env?.close();
    expect(serverErrors()).toEqual([]);
  });

  /** Sends `text` on a fresh connection and returns the first response. */
  async function raw(text: string): Promise<RawResponse | undefined> {
    const socket = net.connect(Number(new URL(env.service.url).port), '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.on('error', () => undefined);
    socket.write(text);
    await Promise.race([once(socket, 'close'), new Promise((resolve) => setTimeout(resolve, 3000))]);
    socket.destroy();
    const head_end = received.indexOf('\r\n\r\n');
    if (head_end < 0) return undefined;
    const [status_line, ...lines] = received.slice(0, head_end).split('\r\n');
    const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()] as const));
    return { status: Number(status_line?.split(' ')[1]), headers, body: received.slice(head_end + 4) };
  }

  it('answers an unknown route, a wrong method and a wrong media type with problem+json', async () => {
    expectProblem(fromApi(await alice.get('/api/nothing-here')), 404, 'route_not_found');
    expectProblem(fromApi(await alice.request('/api/stats', { method: 'DELETE' })), 404, 'route_not_found');
    expectProblem(fromApi(await alice.post('/api/transactions/submit', 'from=a&to=b', { headers: { 'content-type': 'application/x-www-form-urlencoded' } })), 415, 'unsupported_media_type');
    expectProblem(fromApi(await alice.post('/api/transactions/submit', '{"from": "edge-alice",')), 400, 'malformed_json');
  });

  it('answers a body over 64 KiB with 413 problem+json', async () => {
    const body = { from: 'edge-alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer', metadata: { pad: 'x'.repeat(70 * 1024) } };
    expectProblem(fromApi(await alice.post('/api/transactions/submit', body)), 413, 'payload_too_large');
  });

  it('answers a path with malformed percent-encoding with 400 problem+json', async () => {
    // e.g. a client that forgot to encode a user id such as "100%".
    expectProblem(fromApi(await alice.get('/api/balance/100%')), 400, 'invalid_url');
    expectProblem(fromApi(await alice.get('/api/balance/%ZZ')), 400, 'invalid_url');
  });

  it('answers headers over the size limit with 431 problem+json', async () => {
    const response = await raw(`GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${'a'.repeat(20_000)}\r\n\r\n`);
    expectProblem(fromRaw(response), 431, 'headers_too_large');
  });

  it('answers a malformed HTTP request with 400 problem+json', async () => {
    const response = await raw('GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n');
    expectProblem(fromRaw(response), 400, 'malformed_request');
  });

  it('answers what Node would answer bare or not at all with problem+json: no Host, an unmet Expect, CONNECT', async () => {
    // A caller of its own: the rate limit test below counts edge-alice's requests.
    const token = await env.idp.token('edge-carol');
    // HTTP/1.1 without Host: Node's own check answered 400 with an empty body.
    const no_host = await raw(`GET /api/stats HTTP/1.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    expectProblem(fromRaw(no_host), 400, 'malformed_request');
    expect(no_host?.headers.get('connection')).toBe('close');
    // HTTP/1.0 needs none.
    expect((await raw(`GET /api/stats HTTP/1.0\r\nAuthorization: Bearer ${token}\r\n\r\n`))?.status).toBe(200);
    // An Expect other than 100-continue: Node answered 417 with no body and no type.
    const body = '{"from":"edge-carol","to":"bob","amount":1,"token":"TAB","type":"transfer"}';
    const expectation = await raw(`POST /api/transactions/submit HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: foo\r\n\r\n${body}`);
    expectProblem(fromRaw(expectation), 417, 'expectation_failed');
    expect(expectation?.headers.get('connection')).toBe('close');
    // CONNECT: Node closed the connection without an answer.
    expectProblem(fromRaw(await raw('CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n')), 404, 'route_not_found');
    // Nothing of these was accepted.
    const carol = await env.as('edge-carol');
    expect((await carol.get('/api/accounts/edge-carol/transactions')).body).toMatchObject({ transactions: [] });
  });

  it('limits each caller with 429, Retry-After and RateLimit headers (problem+json), others unaffected', async () => {
    const limited = await env.as('edge-limited');
    const statuses: number[] = [];
    let refusal: ApiResponse | undefined;
    for (let index = 0; index < RATE_LIMIT_MAX + 5; index += 1) {
      const response = await limited.get('/api/balance/edge-limited');
      statuses.push(response.status);
      if (response.status === 429) refusal ??= response;
      else {
        expect(response.headers.get('ratelimit-policy')).toBe(`${RATE_LIMIT_MAX};w=${RATE_LIMIT_WINDOW_MS / 1000}`);
        expect(response.headers.get('ratelimit')).toMatch(/^limit=\d+, remaining=\d+, reset=\d+$/);
      }
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(RATE_LIMIT_MAX);
    expect(statuses.slice(RATE_LIMIT_MAX)).toEqual(Array<number>(5).fill(429));
    expect(refusal).toBeDefined();
    if (refusal === undefined) return;
    expectProblem(fromApi(refusal), 429, 'rate_limited');
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refusal.headers.get('ratelimit-policy')).toBe(`${RATE_LIMIT_MAX};w=${RATE_LIMIT_WINDOW_MS / 1000}`);
    // Another caller has its own budget.
    expect((await env.admin.get('/api/stats')).status).toBe(200);
    const mint = await env.admin.submit({ from: ADMIN, to: 'edge-alice', amount: 1, token: 'TAB', type: 'mint' });
    expect(mint.status).toBe(202);
  });
});
