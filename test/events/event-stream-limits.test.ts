/**
 * What bounds the event log's consumers: a cursor past the retention gets 410 `cursor_expired` (never
 * a silent gap), and a consumer that stops reading is cut off with a final comment instead of being
 * buffered without bound.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CursorExpiredError } from '../../src/events/event-hub.js';
import type { Clock } from '../../src/service/clock.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

const HOUR_MS = 3600_000;

describe('event log limits', () => {
  let ledger: TestTabula | null = null;
  afterEach(async () => {
    await ledger?.close();
    ledger = null;
  });

  it('refuses a cursor whose next event is older than the retention with 410 cursor_expired', async () => {
    let now_ms = Date.now();
    const clock: Clock = { now_ms: () => now_ms };
    ledger = await startTestTabula({ EVENTS_RETENTION_S: '7200' }, { clock, store: 'sqlite' });
    const admin = await ledger.token('issuer', { admin: true });
    const submit = () => ledger!.app.inject({
      method: 'POST', url: '/api/transactions/submit', headers: { authorization: `Bearer ${admin}` },
      payload: { from: 'issuer', to: 'alice', amount: 1, token: 'TAB', type: 'mint' },
    });
    expect((await submit()).statusCode).toBe(202);
    await ledger.producer.sealNext();
    now_ms += 3 * HOUR_MS;
    expect((await submit()).statusCode).toBe(202);
    await ledger.producer.sealNext();

    // Events 1..4 (genesis, the first mint and its block) are older than two hours; 5.. are not.
    await expect(ledger.events.read(0, 10)).rejects.toBeInstanceOf(CursorExpiredError);
    const response = await ledger.app.inject({ method: 'GET', url: '/api/events?after=3', headers: { authorization: `Bearer ${admin}` } });
    expect(response.statusCode).toBe(410);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ status: 410, code: 'cursor_expired', title: 'Gone' });
    const recent = await ledger.events.read(4, 10);
    expect(recent.map((event) => event.type)).toEqual(['transaction.accepted', 'transaction.confirmed', 'block.sealed']);
  });

  it('cuts a consumer that stops reading, with a final comment saying why', async () => {
    ledger = await startTestTabula({ RATE_LIMIT_MAX: '100000' }, { store: 'sqlite', event_stream_limits: { buffered_bytes_max: 64 * 1024, drain_timeout_ms: 500 } });
    const admin = await ledger.token('issuer', { admin: true });
    const address = new URL(await ledger.app.listen({ host: '127.0.0.1', port: 0 }));
    // A consumer that connects and then reads nothing: the kernel's buffers fill, then the server's.
    const socket = net.connect(Number(address.port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /api/events HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${admin}\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.pause();
    const items = Array.from({ length: 1000 }, (_, index) => ({ from: 'issuer', to: `user-${index}`, amount: 1, token: 'TAB', type: 'mint', metadata: { note: 'x'.repeat(400) } }));
    for (let round = 0; round < 8; round += 1) {
      const response = await ledger.app.inject({ method: 'POST', url: '/api/transactions/batch', headers: { authorization: `Bearer ${admin}` }, payload: { transactions: items } });
      expect(response.statusCode).toBe(200);
    }
    // Now read everything that was sent: it must end with the disconnect comment, and the socket closes.
    const received: Buffer[] = [];
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.resume();
    await ended;
    const text = Buffer.concat(received).toString('utf8');
    // The body is not chunked (it ends with the connection): the comment is its last bytes.
    const head = text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase();
    expect(head).not.toContain('transfer-encoding');
    expect(head).toContain('connection: close');
    expect(text.slice(-200)).toMatch(/: disconnected: slow consumer: [^\n]*\n\n$/);
    // The service keeps serving others meanwhile.
    const stats = await ledger.app.inject({ method: 'GET', url: '/api/stats', headers: { authorization: `Bearer ${admin}` } });
    expect(stats.statusCode).toBe(200);
  });
});
