/**
 * `GET /api/events` on a listening in-process ledger (a stream cannot go through `inject`), on both
 * stores: order and content of the events, resuming with `after` and `Last-Event-ID` without gap or
 * duplicate, filters, the errors, the stream caps, and a slow consumer being cut off.
 */
import http from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testStoreKind } from '../support/test-database.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

type Message = { id: string; event: string; data: { id: string; sequence: number; type: string; occurred_at: number; schema_version: number; data: Record<string, unknown> } };

/**
 * Reads SSE messages from `path` on a connection of its own until `count` have arrived (or `timeout_ms`
 * passes), then closes it, as a consumer that stops reading would.
 */
function collect(base: string, path: string, token: string, count: number, headers: Record<string, string> = {}, timeout_ms = 5000): Promise<Message[]> {
  return new Promise((resolve, reject) => {
    const messages: Message[] = [];
    const request = http.get(`${base}${path}`, { agent: false, headers: { authorization: `Bearer ${token}`, ...headers } }, (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`status ${response.statusCode}`));
        request.destroy();
        return;
      }
      expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = new Map(block.split('\n').filter((line) => !line.startsWith(':')).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
          if (!fields.has('data')) continue;
          messages.push({ id: fields.get('id') as string, event: fields.get('event') as string, data: JSON.parse(fields.get('data') as string) as Message['data'] });
          if (messages.length >= count) finish();
        }
      });
      response.on('end', finish);
    });
    const timer = setTimeout(finish, timeout_ms);
    request.on('error', () => finish());
    function finish(): void {
      clearTimeout(timer);
      request.destroy();
      resolve(messages);
    }
  });
}

