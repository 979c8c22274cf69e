/**
 * Instances started at the same moment on an empty database all come up: the migrations run once
 * under their lock, one genesis block is written, one native symbol is claimed, one instance seals.
 * Done for several fresh schemas, because a race shows itself only sometimes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { MIGRATIONS } from '../../src/store/postgres/schema.js';
import { sealersOf, ServiceProcess } from '../support/service-process.js';
import { connectToSchema, createTestDatabase, type TestDatabase } from '../support/test-database.js';

const ROUNDS = 3;

describe('instances starting together on an empty database', () => {
  const started: ServiceProcess[] = [];
  const databases: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((instance) => instance.close()));
    for (const database of databases.splice(0)) await database.drop();
  });

  it.each(Array.from({ length: ROUNDS }, (_, round) => round + 1))('both come up (round %i)', async () => {
    const database = await createTestDatabase('postgres');
    databases.push(database);
    const env = { DATABASE_URL: database.url, JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '100' };
    const starts = await Promise.allSettled([ServiceProcess.start({ env }), ServiceProcess.start({ env })]);
    // Whatever came up is stopped after the test, even when its twin failed to start.
    const pair = starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
    started.push(...pair);
    for (const start of starts) if (start.status === 'rejected') throw start.reason;

    const sql = await connectToSchema(database);
    try {
      // Every migration ran exactly once, whichever instance ran it.
      expect((await sql.query('SELECT version FROM schema_migrations ORDER BY version')).rows).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
      expect((await sql.query('SELECT number::int AS number FROM blocks')).rows).toEqual([{ number: 0 }]);
      expect((await sql.query('SELECT name, value FROM settings ORDER BY name')).rows).toEqual([{ name: 'native_symbol', value: 'TAB' }, { name: 'pool_fee_bps', value: '30' }]);
    } finally {
      await sql.end();
    }
    for (const instance of pair) {
      const health = await fetch(`${instance.url}/healthz`);
      expect(health.status).toBe(200);
    }
    // One wins the first election; a while later, still only one has.
    expect(await sealersOf(pair)).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pair.filter((instance) => instance.logged('sealer lease acquired'))).toHaveLength(1);
  });
});
