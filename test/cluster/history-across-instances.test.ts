/**
 * On PostgreSQL, a page of an account's history that one instance keeps (its transactions all sealed)
 * is never answered once another instance has stored a newer transaction of the account: the page is
 * kept under the account's newest row number, which the instance reads from the store on every request,
 * not learned from the event log (which may lag).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tabula } from '../../src/compose.js';
import { signTestToken } from '../support/in-process-tabula.js';
import { startTwoInstances, type TwoInstances } from '../support/two-instances.js';

type Page = { transactions: Array<{ tx_hash: string; status: string }>; next_cursor: string | null };

describe("an account's history across instances on PostgreSQL", () => {
  let instances: TwoInstances;
  let writer: Tabula;
  let reader: Tabula;
  const config = () => instances.config;

  beforeAll(async () => {
    // No polling: the reader's event hub hears of the writer's commits only by notification, later.
    instances = await startTwoInstances();
    ({ writer, reader } = instances);
    await writer.producer.stop();
    await reader.producer.stop();
  });
  afterAll(async () => {
    await instances?.stop();
  });

  async function mint(through: Tabula, to: string, amount: number): Promise<string> {
    const token = await signTestToken('issuer', config(), { admin: true });
    const response = await through.app.inject({
      method: 'POST', url: '/api/transactions/submit', headers: { authorization: `Bearer ${token}` },
      payload: { from: 'issuer', to, amount, token: 'TAB', type: 'mint' },
    });
    expect(response.statusCode, response.body).toBe(202);
    return (response.json() as { tx_hash: string }).tx_hash;
  }

  async function page(through: Tabula, user_id: string, query: string): Promise<Page> {
    const token = await signTestToken('auditor', config());
    const response = await through.app.inject({ method: 'GET', url: `/api/accounts/${user_id}/transactions?${query}`, headers: { authorization: `Bearer ${token}` } });
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as Page;
  }

  it("answers another instance's new transaction at once, not the page it kept", async () => {
    const first = await mint(writer, 'alice', 1);
    await writer.producer.drain();
    const kept = await page(reader, 'alice', 'limit=5');
    expect(kept.transactions.map((tx) => [tx.tx_hash, tx.status])).toEqual([[first, 'confirmed']]);
    expect(await page(reader, 'alice', 'limit=5')).toEqual(kept);

    const second = await mint(writer, 'alice', 2);
    expect((await page(reader, 'alice', 'limit=5')).transactions.map((tx) => [tx.tx_hash, tx.status])).toEqual([[second, 'pending'], [first, 'confirmed']]);
    await writer.producer.drain();
    expect((await page(reader, 'alice', 'limit=5')).transactions.map((tx) => tx.status)).toEqual(['confirmed', 'confirmed']);
  });

  it('agrees with the store after both instances stored transactions of one account at once, read all along', async () => {
    const reads: Array<Promise<Page>> = [];
    const stored = await Promise.all(Array.from({ length: 60 }, async (_, index) => {
      const hash = await mint(index % 2 === 0 ? writer : reader, 'bob', index + 1);
      reads.push(page(reader, 'bob', 'limit=100'));
      if (index % 10 === 9) await writer.producer.drain();
      return hash;
    }));
    await Promise.all(reads);
    await writer.producer.drain();
    const expected = (await reader.store.accountHistory('bob', null, 100)).map((entry) => entry.tx_hash);
    expect([...expected].sort()).toEqual([...stored].sort());
    for (const through of [reader, writer, reader]) {
      const listed = await page(through, 'bob', 'limit=100');
      expect(listed.transactions.map((tx) => tx.tx_hash)).toEqual(expected);
      expect(new Set(listed.transactions.map((tx) => tx.status))).toEqual(new Set(['confirmed']));
    }
  });
});
