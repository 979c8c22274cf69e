/**
 * `client.events()` against the real service process: the whole log in order from `after: 0`, resumed
 * without gap or duplicate after the connection is cut (a TCP proxy) or refused with a 503, filters,
 * typed errors, closing the connection on `break` and on `signal`, and `verify: true` passing against
 * the honest server and catching a lying one (an HTTP proxy rewriting the stream).
 */
import {
  BadRequestError, CursorExpiredError, ServerError, TabulaClient, UnauthorizedError, VerificationError, type EventsOptions, type EventType, type TabulaEvent,
  type TransactionEvent,
} from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { startCuttingProxy, startStreamProxy, type CuttingProxy, type StreamProxy } from '../support/event-stream-proxies.js';
import { ServiceProcess } from '../support/service-process.js';
import { problemBody, send, startDouble } from '../support/test-double.js';

const U63_MAX_TAB = '92233720368.54775807';
const FAST_RECONNECT = { base_delay_ms: 20, max_delay_ms: 200 };
const COLLECT_TIMEOUT_MS = 20_000;

/** Iterates `client.events(options)` until `done` says so (then breaks out of the loop). */
async function collect(client: TabulaClient, options: EventsOptions, done: (event: TabulaEvent, seen: TabulaEvent[]) => boolean, each?: (seen: TabulaEvent[]) => void | Promise<void>): Promise<TabulaEvent[]> {
  const seen: TabulaEvent[] = [];
  for await (const event of client.events({ signal: AbortSignal.timeout(COLLECT_TIMEOUT_MS), reconnect: FAST_RECONNECT, ...options })) {
    seen.push(event);
    await each?.(seen);
    if (done(event, seen)) break;
  }
  return seen;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => { throw new Error('expected a failure'); }, (error: unknown) => error);
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function transactionEvents(events: TabulaEvent[]): TransactionEvent[] {
  return events.filter((event): event is TransactionEvent => event.type !== 'block.sealed');
}

