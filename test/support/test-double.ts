/**
 * Loopback HTTP test doubles for the SDK: a server whose every answer a test decides (fail, reset the
 * connection, hang, or forward to the real service and pass on, drop or rewrite its answer).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type SeenRequest = { method: string; path: string; headers: http.IncomingHttpHeaders; body: string; at_ms: number };
export type Upstream = { status: number; headers: Headers; body: string };
export type Handler = (request: SeenRequest, response: ServerResponse, index: number) => Promise<void> | void;

export type Double = {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
};

const BODY_BYTES_MAX = 1024 * 1024;

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request) {
    bytes += (chunk as Buffer).length;
    if (bytes > BODY_BYTES_MAX) throw new Error('test double: body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function startDouble(handler: Handler): Promise<Double> {
  const requests: SeenRequest[] = [];
  const server = http.createServer((request, response) => {
    void (async () => {
      const seen: SeenRequest = { method: request.method ?? 'GET', path: request.url ?? '/', headers: request.headers, body: await readBody(request), at_ms: Date.now() };
      requests.push(seen);
      await handler(seen, response, requests.length - 1);
    })().catch((error: unknown) => {
      response.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Sends the request the double received on to the real service. */
export async function forward(upstream_url: string, request: SeenRequest): Promise<Upstream> {
  const headers: Record<string, string> = {};
  for (const name of ['authorization', 'x-api-key', 'content-type', 'idempotency-key', 'accept']) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const response = await fetch(`${upstream_url}${request.path}`, {
    method: request.method,
    headers,
    ...(request.method === 'GET' || request.method === 'HEAD' ? {} : { body: request.body }),
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

export function send(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  const content_type = status >= 400 ? 'application/problem+json' : 'application/json; charset=utf-8';
  response.writeHead(status, { 'content-type': content_type, ...headers });
  response.end(body);
}

/** Passes the real service's answer on unchanged (status, body and the headers the SDK reads). */
export function pass(response: ServerResponse, upstream: Upstream, body = upstream.body): void {
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'retry-after', 'idempotent-replayed', 'location', 'www-authenticate']) {
    const value = upstream.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  response.writeHead(upstream.status, headers);
  response.end(body);
}

export function problemBody(status: number, code: string): string {
  return JSON.stringify({ type: `urn:tabula:problem:${code}`, title: http.STATUS_CODES[status], status, detail: `test double answered ${code}`, code });
}
