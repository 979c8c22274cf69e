/**
 * One webhook request against real loopback servers: the headers and body sent, 2xx versus anything
 * else, a receiver that never answers (timeout), a lookup that hangs (inside the same timeout), one
 * that answers without end (read at most 4 KiB), redirects not followed, and addresses refused before
 * any connection.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AddressGuard } from '../../src/webhooks/address-guard.js';
import { WebhookSender } from '../../src/webhooks/webhook-sender.js';

type Seen = { method: string; headers: http.IncomingHttpHeaders; body: string };

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: (request: http.IncomingMessage, response: http.ServerResponse, seen: Seen[]) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({ method: request.method ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      handler(request, response, seen);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, seen };
}

const sender = new WebhookSender(new AddressGuard(['127.0.0.1']), 500);
const request = (url: string) => ({ url, body: '{"id":"evt_1_aaaaaaaaaaaa"}', headers: { 'webhook-id': 'evt_1_aaaaaaaaaaaa', 'webhook-timestamp': '1795547634', 'webhook-signature': 'v1,abc=' } });

describe('the webhook sender', () => {
  it('POSTs the body and the headers as given, and counts a 2xx as delivered', async () => {
    const { url, seen } = await serve((_request, response) => response.writeHead(200).end('ok'));
    const result = await sender.send(request(url));
    expect(result).toMatchObject({ outcome: 'delivered', response_status: 200, error: null });
    expect(result.latency_ms).toBeGreaterThanOrEqual(0);
    expect(seen[0]).toMatchObject({ method: 'POST', body: '{"id":"evt_1_aaaaaaaaaaaa"}' });
    expect(seen[0]?.headers).toMatchObject({
      'content-type': 'application/json', 'webhook-id': 'evt_1_aaaaaaaaaaaa', 'webhook-timestamp': '1795547634', 'webhook-signature': 'v1,abc=',
    });
  });

  it('counts any other status as failed, and does not follow a redirect', async () => {
    const target = await serve((_request, response) => response.writeHead(204).end());
    const { url } = await serve((_request, response) => response.writeHead(302, { location: target.url }).end());
    expect(await sender.send(request(url))).toMatchObject({ outcome: 'failed', response_status: 302 });
    expect(target.seen).toHaveLength(0);
    const unavailable = await serve((_request, response) => response.writeHead(503).end());
    expect(await sender.send(request(unavailable.url))).toMatchObject({ outcome: 'failed', response_status: 503 });
  });

  it('gives up on a receiver that never answers', async () => {
    const { url } = await serve(() => undefined);
    const result = await sender.send(request(url));
    expect(result).toMatchObject({ outcome: 'failed', response_status: null });
    expect(result.error).toMatch(/no complete answer within 500 ms/);
  });

  it('counts the name\'s lookup in the timeout: a lookup that hangs is a failed attempt, cut at the timeout', async () => {
    const hanging = new WebhookSender(new AddressGuard([], () => new Promise(() => undefined)), 300);
    const started = Date.now();
    const result = await hanging.send(request('https://receiver.example/hook'));
    expect(result).toMatchObject({ outcome: 'failed', response_status: null, error: 'receiver.example was not resolved within 300 ms' });
    expect(Date.now() - started).toBeLessThan(3000);
    // A slow lookup leaves the request only what is left of the timeout.
    const { url } = await serve(() => undefined);
    const lookup_200_ms = () => new Promise<Array<{ address: string; family: number }>>((resolve) => setTimeout(() => resolve([{ address: '127.0.0.1', family: 4 }]), 200));
    const slow = new WebhookSender(new AddressGuard(['slow.test'], lookup_200_ms), 400);
    const slow_started = Date.now();
    const cut = await slow.send(request(url.replace('127.0.0.1', 'slow.test')));
    expect(cut).toMatchObject({ outcome: 'failed', error: 'no complete answer within 400 ms' });
    expect(Date.now() - slow_started).toBeLessThan(1500);
  });

  it('reads at most a few KiB of an answer that does not end, then drops it', async () => {
    let written = 0;
    const { url } = await serve((_request, response) => {
      response.writeHead(200);
      const chunk = Buffer.alloc(1024, 'x');
      const pump = () => {
        while (written < 64 * 1024 * 1024 && response.write(chunk)) written += chunk.length;
        if (written < 64 * 1024 * 1024) response.once('drain', pump);
      };
      pump();
    });
    const result = await sender.send(request(url));
    expect(result).toMatchObject({ outcome: 'delivered', response_status: 200 });
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('refuses, without connecting, an address that is not allowed and a name that does not resolve', async () => {
    const { url, seen } = await serve((_request, response) => response.writeHead(204).end());
    const strict = new WebhookSender(new AddressGuard([]), 500);
    expect(await strict.send(request(url))).toMatchObject({ outcome: 'refused', response_status: null });
    expect(await strict.send(request(url.replace('127.0.0.1', '127.0.0.2')))).toMatchObject({ outcome: 'refused' });
    expect(await sender.send(request(url.replace('127.0.0.1', '127.0.0.2')))).toMatchObject({ outcome: 'refused' });
    const missing = await sender.send(request('http://no-such-host.invalid/hook'));
    expect(missing).toMatchObject({ outcome: 'refused' });
    expect(missing.error).toMatch(/does not resolve/);
    expect(seen).toHaveLength(0);
  });

  it('cuts a request short when told to (at shutdown)', async () => {
    const { url } = await serve(() => undefined);
    const controller = new AbortController();
    const pending = sender.send(request(url), controller.signal);
    setTimeout(() => controller.abort(), 20);
    expect((await pending).outcome).toBe('failed');
  });
});
