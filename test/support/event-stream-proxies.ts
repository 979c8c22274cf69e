/**
 * Loopback proxies in front of the real service for event stream tests: a TCP proxy whose connections
 * a test can cut mid-stream (and count), and an HTTP proxy that streams `GET /api/events` through a
 * line rewriter (a lying server) or answers it with a problem first.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { forward, pass, problemBody } from './test-double.js';

export type CuttingProxy = {
  url: string;
  /** The first bytes each connection sent (its request head), in order. */
  requests: string[];
  /** Connections open now that carried a request (a client may also open a spare one that stays idle). */
  open(): number;
  /** Destroys every open connection (both sides), as a network failure would. */
  cut(): void;
  close(): Promise<void>;
};

/** `cut_first_after_bytes`: the first connection is cut once that many bytes of the answer went through (mid-message, likely). */
export async function startCuttingProxy(upstream_url: string, options: { cut_first_after_bytes?: number } = {}): Promise<CuttingProxy> {
  const upstream = new URL(upstream_url);
  const sockets = new Set<net.Socket>();
  const clients = new Set<net.Socket>();
  const requests: string[] = [];
  let connections = 0;
  const server = net.createServer((client) => {
    const target = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client);
    sockets.add(target);
    let first = true;
    client.on('data', (chunk: Buffer) => {
      if (first) {
        requests.push(chunk.toString('latin1'));
        if (sockets.has(client)) clients.add(client);
      }
      first = false;
    });
    client.pipe(target);
    connections += 1;
    let budget = connections === 1 ? (options.cut_first_after_bytes ?? Infinity) : Infinity;
    target.on('data', (chunk: Buffer) => {
      if (budget <= 0) return;
      if (chunk.length < budget) {
        budget -= chunk.length;
        client.write(chunk);
        return;
      }
      client.write(chunk.subarray(0, budget), () => end());
      budget = 0;
    });
    const end = () => {
      client.destroy();
      target.destroy();
      sockets.delete(client);
      sockets.delete(target);
      clients.delete(client);
    };
    client.on('end', end).on('close', end).on('error', end);
    target.on('end', end).on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    open: () => clients.size,
    cut,
    close: () => new Promise<void>((resolve) => {
      cut();
      server.close(() => resolve());
    }),
  };
}

export type StreamProxy = {
  url: string;
  /** Rewrites each line of the event stream (without its line ending); return it unchanged to pass it on. */
  rewrite: (line: string) => string;
  /** Answers this many next `GET /api/events` with `fail_status` (and `fail_headers`) instead of the stream. */
  failures: number;
  fail_status: number;
  fail_code: string;
  fail_headers: Record<string, string>;
  /** The `Last-Event-ID` of each events request (null without one), in order. */
  last_event_ids: (string | null)[];
  /** When each events request arrived (`Date.now()`), in order. */
  arrivals_ms: number[];
  close(): Promise<void>;
};

export async function startStreamProxy(upstream_url: string): Promise<StreamProxy> {
  const state: StreamProxy = {
    url: '', rewrite: (line) => line, failures: 0, fail_status: 503, fail_code: 'too_many_streams', fail_headers: {}, last_event_ids: [], arrivals_ms: [], close: async () => undefined,
  };
  const server = http.createServer((request, response) => {
    const path = request.url ?? '/';
    if (!path.startsWith('/api/events')) {
      void forwardBuffered(upstream_url, request, response);
      return;
    }
    const last_event_id = request.headers['last-event-id'];
    state.last_event_ids.push(typeof last_event_id === 'string' ? last_event_id : null);
    state.arrivals_ms.push(Date.now());
    if (state.failures > 0) {
      state.failures -= 1;
      response.writeHead(state.fail_status, { 'content-type': 'application/problem+json', ...state.fail_headers });
      response.end(problemBody(state.fail_status, state.fail_code));
      return;
    }
    void streamThrough(upstream_url, request, response, (line) => state.rewrite(line));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return state;
}

async function forwardBuffered(upstream_url: string, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const seen = { method: request.method ?? 'GET', path: request.url ?? '/', headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at_ms: Date.now() };
  pass(response, await forward(upstream_url, seen));
}

async function streamThrough(upstream_url: string, request: http.IncomingMessage, response: http.ServerResponse, rewrite: (line: string) => string): Promise<void> {
  const aborter = new AbortController();
  response.on('close', () => aborter.abort());
  const headers: Record<string, string> = {};
  for (const name of ['authorization', 'x-api-key', 'accept', 'last-event-id']) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  try {
    const upstream = await fetch(`${upstream_url}${request.url ?? '/'}`, { headers, signal: aborter.signal });
    response.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'text/plain' });
    if (upstream.body === null) {
      response.end();
      return;
    }
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of upstream.body) {
      pending += decoder.decode(chunk as Uint8Array, { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      if (lines.length > 0) response.write(lines.map((line) => `${rewrite(line)}\n`).join(''));
    }
    response.end(pending);
  } catch {
    response.destroy();
  }
}
