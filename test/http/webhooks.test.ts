/**
 * `/api/webhooks` through `app.inject()`, on both stores: admins only, creation with the secret shown
 * once, validation codes, paging, change, rotation, deletion, the endpoint limit, and — with a real
 * loopback receiver that checks every signature — delivery, the attempts list, retry and replay.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { testStoreKind } from '../support/test-database.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

type Endpoint = Record<string, unknown> & { id: string; secret?: string; status: string; last_sequence: number };

describe(`webhook endpoints (${testStoreKind()})`, () => {
  let ledger: TestTabula;
  let admin: string;
  let user: string;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    ledger = await startTestTabula({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '2000' });
    admin = await ledger.token('treasury', { admin: true });
    user = await ledger.token('alice');
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await ledger.close();
    await receiver.close();
  });

  async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, token = admin) {
    const response = await ledger.app.inject({
      method, url, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return { status: response.statusCode, body: response.body === '' ? null : (response.json() as Record<string, unknown>), headers: response.headers };
  }

  async function create(body: Record<string, unknown>): Promise<Endpoint> {
    const created = await call('POST', '/api/webhooks', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as Endpoint;
  }

  async function submit(body: Record<string, unknown>): Promise<string> {
    const response = await ledger.app.inject({ method: 'POST', url: '/api/transactions/submit', headers: { authorization: `Bearer ${admin}` }, payload: body });
    expect(response.statusCode).toBe(202);
    return (response.json() as { tx_hash: string }).tx_hash;
  }

  it('refuses non-admins on every route with admin_required', async () => {
    const endpoint = await create({ url: 'https://hooks.example.com/a', types: ['block.sealed'] });
    const routes: Array<['GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown?]> = [
      ['POST', '/api/webhooks', { url: 'https://hooks.example.com/b' }], ['GET', '/api/webhooks'], ['GET', `/api/webhooks/${endpoint.id}`],
      ['PATCH', `/api/webhooks/${endpoint.id}`, { description: 'x' }], ['DELETE', `/api/webhooks/${endpoint.id}`],
      ['POST', `/api/webhooks/${endpoint.id}/rotate-secret`], ['GET', `/api/webhooks/${endpoint.id}/deliveries`],
      ['POST', `/api/webhooks/${endpoint.id}/deliveries/evt_1_aaaaaaaaaaaa/retry`], ['POST', `/api/webhooks/${endpoint.id}/replay?after=0`],
    ];
    for (const [method, url, body] of routes) {
      const answer = await call(method, url, body, user);
      expect(answer.status, `${method} ${url}`).toBe(403);
      expect(answer.body?.code).toBe('admin_required');
    }
    expect((await call('GET', `/api/webhooks/${endpoint.id}`)).status).toBe(200);
    const anonymous = await ledger.app.inject({ method: 'GET', url: '/api/webhooks' });
    expect(anonymous.statusCode).toBe(401);
    await call('DELETE', `/api/webhooks/${endpoint.id}`);
  });

  it('creates an endpoint, shows its secret only in the answer to the creation, and lists it', async () => {
    const created = await call('POST', '/api/webhooks', { url: 'https://hooks.example.com/tabula', types: ['transaction.confirmed', 'transaction.confirmed'], accounts: ['alice'], description: 'settlement' });
    expect(created.status).toBe(201);
    const endpoint = created.body as Endpoint;
    expect(endpoint).toMatchObject({
      url: 'https://hooks.example.com/tabula', types: ['transaction.confirmed'], accounts: ['alice'], description: 'settlement', status: 'active',
      disabled_reason: null, failed_attempts: 0, previous_secret_expires_at_ms: null,
    });
    expect(endpoint.id).toMatch(/^wh_[0-9a-f]{20}$/);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from((endpoint.secret as string).slice(6), 'base64')).toHaveLength(32);
    expect(created.headers.location).toBe(`/api/webhooks/${endpoint.id}`);
    const read = await call('GET', `/api/webhooks/${endpoint.id}`);
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('secret');
    expect(JSON.stringify(read.body)).not.toContain((endpoint.secret as string).slice(6));
    const { secret: _secret, ...shown } = endpoint;
    expect(read.body).toEqual(shown);
    const list = await call('GET', '/api/webhooks');
    expect((list.body?.webhooks as Endpoint[]).map((item) => item.id)).toContain(endpoint.id);
    expect(JSON.stringify(list.body)).not.toContain('whsec_');
    await call('DELETE', `/api/webhooks/${endpoint.id}`);
  });

  it('refuses bad input with a stable 4xx code and stores nothing', async () => {
    const before = ((await call('GET', '/api/webhooks')).body?.webhooks as unknown[]).length;
    const cases: Array<[unknown, string]> = [
      [{}, 'validation_failed'],
      [{ url: 'ftp://hooks.example.com/' }, 'webhook_url_refused'],
      [{ url: 'not a url' }, 'webhook_url_refused'],
      [{ url: 'http://127.0.0.2:9999/' }, 'webhook_url_refused'],
      [{ url: 'http://[::1]:9999/' }, 'webhook_url_refused'],
      [{ url: 'http://169.254.169.254/' }, 'webhook_url_refused'],
      [{ url: 'http://10.0.0.8/' }, 'webhook_url_refused'],
      [{ url: `https://hooks.example.com/${'a'.repeat(2048)}` }, 'validation_failed'],
      [{ url: 'https://hooks.example.com/', types: ['transaction.exploded'] }, 'validation_failed'],
      [{ url: 'https://hooks.example.com/', types: [] }, 'validation_failed'],
      [{ url: 'https://hooks.example.com/', accounts: Array.from({ length: 101 }, (_, index) => `u${index}`) }, 'validation_failed'],
      [{ url: 'https://hooks.example.com/', accounts: ['has space'] }, 'invalid_user_id'],
      [{ url: 'https://hooks.example.com/', description: 'd'.repeat(501) }, 'validation_failed'],
      [{ url: 'https://hooks.example.com/', secret: 'whsec_mine' }, 'validation_failed'],
      [{ url: 42 }, 'validation_failed'],
    ];
    for (const [body, code] of cases) {
      const answer = await call('POST', '/api/webhooks', body);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(answer.body?.code, JSON.stringify(body).slice(0, 80)).toBe(code);
    }
    const malformed = await ledger.app.inject({ method: 'POST', url: '/api/webhooks', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, payload: '{"url":' });
    expect(malformed.json()).toMatchObject({ code: 'malformed_json' });
    expect(((await call('GET', '/api/webhooks')).body?.webhooks as unknown[]).length).toBe(before);
    expect((await call('GET', '/api/webhooks?limit=0')).body?.code).toBe('invalid_pagination');
    expect((await call('GET', '/api/webhooks?limit=101')).body?.code).toBe('invalid_pagination');
    expect((await call('GET', '/api/webhooks/wh_nope')).body?.code).toBe('webhook_not_found');
    expect((await call('PATCH', '/api/webhooks/wh_nope', { description: 'x' })).body?.code).toBe('webhook_not_found');
    expect((await call('DELETE', '/api/webhooks/wh_nope')).body?.code).toBe('webhook_not_found');
  });

  it('answers ids, cursors and descriptions no endpoint can have with 4xx on both stores, writing nothing', async () => {
    const endpoint = await create({ url: 'https://hooks.example.com/nul', description: 'kept' });
    const count = async () => ((await call('GET', '/api/webhooks?limit=100')).body?.webhooks as unknown[]).length;
    const before = await count();
    // A NUL reached PostgreSQL as an encoding error (500); an id of another form names no endpoint.
    for (const id of ['a%00b', 'wh_%00', `${endpoint.id}%00`, endpoint.id.toUpperCase(), `${endpoint.id}0`.padEnd(40, '0')]) {
      const routes: Array<['GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown?]> = [
        ['GET', `/api/webhooks/${id}`], ['PATCH', `/api/webhooks/${id}`, { status: 'active' }], ['DELETE', `/api/webhooks/${id}`],
        ['POST', `/api/webhooks/${id}/rotate-secret`], ['GET', `/api/webhooks/${id}/deliveries`],
        ['POST', `/api/webhooks/${id}/deliveries/evt_1_aaaaaaaaaaaa/retry`], ['POST', `/api/webhooks/${id}/replay?after=0`],
      ];
      for (const [method, url, body] of routes) {
        const answer = await call(method, url, body);
        expect(answer.status, `${method} ${url}`).toBe(404);
        expect(answer.body?.code, `${method} ${url}`).toBe('webhook_not_found');
      }
    }
    for (const after of ['%00', 'x', `${endpoint.id}%00`]) {
      expect((await call('GET', `/api/webhooks?after=${after}`)).body?.code, after).toBe('invalid_pagination');
    }
    for (const description of ['a\u0000b', 'line\nbreak', 'tab\there', 'c1\u0085', 'lone \ud800']) {
      const created = await call('POST', '/api/webhooks', { url: 'https://hooks.example.com/d', description });
      expect(created.status, JSON.stringify(description)).toBe(400);
      expect(created.body, JSON.stringify(description)).toMatchObject({ code: 'validation_failed', errors: [{ field: 'description' }] });
      const changed = await call('PATCH', `/api/webhooks/${endpoint.id}`, { description });
      expect(changed.body?.code, JSON.stringify(description)).toBe('validation_failed');
    }
    expect(await count()).toBe(before);
    expect((await call('GET', `/api/webhooks/${endpoint.id}`)).body).toMatchObject({ description: 'kept' });
    expect((await call('GET', `/api/webhooks?after=${endpoint.id}`)).status).toBe(200);
  });

  it('changes, disables, re-enables, rotates the secret of, and deletes an endpoint', async () => {
    const endpoint = await create({ url: 'https://hooks.example.com/c' });
    const changed = await call('PATCH', `/api/webhooks/${endpoint.id}`, { types: ['block.sealed'], accounts: null, description: 'blocks' });
    expect(changed.body).toMatchObject({ types: ['block.sealed'], accounts: null, description: 'blocks' });
    expect((await call('PATCH', `/api/webhooks/${endpoint.id}`, {})).body?.code).toBe('validation_failed');
    expect((await call('PATCH', `/api/webhooks/${endpoint.id}`, { url: 'http://192.168.1.1/' })).body?.code).toBe('webhook_url_refused');
    expect((await call('PATCH', `/api/webhooks/${endpoint.id}`, { status: 'disabled' })).body).toMatchObject({ status: 'disabled', disabled_reason: 'disabled_by_admin' });
    expect((await call('PATCH', `/api/webhooks/${endpoint.id}`, { status: 'active' })).body).toMatchObject({ status: 'active', disabled_reason: null });

    const before = Date.now();
    const rotated = await call('POST', `/api/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body?.secret).toMatch(/^whsec_/);
    expect(rotated.body?.secret).not.toBe(endpoint.secret);
    const expires = rotated.body?.previous_secret_expires_at_ms as number;
    expect(expires).toBeGreaterThanOrEqual(before + 24 * 3600 * 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3600 * 1000);
    expect((await call('GET', `/api/webhooks/${endpoint.id}`)).body).not.toHaveProperty('secret');

    expect((await call('DELETE', `/api/webhooks/${endpoint.id}`)).status).toBe(204);
    expect((await call('GET', `/api/webhooks/${endpoint.id}`)).status).toBe(404);
  });

  it('pages the list and refuses more than 100 endpoints with too_many_webhooks', async () => {
    const existing = ((await call('GET', '/api/webhooks?limit=100')).body?.webhooks as unknown[]).length;
    const ids: string[] = [];
    for (let index = existing; index < 100; index += 1) ids.push((await create({ url: `https://hooks.example.com/${index}`, types: ['block.sealed'] })).id);
    const refused = await call('POST', '/api/webhooks', { url: 'https://hooks.example.com/one-too-many' });
    expect(refused.status).toBe(409);
    expect(refused.body?.code).toBe('too_many_webhooks');
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page += 1) {
      const answer = await call('GET', `/api/webhooks?limit=30${after === null ? '' : `&after=${after}`}`);
      const items = answer.body?.webhooks as Endpoint[];
      seen.push(...items.map((item) => item.id));
      after = answer.body?.next_after as string | null;
      if (after === null) break;
    }
    expect(seen).toHaveLength(100);
    expect(new Set(seen).size).toBe(100);
    for (const id of ids) expect((await call('DELETE', `/api/webhooks/${id}`)).status).toBe(204);
  });

  it('delivers signed events to a loopback receiver, lists the attempts, retries one, and replays from a sequence', async () => {
    const endpoint = await create({ url: receiver.url });
    receiver.secrets = [endpoint.secret as string];
    const first = endpoint.last_sequence;
    await submit({ from: 'treasury', to: 'alice', amount: 5, token: 'TAB', type: 'mint' });
    await ledger.producer.sealNext();
    // accepted, confirmed, block.sealed
    await receiver.waitFor((current) => current.distinctIds().length >= 3);
    const sequences = receiver.received.map((event) => event.sequence);
    expect(sequences).toEqual([first + 1, first + 2, first + 3]);
    expect(receiver.rejected).toEqual([]);
    expect(receiver.received.map((event) => event.type)).toEqual(['transaction.accepted', 'transaction.confirmed', 'block.sealed']);
    await expect.poll(async () => (await call('GET', `/api/webhooks/${endpoint.id}`)).body?.last_sequence).toBe(first + 3);

    const deliveries = await call('GET', `/api/webhooks/${endpoint.id}/deliveries?limit=2`);
    expect(deliveries.status).toBe(200);
    const attempts = deliveries.body?.deliveries as Array<Record<string, unknown>>;
    expect(attempts.map((attempt) => attempt.sequence)).toEqual([first + 3, first + 2]);
    expect(attempts[0]).toMatchObject({ outcome: 'delivered', response_status: 204, error: null, next_attempt_at_ms: null, origin: 'scheduled', event_id: receiver.received[2]?.id });
    expect(attempts[0]?.latency_ms).toEqual(expect.any(Number));
    const older = await call('GET', `/api/webhooks/${endpoint.id}/deliveries?limit=2&before=${deliveries.body?.next_before as number}`);
    expect((older.body?.deliveries as Array<Record<string, unknown>>).map((attempt) => attempt.sequence)).toEqual([first + 1]);
    expect(older.body?.next_before).toBeNull();

    const event_id = receiver.received[0]?.id as string;
    const retried = await call('POST', `/api/webhooks/${endpoint.id}/deliveries/${event_id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ event_id, outcome: 'delivered', response_status: 204, origin: 'manual' });
    expect(receiver.received.filter((event) => event.id === event_id)).toHaveLength(2);
    expect((await call('POST', `/api/webhooks/${endpoint.id}/deliveries/evt_99999_aaaaaaaaaaaa/retry`)).body?.code).toBe('event_not_found');
    expect((await call('POST', `/api/webhooks/${endpoint.id}/deliveries/nope/retry`)).body?.code).toBe('invalid_event_cursor');

    const count = receiver.received.length;
    const replayed = await call('POST', `/api/webhooks/${endpoint.id}/replay?after=${first + 1}`);
    expect(replayed.status).toBe(200);
    expect(replayed.body).toMatchObject({ last_sequence: first + 1, status: 'active' });
    await receiver.waitFor((current) => current.received.length >= count + 2);
    expect(receiver.received.slice(count).map((event) => event.sequence)).toEqual([first + 2, first + 3]);
    const metrics = await ledger.metrics.registry.metrics();
    expect(metrics).toMatch(/^tabula_webhook_deliveries_total\{outcome="delivered"\} [1-9]/m);
    expect(metrics).toMatch(new RegExp(`^tabula_webhook_endpoint_lag_events\\{endpoint="${endpoint.id}"\\} \\d+`, 'm'));
    expect(metrics).toMatch(/^tabula_webhook_endpoints\{state="active"\} [1-9]/m);
    expect(metrics).toMatch(/^tabula_webhook_endpoints\{state="disabled"\} \d+$/m);
    expect(metrics).toMatch(/^tabula_webhook_workers\{state="max"\} 16$/m);
    expect(metrics).toMatch(/^tabula_webhook_workers\{state="busy"\} \d+$/m);
    expect((await call('POST', `/api/webhooks/${endpoint.id}/replay?after=99999`)).body?.code).toBe('invalid_event_cursor');
    expect((await call('POST', `/api/webhooks/${endpoint.id}/replay?after=-1`)).body?.code).toBe('invalid_event_cursor');
    expect((await call('POST', `/api/webhooks/${endpoint.id}/replay`)).body?.code).toBe('validation_failed');
    await call('DELETE', `/api/webhooks/${endpoint.id}`);
  });

  it('stops delivering at once when an admin disables an endpoint being delivered, and a replay during delivery wins over the worker', async () => {
    const endpoint = await create({ url: receiver.url, types: ['transaction.accepted'] });
    receiver.secrets = [endpoint.secret as string];
    receiver.delay_ms = 150;
    const start = receiver.received.length;
    for (let index = 0; index < 8; index += 1) await submit({ from: 'treasury', to: `p${index}`, amount: 1, token: 'TAB', type: 'mint' });
    await receiver.waitFor((current) => current.received.length >= start + 2);
    expect((await call('PATCH', `/api/webhooks/${endpoint.id}`, { status: 'disabled' })).body?.status).toBe('disabled');
    // The attempt in flight may still land; nothing after it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const at_disable = receiver.received.length;
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(receiver.received.length).toBe(at_disable);
    expect(at_disable - start).toBeLessThan(8);

    // Re-enabled by a replay from the endpoint's start while it is being delivered again: every event from there, in order.
    const replay_start = receiver.received.length;
    expect((await call('PATCH', `/api/webhooks/${endpoint.id}`, { status: 'active' })).body?.status).toBe('active');
    await receiver.waitFor((current) => current.received.length >= replay_start + 1);
    const replayed = await call('POST', `/api/webhooks/${endpoint.id}/replay?after=${endpoint.last_sequence}`);
    const replay_index = receiver.received.length;
    expect(replayed.body?.last_sequence).toBe(endpoint.last_sequence);
    receiver.delay_ms = 0;
    await receiver.waitFor((current) => current.received.slice(replay_index).some((event) => event.sequence === endpoint.last_sequence + 1)
      && current.received.at(-1)?.sequence === endpoint.last_sequence + 8);
    const after_replay = receiver.received.slice(replay_index);
    const restart = after_replay.findLastIndex((event) => event.sequence === endpoint.last_sequence + 1);
    expect(after_replay.slice(restart).map((event) => event.type).every((type) => type === 'transaction.accepted')).toBe(true);
    const sequences = after_replay.slice(restart).map((event) => event.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(8);
    await call('DELETE', `/api/webhooks/${endpoint.id}`);
    await ledger.producer.sealNext();
  });

  it('delivers to one endpoint while another one hangs', async () => {
    const slow = await WebhookReceiver.start();
    try {
      slow.delay_ms = 60_000;
      const hanging = await create({ url: slow.url, types: ['transaction.accepted'] });
      const fast = await create({ url: receiver.url, types: ['transaction.accepted'] });
      slow.secrets = [hanging.secret as string];
      receiver.secrets = [fast.secret as string];
      const start = receiver.received.length;
      for (let index = 0; index < 3; index += 1) await submit({ from: 'treasury', to: `s${index}`, amount: 1, token: 'TAB', type: 'mint' });
      await receiver.waitFor((current) => current.received.length >= start + 3);
      // The hanging receiver has taken its first event and not answered: its endpoint waits, the other did not.
      expect(slow.in_flight).toBeGreaterThanOrEqual(1);
      expect([...new Set(slow.received.map((event) => event.sequence))]).toEqual([hanging.last_sequence + 1]);
      expect(receiver.received.slice(start).map((event) => event.sequence)).toEqual([fast.last_sequence + 1, fast.last_sequence + 2, fast.last_sequence + 3]);
      await call('DELETE', `/api/webhooks/${hanging.id}`);
      await call('DELETE', `/api/webhooks/${fast.id}`);
      await ledger.producer.sealNext();
    } finally {
      await slow.close();
    }
  });

  it('records a refused attempt for an address that is not allowed, and filters by type and account', async () => {
    const refused = await create({ url: 'http://no-such-host.invalid/hook' });
    const filtered = await create({ url: receiver.url, types: ['transaction.confirmed'], accounts: ['carol'] });
    receiver.secrets = [filtered.secret as string];
    const start = receiver.received.length;
    await submit({ from: 'treasury', to: 'dave', amount: 1, token: 'TAB', type: 'mint' });
    await submit({ from: 'treasury', to: 'carol', amount: 2, token: 'TAB', type: 'mint' });
    await ledger.producer.sealNext();
    await receiver.waitFor((current) => current.received.length > start);
    await expect.poll(async () => (await call('GET', `/api/webhooks/${filtered.id}`)).body?.last_sequence).toBe(refused.last_sequence + 5);
    const got = receiver.received.slice(start);
    expect(got).toHaveLength(1);
    expect(got[0]?.type).toBe('transaction.confirmed');
    expect(JSON.parse(got[0]?.body as string).data.to).toBe('carol');

    await expect.poll(async () => ((await call('GET', `/api/webhooks/${refused.id}/deliveries`)).body?.deliveries as unknown[]).length).toBeGreaterThan(0);
    const attempt = ((await call('GET', `/api/webhooks/${refused.id}/deliveries`)).body?.deliveries as Array<Record<string, unknown>>).at(-1);
    expect(attempt).toMatchObject({ outcome: 'refused', response_status: null, sequence: refused.last_sequence + 1 });
    expect(attempt?.error).toMatch(/does not resolve/);
    expect(attempt?.next_attempt_at_ms).toEqual(expect.any(Number));
    const state = (await call('GET', `/api/webhooks/${refused.id}`)).body as Endpoint;
    expect(state.last_sequence).toBe(refused.last_sequence);
    expect(state.failed_attempts).toBeGreaterThan(0);
    await call('DELETE', `/api/webhooks/${refused.id}`);
    await call('DELETE', `/api/webhooks/${filtered.id}`);
  });
});

describe(`a webhook endpoint failing for the whole retry period (${testStoreKind()})`, () => {
  let ledger: TestTabula;
  let admin: string;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    ledger = await startTestTabula({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_RETRY_PERIOD_S: '1', WEBHOOK_TIMEOUT_MS: '1000' });
    admin = await ledger.token('treasury', { admin: true });
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await ledger.close();
    await receiver.close();
  });

  async function call(method: 'GET' | 'POST', url: string, body?: unknown) {
    const response = await ledger.app.inject({ method, url, headers: { authorization: `Bearer ${admin}` }, ...(body === undefined ? {} : { payload: body as Record<string, unknown> }) });
    return response.json() as Record<string, unknown>;
  }

  it('is disabled, shows so, and delivers again from its cursor after a replay', async () => {
    const endpoint = await call('POST', '/api/webhooks', { url: receiver.url });
    receiver.secrets = [endpoint.secret as string];
    receiver.status = 503;
    await call('POST', '/api/transactions/submit', { from: 'treasury', to: 'alice', amount: 1, token: 'TAB', type: 'mint' });
    await expect.poll(async () => (await call('GET', `/api/webhooks/${endpoint.id as string}`)).status, { timeout: 15_000 }).toBe('disabled');
    const disabled = await call('GET', `/api/webhooks/${endpoint.id as string}`);
    expect(disabled).toMatchObject({ disabled_reason: 'retries_exhausted', last_sequence: endpoint.last_sequence });
    expect(disabled.failed_attempts as number).toBeGreaterThanOrEqual(2);
    // The operator sees it without listing endpoints: the endpoints' gauge counts it as disabled.
    expect(await ledger.metrics.registry.metrics()).toMatch(/^tabula_webhook_endpoints\{state="disabled"\} [1-9]/m);
    const last = ((await call('GET', `/api/webhooks/${endpoint.id as string}/deliveries?limit=1`)).deliveries as Array<Record<string, unknown>>)[0];
    expect(last).toMatchObject({ outcome: 'failed', response_status: 503, next_attempt_at_ms: null });
    expect(receiver.received).toEqual([]);

    receiver.status = 204;
    const replayed = await call('POST', `/api/webhooks/${endpoint.id as string}/replay?after=${endpoint.last_sequence as number}`);
    expect(replayed).toMatchObject({ status: 'active', disabled_reason: null, failed_attempts: 0 });
    await receiver.waitFor((current) => current.received.length >= 1);
    expect(receiver.received[0]?.sequence).toBe((endpoint.last_sequence as number) + 1);
  });
});
