/**
 * On PostgreSQL, an event committed through one instance reaches a stream on another through
 * LISTEN/NOTIFY: with the hub's backstop poll turned off, the only way the second instance can hear
 * of the first one's commits is the notification. Also: when the notification connection is cut, the
 * events committed meanwhile still arrive once it is back.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tabula } from '../../src/compose.js';
import { eventChannel } from '../../src/store/postgres/connection.js';
import { signTestToken } from '../support/in-process-tabula.js';
import { testPostgresUrl, type TestDatabase } from '../support/test-database.js';
import { startTwoInstances, type TwoInstances } from '../support/two-instances.js';

describe('events across instances on PostgreSQL', () => {
  let instances: TwoInstances;
  let database: TestDatabase;
  let writer: Tabula;
  let reader: Tabula;
  const config = () => instances.config;

  beforeAll(async () => {
    instances = await startTwoInstances();
    ({ database, writer, reader } = instances);
  });
  afterAll(async () => {
    await instances?.stop();
  });

  async function submitThroughWriter(to: string): Promise<string> {
    const token = await signTestToken('issuer', config(), { admin: true });
    const response = await writer.app.inject({
      method: 'POST', url: '/api/transactions/submit', headers: { authorization: `Bearer ${token}` },
      payload: { from: 'issuer', to, amount: 1, token: 'TAB', type: 'mint' },
    });
    expect(response.statusCode).toBe(202);
    return (response.json() as { tx_hash: string }).tx_hash;
  }

  function nextEvent(ledger: Tabula, after: number): Promise<number> {
    return new Promise((resolve) => {
      const stop = ledger.events.onAdvance((head) => {
        if (head <= after) return;
        stop();
        resolve(head);
      });
    });
  }

  it('hears of another instance\'s commit by notification, not by polling', async () => {
    const head = reader.events.head();
    const heard = nextEvent(reader, head);
    const hash = await submitThroughWriter('alice');
    expect(await heard).toBe(head + 1);
    const [event] = await reader.events.read(head, 10);
    expect(event).toMatchObject({ type: 'transaction.accepted' });
    expect(JSON.parse(event!.json).data.tx_hash).toBe(hash);
  });

  it('catches up on what was committed while its notification connection was cut', async () => {
    const admin = new pg.Client({ connectionString: testPostgresUrl() });
    await admin.connect();
    try {
      const head = reader.events.head();
      // Cut every LISTEN connection of this schema's channel; the signal reconnects with backoff.
      const listen = `LISTEN ${eventChannel(database.postgres!.schema)}`;
      const cut = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1', [listen]);
      expect(cut.rowCount).toBe(2);
      await submitThroughWriter('bob');
      await submitThroughWriter('carol');
      const caught_up = new Promise<void>((resolve) => {
        const stop = reader.events.onAdvance((now) => {
          if (now < head + 2) return;
          stop();
          resolve();
        });
        if (reader.events.head() >= head + 2) resolve();
      });
      await caught_up;
      const events = await reader.events.read(head, 10);
      expect(events.map((event) => event.type)).toEqual(['transaction.accepted', 'transaction.accepted']);
    } finally {
      await admin.end();
    }
  });
});
