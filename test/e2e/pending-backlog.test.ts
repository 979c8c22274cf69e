/**
 * PENDING_MAX on the built service: with sealing held back (a one-hour block interval), submissions
 * past the bound get 503 `pending_backlog_full` with Retry-After and nothing is stored; the ones
 * acknowledged before, and only they, are sealed at shutdown.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';

describe('PENDING_MAX (real process)', () => {
  let service: ServiceProcess | null = null;
  afterEach(async () => {
    await service?.close();
    service = null;
  });

  it('pushes back with 503 and Retry-After once the backlog is full, and stores nothing more', async () => {
    service = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, PENDING_MAX: '5', BLOCK_INTERVAL_MS: '3600000' } });
    const token = await service.token('treasury', { admin: true });
    const post = (path: string, body: unknown) => fetch(`${service!.url}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const mint = (to: string) => ({ from: 'treasury', to, amount: 1, token: 'TAB', type: 'mint' });
    const accepted = await post('/api/transactions/batch', { transactions: ['a', 'b', 'c', 'd', 'e'].map(mint) });
    expect((await accepted.json() as { accepted: number }).accepted).toBe(5);
    const refused = await post('/api/transactions/submit', mint('f'));
    expect(refused.status).toBe(503);
    // About one block interval, capped at 30 s.
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(await refused.json()).toMatchObject({ code: 'pending_backlog_full' });
    const refused_batch = await post('/api/transactions/batch', { transactions: [mint('g')] });
    expect(refused_batch.status).toBe(503);
    // SIGTERM seals what is pending: the five acknowledged ones, nothing of the refused.
    expect((await service.stop()).code).toBe(0);
    await service.restart();
    const stats = await (await fetch(`${service.url}/api/stats`, { headers: { authorization: `Bearer ${token}` } })).json() as { total_transactions: number };
    expect(stats.total_transactions).toBe(5);
  });
});