describe(`the event stream (${testStoreKind()})`, () => {
  let ledger: TestTabula;
  let base: string;
  let admin: string;

  beforeEach(async () => {
    ledger = await startTestTabula({ EVENTS_STREAMS_PER_CALLER_MAX: '3' });
    const address = await ledger.app.listen({ host: '127.0.0.1', port: 0 });
    base = address;
    admin = await ledger.token('issuer', { admin: true });
  });
  afterEach(async () => {
    await ledger.close();
  });

  async function submit(body: Record<string, unknown>, token = admin): Promise<string> {
    const response = await fetch(`${base}/api/transactions/submit`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { tx_hash: string }).tx_hash;
  }

  it('streams genesis, acceptances, outcomes and block.sealed in sequence order, each as the API shows it', async () => {
    const mint = await submit({ from: 'issuer', to: 'alice', amount: '12.5', token: 'TAB', type: 'mint' });
    const overdraft = await submit({ from: 'bob', to: 'alice', amount: 1, token: 'TAB', type: 'transfer' });
    await ledger.producer.sealNext();
    const confirmed = await (await fetch(`${base}/api/transactions/${mint}`, { headers: { authorization: `Bearer ${admin}` } })).json();
    const messages = await collect(base, '/api/events?after=0', admin, 6);
    expect(messages.map((message) => message.event)).toEqual([
      'block.sealed', 'transaction.accepted', 'transaction.accepted', 'transaction.confirmed', 'transaction.failed', 'block.sealed',
    ]);
    expect(messages.map((message) => message.data.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const message of messages) {
      expect(message.id).toBe(message.data.id);
      expect(message.id).toMatch(new RegExp(`^evt_${message.data.sequence}_[0-9a-f]{12}$`));
      expect(message.data.schema_version).toBe(1);
    }
    expect(messages[1]?.data.data).toMatchObject({ tx_hash: mint, status: 'pending', amount: 12.5, block_number: null, block_hash: null });
    expect(messages[3]?.data.data).toEqual(confirmed);
    expect(messages[4]?.data.data).toMatchObject({ tx_hash: overdraft, status: 'failed', error: 'insufficient_funds' });
    expect(messages[5]?.data.data).toMatchObject({ number: 1, transactions_count: 2 });
  });

  it('sends the same bytes on every read, and resumes after a cursor or Last-Event-ID with no gap or duplicate', async () => {
    for (let index = 0; index < 5; index += 1) await submit({ from: 'issuer', to: `user-${index}`, amount: 1, token: 'USDG', type: 'mint' });
    await ledger.producer.sealNext();
    const whole = await collect(base, '/api/events?after=0', admin, 12);
    expect(whole).toHaveLength(12);
    const again = await collect(base, '/api/events?after=0', admin, 12);
    expect(again).toEqual(whole);
    const resumed = await collect(base, '/api/events?after=4', admin, 8);
    expect(resumed).toEqual(whole.slice(4));
    const by_id = await collect(base, '/api/events?after=1', admin, 5, { 'last-event-id': (whole[6] as Message).id });
    expect(by_id).toEqual(whole.slice(7));
  });

  it('waits at the head and delivers what is committed next', async () => {
    const live = collect(base, '/api/events', admin, 3);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const hash = await submit({ from: 'issuer', to: 'alice', amount: 2, token: 'TAB', type: 'mint' });
    await ledger.producer.sealNext();
    const messages = await live;
    expect(messages.map((message) => message.event)).toEqual(['transaction.accepted', 'transaction.confirmed', 'block.sealed']);
    expect(messages[0]?.data.data).toMatchObject({ tx_hash: hash });
  });

  it('filters by type and by account', async () => {
    await submit({ from: 'issuer', to: 'alice', amount: 2, token: 'TAB', type: 'mint' });
    await submit({ from: 'issuer', to: 'bob', amount: 2, token: 'TAB', type: 'mint' });
    await ledger.producer.sealNext();
    const blocks = await collect(base, '/api/events?after=0&types=block.sealed', admin, 2);
    expect(blocks.map((message) => message.data.sequence)).toEqual([1, 6]);
    const bob = await collect(base, '/api/events?after=0&account=bob', admin, 2);
    expect(bob.map((message) => [message.event, message.data.data.to])).toEqual([['transaction.accepted', 'bob'], ['transaction.confirmed', 'bob']]);
  });

  it('refuses bad cursors and filters with problems, and caps the streams per caller', async () => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, { headers: { authorization: `Bearer ${admin}`, ...headers } });
    for (const [path, headers, code] of [
      ['/api/events?after=-1', {}, 'invalid_event_cursor'],
      ['/api/events?after=1.5', {}, 'invalid_event_cursor'],
      ['/api/events?after=99999', {}, 'invalid_event_cursor'],
      ['/api/events', { 'last-event-id': 'nope' }, 'invalid_event_cursor'],
      ['/api/events?types=transaction.nope', {}, 'invalid_event_filter'],
      ['/api/events?types=', {}, 'invalid_event_filter'],
      ['/api/events?account=a%20b', {}, 'invalid_event_filter'],
    ] as const) {
      const response = await get(path, headers);
      expect(response.status, path).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await response.json()) as { code: string }).code, path).toBe(code);
    }
    expect((await fetch(`${base}/api/events`)).status).toBe(401);

    const streams = await Promise.all([1, 2, 3].map(async () => {
      const controller = new AbortController();
      const response = await fetch(`${base}/api/events`, { headers: { authorization: `Bearer ${admin}` }, signal: controller.signal });
      expect(response.status).toBe(200);
      return controller;
    }));
    const exposition = (await ledger.metrics.exposition()).body;
    expect(exposition).toMatch(/^tabula_event_streams_open 3$/m);
    expect(exposition).toMatch(/^tabula_events_head_sequence 1$/m);
    const refused = await get('/api/events');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { code: string }).code).toBe('too_many_streams');
    expect((await fetch(`${base}/api/events`, { headers: { authorization: `Bearer ${await ledger.token('someone-else')}` } })).status).toBe(200);
    for (const controller of streams) controller.abort();
  });

  it('answers HEAD at once with the stream\'s headers and no body, without holding a stream\'s place', async () => {
    const head = (path: string) => fetch(`${base}${path}`, { method: 'HEAD', headers: { authorization: `Bearer ${admin}` }, signal: AbortSignal.timeout(3000) });
    // More HEADs than the caller may hold streams (3): none of them holds one.
    for (let index = 0; index < 5; index += 1) {
      const response = await head('/api/events?after=0');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(response.headers.get('cache-control')).toBe('no-cache, no-transform');
      expect(await response.text()).toBe('');
    }
    expect(((await ledger.metrics.exposition()).body)).toMatch(/^tabula_event_streams_open 0$/m);
    // What a GET would refuse, HEAD refuses too (without the body).
    expect((await head('/api/events?after=-1')).status).toBe(400);
    expect((await fetch(`${base}/api/events`, { method: 'HEAD' })).status).toBe(401);
    const messages = await collect(base, '/api/events?after=0', admin, 1);
    expect(messages[0]?.event).toBe('block.sealed');
  });
});
