/**
 * Resource exhaustion against the real process: 2,000 idle keep-alive connections, slow-header and
 * slow-body clients that dribble bytes, and a flood of requests with forged tokens from one address.
 * Throughout, a well-behaved client gets its 200s and 202s; the timeouts close the slow clients; the
 * forged flood is cut by the per-address budget (429 before any signature check once it is spent).
 * Past HTTP_CONNECTIONS_MAX, new connections are closed at once, until some close. After it all,
 * every acknowledged transaction is in the chain and the chain audit passes. Bounds are generous: this
 * checks behaviour, not speed.
 */
import fs from 'node:fs';
import net from 'node:net';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { auditChain } from '../support/store-chain-audit.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';

const IDLE_CONNECTIONS = 2000;
const SLOW_CLIENTS = 10;
const CAPPED_CONNECTIONS_MAX = 50;
const EXTRA_CONNECTIONS = 20;
const AUTH_FAILURES_MAX = 20;
const FORGED_REQUESTS = 300;
const HEADERS_TIMEOUT_MS = 3000;
const REQUEST_TIMEOUT_MS = 6000;
/** Generous: the timeout, Node's once-a-second check, and a loaded machine. */
const SLOW_CLOSED_WITHIN_MS = REQUEST_TIMEOUT_MS + 15_000;
const DRIBBLE_INTERVAL_MS = 500;
/** Generous: the most resident memory the service may reach under all of it (docs/operations.md states what was measured). */
const PEAK_RSS_BYTES_MAX = 1024 * 1024 * 1024;

type Held = { socket: net.Socket; closed: Promise<number>; received: () => string };

