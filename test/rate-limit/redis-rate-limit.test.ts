/**
 * Cluster-wide rate limits through Redis, and what happens without Redis: the limit falls back to
 * each instance's own memory, with a logged warning, and no request ever fails because of it.
 * Uses the Redis at TEST_REDIS_URL (default redis://127.0.0.1:6379) and, for the "Redis dies" case, a
 * redis-server of its own on a free loopback port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import { FailOpenRateLimitStore, RedisRateLimitStore } from '../../src/http/redis-rate-limit.js';
import { clientFor, expectProblem } from '../support/http-client.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const WINDOW_MS = 60_000;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A pino logger whose lines the test can read. */
function capturingLogger(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({ write(chunk, _encoding, done) { lines.push(JSON.parse(String(chunk))); done(); } });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

const unique = (name: string) => `${name}-${randomBytes(6).toString('hex')}`;

describe('Redis rate-limit store', () => {
  const closers: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => { for (const close of closers.splice(0).reverse()) await close(); });

  function redisStore(url = REDIS_URL, logger?: pino.Logger, key_prefix = `${unique('tabula-test')}:`): RedisRateLimitStore {
    const store = new RedisRateLimitStore({ url, key_prefix, ...(logger ? { logger } : {}) });
    closers.push(() => store.close());
    return store;
  }

  it('admits concurrent requests exactly once each, per key, and lets a schedule expire when its bucket is full', async () => {
    const key_prefix = `${unique('tabula-test')}:`;
    const store = redisStore(REDIS_URL, undefined, key_prefix);
    expect(await store.connected(5000)).toBe(true);
    const now_ms = Date.now();
    const admissions = await Promise.all(Array.from({ length: 50 }, () => store.admit('sub:alice', now_ms, 1000, WINDOW_MS)));
    expect(admissions.every((admission) => admission.allowed)).toBe(true);
    expect(admissions.map((admission) => admission.tat_ms - now_ms).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, index) => (index + 1) * 1000));
    expect(await store.admit('sub:bob', now_ms, 1000, WINDOW_MS)).toEqual({ allowed: true, tat_ms: now_ms + 1000 });
    // A schedule in the past is a full bucket: it starts again from now.
    expect(await store.admit('sub:alice', now_ms + 2 * WINDOW_MS, 1000, WINDOW_MS)).toEqual({ allowed: true, tat_ms: now_ms + 2 * WINDOW_MS + 1000 });

    const inspector = new Redis(REDIS_URL);
    closers.push(() => inspector.quit());
    const ttl_ms = await inspector.pttl(`${key_prefix}sub:bob`);
    expect(ttl_ms).toBeGreaterThan(0);
    expect(ttl_ms).toBeLessThanOrEqual(1000);
  });

  it('refuses a cost that does not fit and spends nothing for it; keeps fractional intervals exact', async () => {
    const store = redisStore();
    expect(await store.connected(5000)).toBe(true);
    const now_ms = Date.now();
    expect(await store.admit('sub:batcher', now_ms, 50_000, WINDOW_MS)).toEqual({ allowed: true, tat_ms: now_ms + 50_000 });
    expect(await store.admit('sub:batcher', now_ms, 20_000, WINDOW_MS)).toEqual({ allowed: false, tat_ms: now_ms + 50_000 });
    expect(await store.admit('sub:batcher', now_ms, 10_000, WINDOW_MS)).toEqual({ allowed: true, tat_ms: now_ms + WINDOW_MS });
    // 7 per minute: seven intervals of 60000/7 ms fill the bucket exactly, an eighth does not fit.
    const interval_ms = WINDOW_MS / 7;
    const seven = [];
    for (let index = 0; index < 8; index += 1) seven.push((await store.admit('sub:sevens', now_ms, interval_ms, WINDOW_MS)).allowed);
    expect(seven).toEqual([true, true, true, true, true, true, true, false]);
  });

  it('stores nothing for a look (cost 0): no key for a caller that never spent, and a schedule\'s expiry left where it was', async () => {
    const key_prefix = `${unique('tabula-test')}:`;
    const store = redisStore(REDIS_URL, undefined, key_prefix);
    expect(await store.connected(5000)).toBe(true);
    const inspector = new Redis(REDIS_URL);
    closers.push(() => inspector.quit());
    const now_ms = Date.now();
    // A look at a caller that never spent: admitted, and nothing made for it.
    expect(await store.admit('sub:onlooker', now_ms + WINDOW_MS, 0, WINDOW_MS)).toEqual({ allowed: true, tat_ms: now_ms + WINDOW_MS });
    expect(await inspector.exists(`${key_prefix}sub:onlooker`)).toBe(0);
    // A look from a clock 30 s behind would have set the expiry 30 s later had it written the schedule back.
    expect(await store.admit('sub:spender', now_ms, 1000, WINDOW_MS)).toEqual({ allowed: true, tat_ms: now_ms + 1000 });
    expect(await store.admit('sub:spender', now_ms - 30_000, 0, WINDOW_MS)).toEqual({ allowed: true, tat_ms: now_ms + 1000 });
    const ttl_ms = await inspector.pttl(`${key_prefix}sub:spender`);
    expect(ttl_ms).toBeGreaterThan(0);
    expect(ttl_ms).toBeLessThanOrEqual(1000);
  });

  it('decides exactly as the in-memory store does, whatever the sequence', async () => {
    const store = redisStore();
    expect(await store.connected(5000)).toBe(true);
    const step = fc.record({ advance_ms: fc.integer({ min: 0, max: 30_000 }), cost: fc.integer({ min: 0, max: 12 }) });
    let run = 0;
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
      run += 1;
      const memory = new MemoryRateLimitStore();
      const key = `sub:random-${run}`;
      const interval_ms = WINDOW_MS / 9;
      let now_ms = 1_795_000_000_000;
      for (const { advance_ms, cost } of steps) {
        now_ms += advance_ms;
        const [expected, actual] = [await memory.admit(key, now_ms, cost * interval_ms, WINDOW_MS), await store.admit(key, now_ms, cost * interval_ms, WINDOW_MS)];
        expect(actual).toEqual(expected);
      }
    }), { numRuns: 40 });
  });

  it('shares one limit among instances', async () => {
    const ledgers: TestTabula[] = [];
    for (let index = 0; index < 2; index += 1) {
      const ledger = await startTestTabula({ REDIS_URL, RATE_LIMIT_MAX: '4', RATE_LIMIT_WINDOW_MS: String(WINDOW_MS) });
      closers.push(() => ledger.close());
      ledgers.push(ledger);
    }
    const sub = unique('carol');
    const token = await ledgers[0]!.token(sub);
    const [first, second] = ledgers.map((ledger) => clientFor(ledger, token)) as [ReturnType<typeof clientFor>, ReturnType<typeof clientFor>];
    const statuses = [];
    for (let index = 0; index < 4; index += 1) statuses.push((await (index % 2 === 0 ? first : second).get('/api/stats')).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    expectProblem(await first.get('/api/stats'), 429, 'rate_limited');
    expectProblem(await second.get('/api/stats'), 429, 'rate_limited');
    expect((await second.get('/api/stats', await ledgers[1]!.token(unique('dave')))).status).toBe(200);
  });

  it('without Redis (nothing listens at REDIS_URL), counts in memory: every request answered, never a 5xx', async () => {
    const closed_url = `redis://127.0.0.1:${await freePort()}`;
    const ledger = await startTestTabula({ REDIS_URL: closed_url, RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: String(WINDOW_MS) });
    closers.push(() => ledger.close());
    const client = clientFor(ledger, await ledger.token('erin'));
    const answers = [];
    for (let index = 0; index < 3; index += 1) answers.push(await client.get('/api/stats'));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(answers[2]!.headers.ratelimit).toMatch(/remaining=0/);
    expectProblem(await client.get('/api/stats'), 429, 'rate_limited');
    const fallbacks = await ledger.metrics.registry.getSingleMetric('tabula_rate_limit_fallbacks_total')?.get();
    expect(fallbacks?.values[0]?.value).toBe(4);
    const submitted = await clientFor(ledger, await ledger.token('ops', { admin: true }))
      .post('/api/transactions/submit', { from: 'ops', to: 'erin', amount: 1, token: 'TAB', type: 'mint' });
    expect(submitted.status).toBe(202);
  });

  it('falls back with one throttled warning while Redis is away, and counts in Redis again when it is back', async () => {
    const port = await freePort();
    const start = async (): Promise<ChildProcess> => {
      const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
      probe.on('error', () => {}); // refused until the server is up: expected, and retried below
      await vi.waitFor(async () => { await probe.connect().catch(async () => { probe.disconnect(); throw new Error('not up'); }); }, { timeout: 10_000, interval: 100 });
      await probe.quit();
      return server;
    };
    const stop = (server: ChildProcess) => new Promise<void>((resolve) => { server.once('exit', () => resolve()); server.kill('SIGKILL'); });
    let server = await start();
    closers.push(() => (server.exitCode === null && server.signalCode === null ? stop(server) : undefined));

    const { logger, lines } = capturingLogger();
    const redis = redisStore(`redis://127.0.0.1:${port}`, logger);
    const store = new FailOpenRateLimitStore(redis, new MemoryRateLimitStore(), logger);
    const now_ms = Date.now();
    expect(await redis.connected(5000)).toBe(true);
    const admit = async (key: string) => (await store.admit(key, now_ms, 1000, WINDOW_MS)).tat_ms - now_ms;
    expect([await admit('sub:frank'), await admit('sub:frank')]).toEqual([1000, 2000]);
    expect(store.fallbacks).toBe(0);

    await stop(server);
    const during = [];
    for (let index = 0; index < 5; index += 1) during.push(await admit('sub:frank'));
    expect(during).toEqual([1000, 2000, 3000, 4000, 5000]); // this process's memory: the Redis schedule is out of reach
    expect(store.fallbacks).toBe(5);
    const warnings = lines.filter((line) => String(line.msg).includes('counting in this instance'));
    expect(warnings).toHaveLength(1);

    server = await start();
    await vi.waitFor(async () => {
      const before = store.fallbacks;
      await store.admit('probe', now_ms, 1, WINDOW_MS);
      expect(store.fallbacks).toBe(before);
    }, { timeout: 10_000, interval: 200 });
    const fallbacks_before = store.fallbacks;
    expect([await admit('sub:grace'), await admit('sub:grace')]).toEqual([1000, 2000]);
    expect(store.fallbacks).toBe(fallbacks_before);
  });
});
