/**
 * Holes an operator could fall into by setting only what is required: a development token minted
 * through a reverse proxy on the same machine, a flood of forged tokens each costing a signature
 * check, and forwarding headers believed from anyone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

describe('operator safety at the edge', () => {
  let ledger: TestTabula | null = null;
  afterEach(async () => {
    await ledger?.close();
    ledger = null;
  });

  it('refuses /dev/token to a loopback caller whose request a proxy relayed', async () => {
    ledger = await startTestTabula({ JWT_SECRET: '' });
    const mint = (headers: Record<string, string>) =>
      ledger!.app.inject({ method: 'POST', url: '/dev/token', payload: { sub: 'mallory', admin: true }, remoteAddress: '127.0.0.1', headers });
    expect((await mint({})).statusCode).toBe(200);
    const relayed: Array<Record<string, string>> = [{ 'x-forwarded-for': '203.0.113.9' }, { forwarded: 'for=203.0.113.9' }, { 'x-real-ip': '203.0.113.9' }];
    for (const headers of relayed) {
      const response = await mint(headers);
      expect(response.statusCode, JSON.stringify(headers)).toBe(404);
      expect(response.json()).toMatchObject({ code: 'route_not_found' });
      expect(response.json().token).toBeUndefined();
    }
  });

  it('stops checking the tokens of an address that sent too many bad ones, but not those of other addresses', async () => {
    ledger = await startTestTabula({ AUTH_FAILURES_MAX: '5', RATE_LIMIT_MAX: '100000' });
    // Every token that is verified is looked up in the cache of verified tokens first: count the misses.
    const misses = async () => Number(/^tabula_token_cache_lookups_total\{result="miss"\} (\d+)$/m.exec((await ledger!.metrics.exposition()).body)?.[1]);
    const misses_before = await misses();
    const get = (token: string, remoteAddress: string) =>
      ledger!.app.inject({ method: 'GET', url: '/api/stats', headers: { authorization: `Bearer ${token}` }, remoteAddress });
    const forged = (index: number) => `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYWxsb3J5${index}In0.${'A'.repeat(43)}`;
    for (let index = 0; index < 5; index += 1) {
      const response = await get(forged(index), '198.51.100.7');
      expect(response.statusCode).toBe(401);
    }
    for (let index = 5; index < 50; index += 1) {
      const response = await get(forged(index), '198.51.100.7');
      expect(response.statusCode).toBe(429);
      expect(response.json()).toMatchObject({ code: 'rate_limited' });
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect((await misses()) - misses_before).toBe(5);
    // Even a good token from that address waits: nothing from it is looked at until its budget refills.
    expect((await get(await ledger.token('alice'), '198.51.100.7')).statusCode).toBe(429);
    // Other addresses are served as before.
    expect((await get(await ledger.token('alice'), '198.51.100.8')).statusCode).toBe(200);
    expect((await get(forged(99), '198.51.100.8')).statusCode).toBe(401);
  });

  it('takes the client address from X-Forwarded-For only when the peer is a trusted proxy', async () => {
    ledger = await startTestTabula({ AUTH_FAILURES_MAX: '1', TRUST_PROXY: '10.0.0.5' });
    const get = (remoteAddress: string, forwarded_for: string) => ledger!.app.inject({
      method: 'GET', url: '/api/stats', headers: { authorization: 'Bearer not-a-token', 'x-forwarded-for': forwarded_for }, remoteAddress,
    });
    // Through the trusted proxy, two clients are two addresses: each gets its own budget.
    expect((await get('10.0.0.5', '203.0.113.1')).statusCode).toBe(401);
    expect((await get('10.0.0.5', '203.0.113.2')).statusCode).toBe(401);
    expect((await get('10.0.0.5', '203.0.113.1')).statusCode).toBe(429);
    // From anyone else the header is ignored: a client cannot pick a fresh address per request.
    expect((await get('198.51.100.9', '203.0.113.3')).statusCode).toBe(401);
    expect((await get('198.51.100.9', '203.0.113.4')).statusCode).toBe(429);
  });
});