/** A loopback connection to the service that records what it receives and when it is closed. */
function connect(port: number, local_address = '127.0.0.1'): Promise<Held> {
  return new Promise((resolve, reject) => {
    let received = '';
    const opened_ms = Date.now();
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: local_address });
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - opened_ms)));
    socket.once('error', () => undefined);
    socket.once('connect', () => resolve({ socket, closed, received: () => received }));
    socket.once('error', reject);
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function waitFor(condition: () => boolean, timeout_ms: number, what: string): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} not within ${timeout_ms} ms`);
    await delay(20);
  }
}

describe('resource exhaustion', () => {
  let service: ServiceProcess;
  const held: Held[] = [];

  beforeAll(async () => {
    service = await ServiceProcess.start({
      env: {
        JWT_SECRET: TEST_SECRET,
        RATE_LIMIT_MAX: '10000000',
        AUTH_FAILURES_MAX: String(AUTH_FAILURES_MAX),
        HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
        HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '120000',
      },
    });
  });
  afterAll(async () => {
    for (const connection of held) connection.socket.destroy();
    await service?.close();
  });

  it('keeps answering a well-behaved client while idle, slow and forged clients press on it', async () => {
    const port = Number(new URL(service.url).port);
    const admin = await service.token('treasury', { admin: true });

    // The well-behaved client: reads and submissions, one after another, for the whole test.
    const good: number[] = [];
    const acknowledged: string[] = [];
    let running = true;
    const good_client = (async () => {
      for (let index = 0; running; index += 1) {
        const submit = index % 5 === 0;
        const response = await fetch(`${service.url}${submit ? '/api/transactions/submit' : '/api/blocks?limit=1'}`, {
          method: submit ? 'POST' : 'GET',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          ...(submit ? { body: JSON.stringify({ from: 'treasury', to: `user-${index % 7}`, amount: 1, token: 'USDG', type: 'mint' }) } : {}),
          signal: AbortSignal.timeout(20_000),
        });
        const body = (await response.json()) as { tx_hash?: string };
        good.push(response.status);
        if (submit && response.status === 202) acknowledged.push(body.tx_hash as string);
        await delay(20);
      }
    })();

    // 2,000 idle keep-alive connections: one request each, then silence.
    for (let start = 0; start < IDLE_CONNECTIONS; start += 200) {
      const batch = await Promise.all(Array.from({ length: Math.min(200, IDLE_CONNECTIONS - start) }, () => connect(port)));
      for (const connection of batch) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await waitFor(() => batch.every((connection) => connection.received().includes('\r\n\r\n')), 30_000, 'answers to the idle connections');
      for (const connection of batch) expect(connection.received()).toMatch(/^HTTP\/1\.1 200/);
      held.push(...batch);
    }

    // Slow clients: headers a line at a time, or a body a byte at a time, never finished.
    const slow_headers = await Promise.all(Array.from({ length: SLOW_CLIENTS }, () => connect(port)));
    const slow_bodies = await Promise.all(Array.from({ length: SLOW_CLIENTS }, () => connect(port)));
    for (const connection of slow_headers) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    for (const connection of slow_bodies) {
      connection.socket.write(
        `POST /api/transactions/submit HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin}\r\n`
        + 'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
      );
    }
    const dribble = setInterval(() => {
      for (const connection of slow_headers) if (!connection.socket.destroyed) connection.socket.write('X-Slow: a\r\n');
      for (const connection of slow_bodies) if (!connection.socket.destroyed) connection.socket.write(' ');
    }, DRIBBLE_INTERVAL_MS);

    // A flood of forged tokens from another loopback address, ten at a time.
    const forged = await new SignJWT({ scope: 'ledger:admin' }).setProtectedHeader({ alg: 'HS256' }).setSubject('mallory')
      .setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode('not-the-secret-but-32-bytes-long!!'));
    const flood: number[] = [];
    const flood_done = (async () => {
      for (let start = 0; start < FORGED_REQUESTS; start += 10) {
        flood.push(...(await Promise.all(Array.from({ length: 10 }, () => forgedRequest(port, forged)))));
      }
    })();

    try {
      const closed = await Promise.all([...slow_headers, ...slow_bodies].map((connection) => connection.closed));
      for (const ms of closed) expect(ms).toBeLessThan(SLOW_CLOSED_WITHIN_MS);
      // Headers not finished in time: 408 or closed; a body not finished within the request timeout: the same.
      for (const connection of [...slow_headers, ...slow_bodies]) expect(connection.received()).not.toMatch(/^HTTP\/1\.1 (2|5)\d\d/);
      await flood_done;
    } finally {
      clearInterval(dribble);
    }
    // The flood: the budget's 401s, then 429 without a look at the token.
    expect(flood.filter((status) => status === 401).length).toBeLessThanOrEqual(AUTH_FAILURES_MAX);
    expect(flood.filter((status) => status === 429).length).toBeGreaterThanOrEqual(FORGED_REQUESTS - AUTH_FAILURES_MAX);
    expect(flood.filter((status) => status !== 401 && status !== 429)).toEqual([]);

    // Memory stayed bounded (VmHWM: the peak resident set of the process).
    const status = fs.readFileSync(`/proc/${service.pid}/status`, 'utf8');
    const peak_rss_bytes = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    expect(peak_rss_bytes).toBeGreaterThan(0);
    expect(peak_rss_bytes).toBeLessThan(PEAK_RSS_BYTES_MAX);

    // The idle connections are still held (closed only by the keep-alive timeout), and the good client was never refused.
    expect(held.filter((connection) => connection.socket.destroyed).length).toBe(0);
    running = false;
    await good_client;
    expect(good.length).toBeGreaterThan(20);
    expect(good.filter((status) => status !== 200 && status !== 202)).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(0);

    // Every acknowledged transaction is sealed, and the chain audits.
    for (const connection of held) connection.socket.destroy();
    expect(await service.stop()).toEqual({ code: 0, signal: null });
    const store = SqliteStore.open({ path: service.database_path });
    try {
      const audit = await auditChain(store);
      for (const tx_hash of acknowledged) expect(audit.sealed.has(tx_hash), tx_hash).toBe(true);
    } finally {
      await store.close();
    }
  }, 180_000);
});

/** One request with a forged token from 127.0.0.2 (another client address than the good client's); its status. */
function forgedRequest(port: number, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' }, () => {
      socket.write(`GET /api/blocks?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
    });
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.once('error', (error) => (received === '' ? reject(error) : undefined));
    socket.once('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)));
  });
}

describe('the connection cap', () => {
  let service: ServiceProcess;
  const held: Held[] = [];

  beforeAll(async () => {
    service = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, HTTP_CONNECTIONS_MAX: String(CAPPED_CONNECTIONS_MAX) } });
  });
  afterAll(async () => {
    for (const connection of held) connection.socket.destroy();
    await service?.close();
  });

  it('closes connections past HTTP_CONNECTIONS_MAX at once, unanswered, and takes new ones when some close', async () => {
    const port = Number(new URL(service.url).port);
    held.push(...(await Promise.all(Array.from({ length: CAPPED_CONNECTIONS_MAX }, () => connect(port)))));
    await delay(200);
    const extras = await Promise.all(Array.from({ length: EXTRA_CONNECTIONS }, () => connect(port)));
    for (const connection of extras) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const closed_ms = await Promise.all(extras.map((connection) => connection.closed));
    for (const ms of closed_ms) expect(ms).toBeLessThan(5000);
    for (const connection of extras) expect(connection.received()).toBe('');

    for (const connection of held.splice(0)) connection.socket.destroy();
    await delay(200);
    const response = await fetch(`${service.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    expect(response.status).toBe(200);
  }, 60_000);
});
