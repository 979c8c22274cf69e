/**
 * The service with SQLITE_STORE_THREAD=on: everything a user does goes through the store's thread
 * (submissions, batches, sealing, reads, proofs, balances, history, blocks, stats, metrics), and what they
 * see is what the store on the event loop gives. `auto` follows the CPUs; a value it does not know is
 * refused, naming the variable.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { storeThreadWanted } from '../../src/store/sqlite/thread/store-thread-setting.js';
import { ThreadedSqliteStore } from '../../src/store/sqlite/thread/threaded-sqlite-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor } from '../support/http-client.js';

describe('SQLITE_STORE_THREAD', () => {
  const ledgers: TestTabula[] = [];
  afterEach(async () => {
    for (const ledger of ledgers.splice(0)) await ledger.close();
  });

  it('is auto by default, on from three CPUs, and refuses what it does not know', () => {
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).sqlite_store_thread).toBe('auto');
    expect(storeThreadWanted('auto', 2)).toBe(false);
    expect(storeThreadWanted('auto', 3)).toBe(true);
    expect(storeThreadWanted('on', 1)).toBe(true);
    expect(storeThreadWanted('off', 64)).toBe(false);
    expect(() => loadConfig({ SQLITE_STORE_THREAD: 'yes' })).toThrow(ConfigError);
    expect(() => loadConfig({ SQLITE_STORE_THREAD: 'yes' })).toThrow(/SQLITE_STORE_THREAD/);
  });

  it('serves a whole round of use from the thread, as the store on the loop does', async () => {
    const results = [];
    for (const setting of ['on', 'off'] as const) {
      const ledger = await startTestTabula({ SQLITE_STORE_THREAD: setting, METRICS_TOKEN: 'metrics-token-of-the-test' }, { store: 'sqlite' });
      ledgers.push(ledger);
      expect(ledger.store).toBeInstanceOf(setting === 'on' ? ThreadedSqliteStore : SqliteStore);
      const admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
      const alice = clientFor(ledger, await ledger.token('alice'));
      const mint = await admin.post('/api/transactions/submit', { from: 'treasury', to: 'alice', amount: '10.5', token: 'TAB', type: 'mint' });
      expect(mint.status).toBe(202);
      const batch = await alice.post('/api/transactions/batch', {
        transactions: [
          { from: 'alice', to: 'bob', amount: 4, token: 'TAB', type: 'transfer' },
          { from: 'alice', to: 'carol', amount: 100, token: 'TAB', type: 'transfer' },
        ],
      });
      expect(batch.json).toMatchObject({ accepted: 2, rejected: 0 });
      await ledger.producer.drain();
      const record = await alice.get(`/api/transactions/${mint.json.tx_hash}`);
      const failed = await alice.get(`/api/transactions/${batch.json.results[1].tx_hash}`);
      const proof = await alice.get(`/api/transactions/${mint.json.tx_hash}/proof`);
      const balance = await alice.get('/api/balance/alice');
      const history = await alice.get('/api/accounts/alice/transactions?limit=10');
      const blocks = await alice.get('/api/blocks');
      const stats = await alice.get('/api/stats');
      const metrics = await ledger.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer metrics-token-of-the-test' } });
      expect(record.json).toMatchObject({ status: 'confirmed', block_number: 1, position: 0 });
      expect(failed.json).toMatchObject({ status: 'failed', error: 'insufficient_funds' });
      expect(proof.status).toBe(200);
      expect(balance.json).toMatchObject({ native: 6.5, usdg: 0 });
      expect(metrics.body).toContain('tabula_sqlite_wal_checkpoints_off_loop 1');
      results.push({
        balance: balance.json, history: history.json.transactions.map((tx: { type: string; status: string }) => [tx.type, tx.status]),
        blocks: blocks.json.total, stats: { ...stats.json, native_price: undefined },
      });
    }
    expect(results[0]).toEqual(results[1]);
  });
});
