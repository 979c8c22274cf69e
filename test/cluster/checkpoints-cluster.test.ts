/**
 * Issue 12 on a cluster: two instances on one PostgreSQL schema, sharing CHECKPOINT_SIGNING_KEY (the
 * test key), serve byte-identical signed checkpoints of every size, whichever instance sealed the blocks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { signTestToken, TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('checkpoints on a cluster of two instances', () => {
  let database: TestDatabase;
  let instances: ServiceProcess[] = [];
  let token: string;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const env = { DATABASE_URL: database.url, JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '100', RATE_LIMIT_MAX: '100000' };
    instances = await Promise.all([ServiceProcess.start({ env }), ServiceProcess.start({ env })]);
    token = await signTestToken('treasury', loadConfig({ JWT_SECRET: TEST_SECRET }), { admin: true });
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
    await database?.drop();
  });

  const get = async (instance: ServiceProcess, url: string) => {
    const response = await fetch(`${instance.url}${url}`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status, url).toBe(200);
    return response.text();
  };

  it('serves identical checkpoints from every instance', async () => {
    for (let index = 0; index < 6; index += 1) {
      const instance = instances[index % 2] as ServiceProcess;
      const response = await fetch(`${instance.url}/api/transactions/submit`, {
        method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'treasury', to: `user${index}`, amount: 1, token: 'TAB', type: 'mint' }),
      });
      expect(response.status).toBe(202);
      const { tx_hash } = await response.json() as { tx_hash: string };
      for (let attempt = 0; attempt < 200; attempt += 1) {
        const record = JSON.parse(await get(instance, `/api/transactions/${tx_hash}`)) as { status: string };
        if (record.status !== 'pending') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const [first, second] = instances as [ServiceProcess, ServiceProcess];
    const latest = JSON.parse(await get(first, '/api/checkpoint')) as { size: number };
    expect(latest.size).toBeGreaterThanOrEqual(2);
    for (let size = 1; size <= latest.size; size += 1) {
      expect(await get(second, `/api/checkpoint?size=${size}`)).toBe(await get(first, `/api/checkpoint?size=${size}`));
    }
    expect(await get(second, '/.well-known/tabula-checkpoint-key')).toBe(await get(first, '/.well-known/tabula-checkpoint-key'));
    expect(await get(second, `/api/chain/consistency?from=1&to=${latest.size}`)).toBe(await get(first, `/api/chain/consistency?from=1&to=${latest.size}`));
  });
});
