/**
 * A full disk under the embedded store: the real service's data folder on a small tmpfs (CI runs as
 * root) that the test fills. Submissions that cannot be written get 503 `storage_unavailable` with
 * Retry-After — never a 500 — readiness answers 503 while it lasts, and when space comes back the
 * service takes writes again by itself: every acknowledged transaction is there, sealed, and the
 * chain audits from genesis. The tmpfs is unmounted whatever happens.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { expectAcknowledgedInChain } from '../support/store-chain-audit.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { waitUntilAllSealed } from '../support/sealed.js';
import { ServiceProcess } from '../support/service-process.js';
import { fillUntilFull, tmpfsForSuite } from '../support/full-disk.js';

const TMPFS_SIZE = '6m';

describe('a full disk under SQLite', () => {
  const mount_point = tmpfsForSuite(TMPFS_SIZE, 'tabula-full-disk-');
  let service: ServiceProcess | null = null;

  // Registered after the tmpfs's hooks, so it runs before the unmount.
  afterAll(async () => {
    await service?.close();
  });

  it('answers 503 storage_unavailable while the disk is full, and recovers when space is freed', async () => {
    service = await ServiceProcess.start({ data_dir: mount_point, env: { JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '200', RATE_LIMIT_MAX: '10000000' } });
    const admin = await service.token('treasury', { admin: true });
    const submit = async (index: number, idempotency_key?: string) => {
      const response = await fetch(`${service!.url}/api/transactions/submit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', ...(idempotency_key === undefined ? {} : { 'idempotency-key': idempotency_key }) },
        body: JSON.stringify({ from: 'treasury', to: `user-${index % 50}`, amount: 1, token: 'TAB', type: 'mint', metadata: { note: 'n'.repeat(2000) } }),
      });
      return {
        status: response.status, body: (await response.json()) as Record<string, unknown>, retry_after: response.headers.get('retry-after'),
        replayed: response.headers.get('idempotent-replayed'),
      };
    };
    const acknowledged = new Set<string>();
    for (let index = 0; index < 20; index += 1) {
      const answer = await submit(index, index === 0 ? 'stored-before-full' : undefined);
      expect(answer.status).toBe(202);
      acknowledged.add(answer.body.tx_hash as string);
    }

    // Fill what is left of the disk.
    const filler = path.join(mount_point, 'filler');
    fillUntilFull(filler);

    let refused = 0;
    for (let index = 0; index < 200 && refused < 5; index += 1) {
      const answer = await submit(index);
      expect(answer.status, JSON.stringify(answer.body)).not.toBe(500);
      if (answer.status === 202) {
        acknowledged.add(answer.body.tx_hash as string);
        continue;
      }
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ code: 'storage_unavailable', status: 503 });
      expect(Number(answer.retry_after)).toBeGreaterThanOrEqual(1);
      refused += 1;
    }
    expect(refused).toBe(5);
    // A repeat of a request stored before is still answered, from what is stored; a new key is refused.
    const repeat = await submit(0, 'stored-before-full');
    expect(repeat).toMatchObject({ status: 202, replayed: 'true' });
    expect(acknowledged.has(repeat.body.tx_hash as string)).toBe(true);
    expect(await submit(0, 'new-while-full')).toMatchObject({ status: 503, body: { code: 'storage_unavailable' } });
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { code: string }).code).toBe('not_ready');
    expect(service.logs().some((line) => String(line.msg).includes('the store refuses writes'))).toBe(true);

    // Space comes back: writes succeed again, and readiness follows the first one.
    fs.rmSync(filler);
    let recovered = false;
    for (let attempt = 0; attempt < 50 && !recovered; attempt += 1) {
      const answer = await submit(attempt);
      expect(answer.status).not.toBe(500);
      if (answer.status === 202) {
        acknowledged.add(answer.body.tx_hash as string);
        recovered = true;
      } else {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    expect(recovered).toBe(true);
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);

    // Everything acknowledged is sealed, and the chain audits.
    await waitUntilAllSealed(service.url, admin, acknowledged, 20_000);
    await service.stop();
    await expectAcknowledgedInChain(SqliteStore.open({ path: service.database_path }), acknowledged);
  }, 120_000);
});
