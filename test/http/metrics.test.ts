import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor } from '../support/http-client.js';
import { testStoreKind } from '../support/test-database.js';

const METRICS_TOKEN = 'metrics-token-0123456789';

function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',');
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return undefined;
}

describe('/metrics', () => {
  let ledger: TestTabula | undefined;
  afterEach(async () => { await ledger?.close(); ledger = undefined; });

  it('is not served unless METRICS_TOKEN or METRICS_PORT is configured', async () => {
    ledger = await startTestTabula();
    const call = await ledger.app.inject({ method: 'GET', url: '/metrics' });
    expect(call.statusCode).toBe(404);
    expect(call.json()).toMatchObject({ code: 'route_not_found' });
  });

  it('needs the metrics token as a bearer token', async () => {
    ledger = await startTestTabula({ METRICS_TOKEN });
    expect((await ledger.app.inject({ method: 'GET', url: '/metrics' })).json()).toMatchObject({ status: 401, code: 'missing_token' });
    const wrong = await ledger.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer metrics-token-9999999999' } });
    expect(wrong.json()).toMatchObject({ status: 401, code: 'invalid_token' });
    // A user's JWT is not the metrics token.
    const jwt = await ledger.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${await ledger.token('alice', { admin: true })}` } });
    expect(jwt.statusCode).toBe(401);
    const right = await ledger.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(right.statusCode).toBe(200);
    expect(right.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('counts requests, submissions, seals, queue depths and token-cache lookups', async () => {
    ledger = await startTestTabula({ METRICS_TOKEN });
    const admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
    const alice = clientFor(ledger, await ledger.token('alice'));
    await admin.post('/api/transactions/submit', { from: 'treasury', to: 'alice', amount: 5, token: 'TAB', type: 'mint' });
    await alice.post('/api/transactions/submit', { from: 'alice', to: 'bob', amount: 2, token: 'TAB', type: 'transfer' });
    await alice.post('/api/transactions/submit', { from: 'alice', to: 'bob', amount: 9, token: 'TAB', type: 'transfer' });
    await alice.post('/api/transactions/submit', { from: 'alice', to: 'bob', amount: 0, token: 'TAB', type: 'transfer' });
    await alice.post('/api/transactions/batch', { transactions: [{ from: 'alice', to: 'carol', amount: 1, token: 'TAB', type: 'transfer' }, { from: 'x', to: 'y', amount: 1, token: 'TAB', type: 'trade' }] });
    await alice.get('/api/stats');
    const scrape = async () => (await ledger!.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).body;

    const before = await scrape();
    expect(sample(before, 'tabula_pending_transactions')).toBe(4);
    expect(sample(before, 'tabula_submission_queue_depth')).toBe(0);
    expect(sample(before, 'tabula_submissions_total', { type: 'transfer', outcome: 'accepted' })).toBe(3);
    expect(sample(before, 'tabula_submissions_total', { type: 'mint', outcome: 'accepted' })).toBe(1);
    expect(sample(before, 'tabula_submissions_total', { type: 'transfer', outcome: 'amount_not_positive' })).toBe(1);
    expect(sample(before, 'tabula_submissions_total', { type: 'invalid', outcome: 'unsupported_transaction_type' })).toBe(1);
    expect(sample(before, 'tabula_http_request_duration_seconds_count', { method: 'POST', route: '/api/transactions/submit', status_code: '202' })).toBe(3);
    expect(sample(before, 'tabula_http_request_duration_seconds_count', { method: 'POST', route: '/api/transactions/submit', status_code: '400' })).toBe(1);
    expect(sample(before, 'tabula_http_request_duration_seconds_count', { method: 'GET', route: '/api/stats', status_code: '200' })).toBe(1);
    // Two tokens, six /api requests: two misses, four hits.
    expect(sample(before, 'tabula_token_cache_lookups_total', { result: 'miss' })).toBe(2);
    expect(sample(before, 'tabula_token_cache_lookups_total', { result: 'hit' })).toBe(4);
    expect(sample(before, 'tabula_rate_limit_fallbacks_total')).toBe(0);
    expect(sample(before, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    await ledger.producer.drain();
    const after = await scrape();
    expect(sample(after, 'tabula_pending_transactions')).toBe(0);
    expect(sample(after, 'tabula_transactions_sealed_total', { type: 'mint', status: 'confirmed', error: 'none' })).toBe(1);
    expect(sample(after, 'tabula_transactions_sealed_total', { type: 'transfer', status: 'confirmed', error: 'none' })).toBe(2);
    expect(sample(after, 'tabula_transactions_sealed_total', { type: 'transfer', status: 'failed', error: 'insufficient_funds' })).toBe(1);
    expect(sample(after, 'tabula_block_seal_duration_seconds_count')).toBe(1);
    expect(sample(after, 'tabula_block_seal_duration_seconds_sum')).toBeGreaterThan(0);
    expect(sample(after, 'tabula_block_transactions_sum')).toBe(4);
  });

  it('reports the SQLite store\'s WAL checkpoints, made off the event loop (nothing of them on PostgreSQL)', async () => {
    ledger = await startTestTabula({ METRICS_TOKEN });
    await clientFor(ledger, await ledger.token('treasury', { admin: true })).post('/api/transactions/submit', { from: 'treasury', to: 'alice', amount: 5, token: 'TAB', type: 'mint' });
    const text = (await ledger.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).body;
    if (testStoreKind() === 'postgres') {
      expect(sample(text, 'tabula_sqlite_wal_checkpoints_off_loop')).toBeUndefined();
      return;
    }
    expect(sample(text, 'tabula_sqlite_wal_checkpoints_off_loop')).toBe(1);
    expect(sample(text, 'tabula_sqlite_wal_bytes')).toBeGreaterThan(0);
    for (const outcome of ['completed', 'partial', 'failed']) expect(sample(text, 'tabula_sqlite_wal_checkpoints_total', { outcome })).toBe(0);
    expect(sample(text, 'tabula_sqlite_wal_write_waits_total')).toBe(0);
  });

  it('keeps two ledgers in one process apart (no global registry)', async () => {
    ledger = await startTestTabula({ METRICS_TOKEN });
    const other = await startTestTabula({ METRICS_TOKEN });
    try {
      await clientFor(ledger, await ledger.token('alice')).get('/api/stats');
      const text = (await other.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).body;
      expect(sample(text, 'tabula_http_request_duration_seconds_count', { route: '/api/stats' })).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('moves to a server of its own with METRICS_PORT, leaving the API port without it', async () => {
    ledger = await startTestTabula({ METRICS_PORT: '9464', HOST: '127.0.0.1' });
    expect((await ledger.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    expect(ledger.metrics_app).not.toBeNull();
    const call = await ledger.metrics_app!.inject({ method: 'GET', url: '/metrics' });
    expect(call.statusCode).toBe(200);
    expect(call.body).toContain('tabula_block_seal_duration_seconds');
  });

  it('validates METRICS_TOKEN and METRICS_PORT', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrowError(/^METRICS_TOKEN:/);
    expect(() => loadConfig({ METRICS_PORT: '0' })).toThrowError(/^METRICS_PORT:/);
    expect(() => loadConfig({ METRICS_PORT: '8080' })).toThrowError(/^METRICS_PORT: must differ from PORT/);
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN })).toMatchObject({ metrics_port: 9464, metrics_token: METRICS_TOKEN });
    // Beyond loopback, /metrics (which names accounts' activity and the service's internals) needs its token.
    expect(() => loadConfig({ METRICS_PORT: '9464', HOST: '0.0.0.0', JWT_SECRET: 'x'.repeat(32) })).toThrowError(/^METRICS_TOKEN: must be set when METRICS_PORT serves \/metrics beyond loopback \(HOST=0\.0\.0\.0\)/);
    expect(() => loadConfig({ METRICS_PORT: '9464', HOST: '::' })).toThrowError(/^METRICS_TOKEN:/);
    for (const host of ['127.0.0.1', '127.3.2.1', 'localhost', '::1', '[::1]']) {
      expect(loadConfig({ METRICS_PORT: '9464', HOST: host })).toMatchObject({ metrics_port: 9464, metrics_token: undefined });
    }
  });
});