describe('client.events against the service', () => {
  let server: ServiceProcess;
  let admin: TabulaClient;
  let token: string;
  let last_block: number;
  let all: TabulaEvent[];
  let transfer_hash: string;
  const sealedLast = (event: TabulaEvent) => event.type === 'block.sealed' && event.data.number >= last_block;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    token = await server.token('treasury', { admin: true });
    admin = new TabulaClient({ baseUrl: server.url, jwt: token });
    const settle = async (request: Parameters<TabulaClient['submitTransaction']>[0]) => admin.waitForTransaction((await admin.submitTransaction(request)).tx_hash, { intervalMs: 20 });
    await settle({ from: 'treasury', to: 'alice', amount: '10', token: 'TAB', type: 'mint' });
    await settle({ from: 'treasury', to: 'whale', amount: U63_MAX_TAB, token: 'TAB', type: 'mint' });
    transfer_hash = (await settle({ from: 'alice', to: 'bob', amount: '2.5', token: 'TAB', type: 'transfer' })).tx_hash;
    const failed = await settle({ from: 'carol', to: 'bob', amount: '1', token: 'USDG', type: 'transfer' });
    expect(failed.status).toBe('failed');
    last_block = failed.block_number as number;
    all = await collect(admin, { after: 0 }, sealedLast);
  });
  afterAll(async () => { await server?.close(); });

  it('yields every event from after: 0 in order, typed, with exact amounts', () => {
    expect(all.map((event) => event.sequence)).toEqual(all.map((_, index) => index + 1));
    expect(all[0]).toMatchObject({ type: 'block.sealed', data: { number: 0 }, schema_version: 1 });
    for (const event of all) expect(event.id).toMatch(new RegExp(`^evt_${event.sequence}_[0-9a-f]{12}$`));
    const transactions = transactionEvents(all);
    expect(transactions).toHaveLength(8);
    const whale = transactions.find((event) => event.type === 'transaction.confirmed' && event.data.to === 'whale');
    expect(whale?.data).toMatchObject({ amount_text: U63_MAX_TAB, status: 'confirmed', block_number: expect.any(Number) });
    const failed = transactions.find((event) => event.type === 'transaction.failed');
    expect(failed?.data).toMatchObject({ from: 'carol', status: 'failed', error: 'insufficient_funds' });
    for (const outcome of transactions.filter((event) => event.type !== 'transaction.accepted')) {
      const accepted = all.findIndex((event) => event.type === 'transaction.accepted' && event.data.tx_hash === outcome.data.tx_hash);
      const sealed = all.findIndex((event) => event.type === 'block.sealed' && event.data.number === outcome.data.block_number);
      expect(accepted).toBeGreaterThanOrEqual(0);
      expect(accepted).toBeLessThan(all.indexOf(outcome));
      expect(sealed).toBeGreaterThan(all.indexOf(outcome));
    }
  });

  it('resumes after the connection is cut mid-message, with Last-Event-ID: no gap, no duplicate, and live events after', async () => {
    const proxy = await startCuttingProxy(server.url, { cut_first_after_bytes: 2500 });
    try {
      const client = new TabulaClient({ baseUrl: proxy.url, jwt: token });
      const mint = async (to: string) => (await admin.submitTransaction({ from: 'treasury', to, amount: '1', token: 'TAB', type: 'mint' })).tx_hash;
      let first_live: string | null = null;
      let second_live: string | null = null;
      const seen = await collect(client, { after: 0 }, (event) => event.type === 'transaction.confirmed' && event.data.tx_hash === second_live, async (events) => {
        const latest = events.at(-1) as TabulaEvent;
        if (events.length === all.length) first_live = await mint('dave');
        if (second_live === null && latest.type === 'transaction.accepted' && latest.data.tx_hash === first_live) {
          proxy.cut(); // once more while following live: the second transaction comes through a new connection
          second_live = await mint('erin');
        }
      });
      expect(seen.map((event) => event.sequence)).toEqual(seen.map((_, index) => index + 1));
      expect(seen.slice(0, all.length).map((event) => event.id)).toEqual(all.map((event) => event.id));
      expect(proxy.requests.length).toBeGreaterThanOrEqual(3);
      expect(proxy.requests[0]).toMatch(/^GET \/api\/events\?after=0 /);
      const resumed = proxy.requests.slice(1).map((request) => seen.findIndex((event) => event.id === /^last-event-id: (\S+)\r$/im.exec(request)?.[1]));
      expect(resumed[0], 'the first connection was cut before the end of the log').toBeGreaterThanOrEqual(0);
      expect(resumed[0]).toBeLessThan(all.length - 1);
      expect(resumed.at(-1)).toBeGreaterThanOrEqual(all.length);
    } finally {
      await proxy.close();
    }
  });

  it('waits out a 503 with Retry-After and resumes; a 410 cursor_expired throws at once; reconnect.attempts bounds the retries', async () => {
    const proxy = await startStreamProxy(server.url);
    try {
      const client = new TabulaClient({ baseUrl: proxy.url, jwt: token });
      Object.assign(proxy, { failures: 2, fail_status: 503, fail_code: 'too_many_streams', fail_headers: { 'retry-after': '1' } });
      const seen = await collect(client, { after: 0 }, (_, events) => events.length === 3);
      expect(seen.map((event) => event.id)).toEqual(all.slice(0, 3).map((event) => event.id));
      expect(proxy.last_event_ids).toEqual([null, null, null]);
      const [first = 0, second = 0, third = 0] = proxy.arrivals_ms;
      expect(Math.min(second - first, third - second), 'Retry-After: 1 is waited out, beyond max_delay_ms').toBeGreaterThanOrEqual(950);

      Object.assign(proxy, { failures: 1, fail_status: 410, fail_code: 'cursor_expired', fail_headers: {} });
      const expired = await failure(collect(client, { after: 0 }, () => false));
      expect(expired).toBeInstanceOf(CursorExpiredError);
      expect(expired).toMatchObject({ status: 410, code: 'cursor_expired' });
      expect(proxy.last_event_ids).toHaveLength(4);

      Object.assign(proxy, { failures: 5, fail_status: 500, fail_code: 'internal_error', fail_headers: {} });
      const exhausted = await failure(collect(client, { after: 0, reconnect: { ...FAST_RECONNECT, attempts: 3 } }, () => false));
      expect(exhausted).toBeInstanceOf(ServerError);
      expect(proxy.last_event_ids).toHaveLength(7);
      proxy.failures = 0;
    } finally {
      await proxy.close();
    }
  });

  it('filters by type and by account', async () => {
    const blocks = await collect(admin, { after: 0, types: ['block.sealed'] }, sealedLast);
    expect(blocks.map((event) => event.id)).toEqual(all.filter((event) => event.type === 'block.sealed').map((event) => event.id));
    const outcomes: EventType[] = ['transaction.confirmed', 'transaction.failed'];
    const expected_bob = transactionEvents(all).filter((event) => outcomes.includes(event.type) && (event.data.from === 'bob' || event.data.to === 'bob'));
    expect(expected_bob).toHaveLength(2);
    const bob = await collect(admin, { after: 0, account: 'bob', types: outcomes }, (_, seen) => seen.length === expected_bob.length);
    expect(bob.map((event) => event.id)).toEqual(expected_bob.map((event) => event.id));
  });

  it('throws typed errors for a bad cursor, a bad token and bad options', async () => {
    const beyond = await failure(collect(admin, { after: 1_000_000 }, () => false));
    expect(beyond).toBeInstanceOf(BadRequestError);
    expect(beyond).toMatchObject({ status: 400, code: 'invalid_event_cursor' });
    const stranger = new TabulaClient({ baseUrl: server.url, jwt: 'not.a.token' });
    expect(await failure(collect(stranger, { after: 0 }, () => false))).toBeInstanceOf(UnauthorizedError);
    expect(await failure(collect(admin, { types: ['block.minted' as EventType] }, () => false))).toBeInstanceOf(RangeError);
    expect(await failure(collect(admin, { after: -1 }, () => false))).toBeInstanceOf(RangeError);
  });

  it('drops a connection that goes silent (not even a heartbeat) and opens a new one', async () => {
    const double = await startDouble((_request, response, index) => {
      if (index > 0) {
        send(response, 400, problemBody(400, 'invalid_event_cursor'));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('retry: 10\n\n'); // then nothing: a connection a proxy has silently lost
    });
    try {
      const client = new TabulaClient({ baseUrl: double.url, jwt: token });
      const error = await failure(collect(client, { after: 0, reconnect: { ...FAST_RECONNECT, idle_timeout_ms: 300 } }, () => false));
      expect(error).toBeInstanceOf(BadRequestError);
      expect(double.requests.map((request) => request.path)).toEqual(['/api/events?after=0', '/api/events?after=0']);
    } finally {
      await double.close();
    }
  });

  it('closes the connection when the loop breaks and when the signal aborts', async () => {
    const proxy = await startCuttingProxy(server.url);
    try {
      const client = new TabulaClient({ baseUrl: proxy.url, jwt: token });
      expect(await collect(client, { after: 0 }, () => true)).toHaveLength(1);
      await until(() => proxy.open() === 0, 'the connection is closed after break');
      const controller = new AbortController();
      const reason = new Error('enough');
      const iteration = (async () => {
        for await (const _event of client.events({ after: 0, signal: controller.signal })) controller.abort(reason);
      })();
      expect(await failure(iteration)).toBe(reason);
      await until(() => proxy.open() === 0, 'the connection is closed after abort');
      expect(proxy.requests).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });

  describe('verify: true', () => {
    let proxy: StreamProxy;
    let lying: TabulaClient;
    let transfer: TransactionEvent;

    beforeAll(async () => {
      proxy = await startStreamProxy(server.url);
      lying = new TabulaClient({ baseUrl: proxy.url, jwt: token });
      transfer = transactionEvents(all).find((event) => event.type === 'transaction.confirmed' && event.data.tx_hash === transfer_hash) as TransactionEvent;
    });
    afterAll(async () => { await proxy?.close(); });

    /** Rewrites the data line of the event `id` only. */
    function tamper(id: string, change: (line: string) => string): void {
      proxy.rewrite = (line) => (line.startsWith(`data: {"id":"${id}"`) ? change(line) : line);
    }

    async function verificationError(options: EventsOptions = {}): Promise<VerificationError> {
      const error = await failure(collect(lying, { after: 0, verify: true, ...options }, sealedLast));
      expect(error).toBeInstanceOf(VerificationError);
      return error as VerificationError;
    }

    it('passes every event of the honest server (through the proxy, untouched)', async () => {
      proxy.rewrite = (line) => line;
      const verified = await collect(lying, { after: 0, verify: true }, sealedLast);
      expect(verified.map((event) => event.id)).toEqual(all.map((event) => event.id));
    });

    it('catches a confirmed event moved to another position of its block', async () => {
      const position = transfer.data.position as number;
      tamper(transfer.id, (line) => line.replace(`"position":${position}`, `"position":${position + 1}`));
      const moved = await collect(lying, { after: 0 }, sealedLast); // without verify, the lie goes through
      expect(moved.find((event) => event.id === transfer.id)?.data).toMatchObject({ position: position + 1 });
      const error = await verificationError();
      expect(error).toMatchObject({ code: 'record_mismatch', tx_hash: transfer_hash });
    });

    it('catches a confirmed event whose amount was changed', async () => {
      tamper(transfer.id, (line) => line.replace('"amount":2.5', '"amount":25'));
      expect(await verificationError()).toMatchObject({ code: 'transaction_hash_mismatch', tx_hash: transfer_hash });
    });

    it('catches a confirmed event that names another block hash', async () => {
      const block_hash = transfer.data.block_hash as string;
      tamper(transfer.id, (line) => line.replace(block_hash, `0x${block_hash[2] === '0' ? '1' : '0'}${block_hash.slice(3)}`));
      expect(await verificationError()).toMatchObject({ code: 'record_mismatch', tx_hash: transfer_hash });
    });

    it('catches a block.sealed header that does not hash to its hash', async () => {
      const sealed = all.find((event) => event.type === 'block.sealed' && event.data.number === transfer.data.block_number) as TabulaEvent & { type: 'block.sealed' };
      tamper(sealed.id, (line) => line.replace(`"timestamp":${sealed.data.timestamp}`, `"timestamp":${sealed.data.timestamp + 1}`));
      expect(await verificationError()).toMatchObject({ code: 'block_hash_mismatch', block_number: sealed.data.number });
    });

    it('catches a gap in the sequence, with or without verify', async () => {
      const dropped = all[4] as TabulaEvent;
      tamper(dropped.id, () => ': dropped');
      expect(await verificationError()).toMatchObject({ code: 'event_sequence_gap' });
      expect(await verificationError({ verify: false })).toMatchObject({ code: 'event_sequence_gap' });
    });
  });
});
