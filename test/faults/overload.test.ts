/**
 * Overload against the real process: far more submissions than it can commit (40 batches of 1,000
 * transactions in flight at all times, twice the write queue's bound, for 20 s). The excess is refused
 * with 503 `service_overloaded` and Retry-After — never a 500, never an unbounded queue —, the peak
 * resident memory stays bounded, and afterwards every acknowledged transaction is sealed and the
 * chain audits. Bounds are generous: this checks behaviour, not speed (the soak run measures it).
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WRITER_LIMITS } from '../../src/service/submission-writer.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { expectAcknowledgedInChain } from '../support/store-chain-audit.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';

const BATCH_ITEMS = 1000;
/** Batches in flight: twice what the write queue holds, so that it must refuse some. */
const IN_FLIGHT = (2 * DEFAULT_WRITER_LIMITS.queue_length_max) / BATCH_ITEMS;
const OVERLOAD_MS = 20_000;
/** Generous: the most resident memory the service may reach under it (docs/operations.md states what was measured). */
const PEAK_RSS_BYTES_MAX = 1024 * 1024 * 1024;
/** How long the backlog may take to be sealed once the pressure is off. */
const SEALED_TIMEOUT_MS = 120_000;

describe('more submissions than the service can commit', () => {
  let service: ServiceProcess;

  beforeAll(async () => {
    // The write queue's bound is what is under test: the pending backlog's (PENDING_MAX) is set out of reach
    // (test/http/pending-backlog.test.ts and test/e2e/pending-backlog.test.ts test that one).
    service = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '200', BLOCK_TXS_MAX: '20000', RATE_LIMIT_MAX: '10000000', PENDING_MAX: '100000000' } });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('refuses the excess with 503 service_overloaded, keeps memory bounded, and loses nothing it acknowledged', async () => {
    const admin = await service.token('treasury', { admin: true });
    const acknowledged: string[] = [];
    const statuses = new Map<string, number>();
    let batch_number = 0;
    const batch = () => {
      batch_number += 1;
      return Array.from({ length: BATCH_ITEMS }, (_, index) => ({ from: 'treasury', to: `user-${(batch_number + index) % 50}`, amount: 1, token: 'USDG', type: 'mint' }));
    };
    const deadline = Date.now() + OVERLOAD_MS;
    const worker = async () => {
      while (Date.now() < deadline) {
        const response = await fetch(`${service.url}/api/transactions/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          body: JSON.stringify({ transactions: batch() }),
          signal: AbortSignal.timeout(60_000),
        });
        const body = (await response.json()) as { code?: string; results?: Array<{ status: number; tx_hash?: string }> };
        const key = `${response.status} ${body.code ?? ''}`.trim();
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        expect(response.status, JSON.stringify(body).slice(0, 300)).not.toBe(500);
        if (response.status === 503) {
          expect(body.code).toBe('service_overloaded');
          expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
          continue; // an overloaded client would wait Retry-After; this one keeps the pressure on
        }
        expect(response.status).toBe(200);
        for (const result of body.results ?? []) if (result.status === 202) acknowledged.push(result.tx_hash as string);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    expect(statuses.get('503 service_overloaded') ?? 0, JSON.stringify([...statuses])).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(0);

    const status = fs.readFileSync(`/proc/${service.pid}/status`, 'utf8');
    const peak_rss_bytes = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    expect(peak_rss_bytes).toBeGreaterThan(0);
    expect(peak_rss_bytes).toBeLessThan(PEAK_RSS_BYTES_MAX);
    console.info(`overload: ${IN_FLIGHT} batches of ${BATCH_ITEMS} in flight for ${OVERLOAD_MS / 1000} s: answers ${JSON.stringify(Object.fromEntries(statuses))}, `
      + `${acknowledged.length} transactions acknowledged, peak RSS ${(peak_rss_bytes / 1024 / 1024).toFixed(0)} MiB`);

    // Once the pressure is off it answers at once again, and seals everything it acknowledged.
    const calm = await fetch(`${service.url}/api/transactions/submit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'treasury', to: 'after', amount: 1, token: 'USDG', type: 'mint' }),
    });
    expect(calm.status).toBe(202);
    acknowledged.push(((await calm.json()) as { tx_hash: string }).tx_hash);
    const sealed_by = Date.now() + SEALED_TIMEOUT_MS;
    const last = acknowledged.at(-1) as string;
    for (;;) {
      const response = await fetch(`${service.url}/api/transactions/${last}`, { headers: { authorization: `Bearer ${admin}` } });
      if (((await response.json()) as { status: string }).status !== 'pending') break;
      expect(Date.now(), 'the backlog was not sealed in time').toBeLessThan(sealed_by);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await service.stop();
    await expectAcknowledgedInChain(SqliteStore.open({ path: service.database_path }), acknowledged);
  }, 300_000);
});
