/**
 * Retries, through a loopback double in front of the real service that fails the first attempts
 * (503, 429 with Retry-After, a reset connection, an answer lost after the service committed) and
 * then forwards. A retried submission must never create a second transaction.
 */
import type { ServerResponse } from 'node:http';
import { RateLimitedError, RequestTimeoutError, ResponseFormatError, ServerError, TabulaClient, BadRequestError, NetworkError } from '@tabula/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { forward, pass, problemBody, send, startDouble, type Double, type SeenRequest } from '../support/test-double.js';

type Step = 'forward' | 'reset' | 'forward-then-reset' | 'hang' | 'html' | { status: number; code: string; retry_after?: string };

describe('SDK retries', () => {
  let server: ServiceProcess;
  let double: Double | null = null;
  let admin_token: string;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    admin_token = await server.token('treasury', { admin: true });
  });
  afterEach(async () => {
    await double?.close();
    double = null;
  });
  afterAll(async () => { await server?.close(); });

  /** A double that plays `steps` for the first requests, then forwards everything. */
  async function flaky(steps: Step[]): Promise<Double> {
    const hanging: ServerResponse[] = [];
    double = await startDouble(async (request: SeenRequest, response, index) => {
      const step = steps[index] ?? 'forward';
      if (step === 'reset') return void response.socket?.destroy();
      if (step === 'hang') return void hanging.push(response);
      if (step === 'html') return void response.writeHead(200, { 'content-type': 'text/html' }).end('<html>captive portal</html>');
      if (typeof step === 'object') {
        return send(response, step.status, problemBody(step.status, step.code), step.retry_after === undefined ? {} : { 'retry-after': step.retry_after });
      }
      const upstream = await forward(server.url, request);
      if (step === 'forward-then-reset') return void response.socket?.destroy();
      pass(response, upstream);
    });
    return double;
  }

  const client = (url: string, options: ConstructorParameters<typeof TabulaClient>[0] extends infer O ? Partial<O> : never = {}) =>
    new TabulaClient({ baseUrl: url, jwt: admin_token, retry: { base_delay_ms: 20 }, ...options });

  it('survives 503, 429 with Retry-After and a reset connection, with one Idempotency-Key throughout', async () => {
    const proxy = await flaky([{ status: 503, code: 'service_overloaded' }, { status: 429, code: 'rate_limited', retry_after: '1' }, 'reset']);
    const receipt = await client(proxy.url).submitTransaction({ from: 'treasury', to: 'erin', amount: 3, token: 'TAB', type: 'mint' });
    expect(proxy.requests).toHaveLength(4);
    const keys = new Set(proxy.requests.map((request) => request.headers['idempotency-key']));
    expect(keys).toEqual(new Set([receipt.idempotency_key]));
    const [, rate_limited, after_retry_after] = proxy.requests;
    expect((after_retry_after?.at_ms ?? 0) - (rate_limited?.at_ms ?? 0)).toBeGreaterThanOrEqual(990); // Retry-After: 1 honoured
    expect(receipt.replayed).toBe(false);
    const direct = new TabulaClient({ baseUrl: server.url, jwt: admin_token });
    expect((await direct.waitForTransaction(receipt.tx_hash, { intervalMs: 25 })).status).toBe('confirmed');
  });

  it('turns an answer lost after the service committed into a replay: one transaction, not two', async () => {
    const proxy = await flaky(['forward-then-reset']);
    const receipt = await client(proxy.url).submitTransaction({ from: 'treasury', to: 'frank', amount: 5, token: 'USDG', type: 'mint' });
    expect(proxy.requests).toHaveLength(2);
    expect(receipt.replayed).toBe(true); // the service had stored the first attempt
    const direct = new TabulaClient({ baseUrl: server.url, jwt: admin_token });
    await direct.waitForTransaction(receipt.tx_hash, { intervalMs: 25 });
    const balance = await direct.getBalance('frank');
    expect(balance.usdg_text).toBe('5'); // minted once
    const block = await direct.getBlock((await direct.getTransaction(receipt.tx_hash)).block_number as number);
    expect(block.transactions.filter((hash) => hash === receipt.tx_hash)).toHaveLength(1);
  });

  it('retries a batch after a 503 and an answer lost after the service committed: each item stored once, replayed with its hash', async () => {
    let lost_answer = '';
    double = await startDouble(async (request, response, index) => {
      if (index === 0) return send(response, 503, problemBody(503, 'service_overloaded'));
      const upstream = await forward(server.url, request);
      if (index > 1) return pass(response, upstream);
      lost_answer = upstream.body; // the service committed this one; the client never sees it
      response.socket?.destroy();
    });
    const items = [
      { from: 'treasury', to: 'judy', amount: 2, token: 'USDG', type: 'mint' },
      { from: 'treasury', to: 'kate', amount: '3.25', token: 'TAB', type: 'mint', idempotency_key: 'retried-batch-kate' },
      { from: 'treasury', to: 'judy', amount: -1, token: 'TAB', type: 'mint' },
    ] as const;
    const batch = await client(double.url).submitBatch(items);
    expect(double.requests).toHaveLength(3);
    expect(new Set(double.requests.map((request) => request.body)).size).toBe(1); // the same body, the same keys, every time
    const sent = JSON.parse(double.requests[0]?.body ?? '') as { transactions: { idempotency_key: string }[] };
    expect(sent.transactions.map((item) => item.idempotency_key)).toEqual(batch.results.map((result) => result.idempotency_key));
    expect(sent.transactions[1]?.idempotency_key).toBe('retried-batch-kate');
    const first = JSON.parse(lost_answer) as { results: { tx_hash?: string }[] };
    expect(batch).toMatchObject({ accepted: 2, rejected: 1 });
    expect(batch.results[0]).toMatchObject({ status: 202, replayed: true, tx_hash: first.results[0]?.tx_hash });
    expect(batch.results[1]).toMatchObject({ status: 202, replayed: true, tx_hash: first.results[1]?.tx_hash });
    expect(batch.results[2]).toMatchObject({ status: 400, error: { code: 'amount_not_positive' } });
    const direct = new TabulaClient({ baseUrl: server.url, jwt: admin_token });
    const hashes = batch.results.flatMap((result) => (result.error === undefined ? [result.tx_hash] : []));
    for (const hash of hashes) expect((await direct.waitForTransaction(hash, { intervalMs: 25 })).status).toBe('confirmed');
    expect((await direct.getBalance('judy')).usdg_text).toBe('2'); // minted once
    expect((await direct.getBalance('kate')).native_text).toBe('3.25');
    for (const hash of hashes) {
      const block = await direct.getBlock((await direct.getTransaction(hash)).block_number as number);
      expect(block.transactions.filter((candidate) => candidate === hash)).toHaveLength(1);
    }
  });

  it('throws ResponseFormatError for a batch answer that does not answer every item in order', async () => {
    const answers = [{ accepted: 0, rejected: 0, results: [] }, { accepted: 1, rejected: 0, results: [{ index: 1, status: 202, tx_hash: `0x${'ab'.repeat(32)}`, timestamp: 1 }] }];
    double = await startDouble((_request, response, index) => send(response, 200, JSON.stringify(answers[index])));
    const item = { from: 'treasury', to: 'lee', amount: 1, token: 'TAB', type: 'mint' } as const;
    await expect(client(double.url).submitBatch([item])).rejects.toThrow(new ResponseFormatError('the batch answer has 0 results for 1 transactions'));
    await expect(client(double.url).submitBatch([item])).rejects.toThrow(new ResponseFormatError("the batch answer's result 0 is not the one for transaction 0"));
  });

  it('retries reads too (a 502, then a reset)', async () => {
    const proxy = await flaky([{ status: 502, code: 'internal_error' }, 'reset']);
    expect((await client(proxy.url).getStats()).native_price).toBe(1);
    expect(proxy.requests.map((request) => request.path)).toEqual(['/api/stats', '/api/stats', '/api/stats']);
  });

  it('stops after the configured number of attempts and throws the last error as ServerError', async () => {
    const always = Array.from({ length: 10 }, () => ({ status: 500, code: 'internal_error' }));
    const proxy = await flaky(always);
    const error = await client(proxy.url, { retry: { attempts: 3, base_delay_ms: 10 } }).getStats().catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 500, code: 'internal_error', problem: { code: 'internal_error' } });
    expect(proxy.requests).toHaveLength(3);
  });

  it('does not wait for a Retry-After beyond max_delay_ms: RateLimitedError at once', async () => {
    const proxy = await flaky([{ status: 429, code: 'rate_limited', retry_after: '120' }]);
    const error = await client(proxy.url, { retry: { max_delay_ms: 5000 } }).getStats().catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ retry_after_ms: 120_000 });
    expect(proxy.requests).toHaveLength(1);
  });

  it('never retries a 4xx other than 429', async () => {
    const proxy = await flaky([]);
    const error = await client(proxy.url).submitTransaction({ from: 'treasury', to: 'gus', amount: -1, token: 'TAB', type: 'mint' }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(proxy.requests).toHaveLength(1);
  });

  it('times out each attempt (AbortSignal.timeout) and gives up with RequestTimeoutError', async () => {
    const proxy = await flaky(['hang', 'hang']);
    const started = Date.now();
    const error = await client(proxy.url, { timeoutMs: 200, retry: { attempts: 2, base_delay_ms: 10 } }).getStats().catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(proxy.requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('recovers from a timed-out attempt when the next one is answered', async () => {
    const proxy = await flaky(['hang']);
    const receipt = await client(proxy.url, { timeoutMs: 300 }).submitTransaction({ from: 'treasury', to: 'hal', amount: 1, token: 'TAB', type: 'mint' });
    expect(receipt.status).toBe('pending');
    expect(proxy.requests).toHaveLength(2);
  });

  it('stops at once when the caller aborts', async () => {
    const proxy = await flaky(['hang']);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('caller gave up')), 100);
    const error = await client(proxy.url, { timeoutMs: 5000 }).getTransaction(`0x${'cd'.repeat(32)}`, { signal: controller.signal }).catch((failure: unknown) => failure);
    expect(error).toMatchObject({ message: 'caller gave up' });
    expect(proxy.requests).toHaveLength(1);
  });

  it('throws ResponseFormatError for a 2xx that is not JSON, and NetworkError after resets only', async () => {
    const html = await flaky(['html']);
    await expect(client(html.url).getStats()).rejects.toBeInstanceOf(ResponseFormatError);
    await html.close();
    const resets = await flaky(['reset', 'reset']);
    await expect(client(resets.url, { retry: { attempts: 2, base_delay_ms: 10 } }).getStats()).rejects.toBeInstanceOf(NetworkError);
  });
});
