import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { InvariantViolation, OverloadedError } from '../../src/domain/shared/errors.js';
import { AuthError } from '../../src/auth/auth-error.js';
import { pendingTransaction } from '../../src/domain/hashing.js';
import { BlockProducer } from '../../src/service/block-producer.js';
import type { LedgerStore } from '../../src/service/ledger-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { toHttpProblem } from '../../src/http/error-mapping.js';

const clock = { now_ms: () => 1_800_000_000_000 };

async function storeWithOneMint(): Promise<SqliteStore> {
  const store = SqliteStore.open({ path: ':memory:' });
  const preimage = { from: 'issuer', to: 'alice', amount_units: 3n, token: 'TAB', type: 'mint' as const, metadata: {}, nonce: '0'.repeat(32), timestamp: 1_800_000_000 };
  await store.appendPending([{ transaction: pendingTransaction(preimage), idempotency: null }]);
  return store;
}

describe('block producer invariants', () => {
  it('halts instead of sealing when the state it reads breaks an invariant', async () => {
    const sqlite = await storeWithOneMint();
    // A store that lies: alice's balance is negative, so crediting 3 units would leave -2.
    const lying = Object.create(sqlite) as LedgerStore;
    lying.balancesOf = async (keys) => keys.filter((key) => key.user_id === 'alice').map((key) => ({ ...key, units: -5n }));
    const producer = new BlockProducer(lying, clock, pino({ level: 'silent' }), { block_interval_ms: 10, block_txs_max: 100 });
    await producer.ensureGenesis();

    producer.start();
    await vi.waitFor(() => expect(producer.halted).toBeInstanceOf(InvariantViolation));
    await expect(producer.sealNext()).rejects.toBeInstanceOf(InvariantViolation);
    expect((await sqlite.latestBlock())?.number).toBe(0);
    expect(await sqlite.pendingCount()).toBe(1);
    await producer.stop();
    await sqlite.close();
  });

  it('keeps sealing after a passing store error, with backoff', async () => {
    const sqlite = await storeWithOneMint();
    const flaky = Object.create(sqlite) as LedgerStore;
    let failures = 0;
    flaky.commitBlock = async (commit) => {
      if (failures > 0) { failures -= 1; throw new Error('SQLITE_BUSY'); }
      return sqlite.commitBlock(commit);
    };
    const producer = new BlockProducer(flaky, clock, pino({ level: 'silent' }), { block_interval_ms: 10, block_txs_max: 100 });
    await producer.ensureGenesis();
    failures = 2;
    producer.start();
    await vi.waitFor(async () => expect((await sqlite.latestBlock())?.number).toBe(1), { timeout: 5000 });
    expect(producer.halted).toBeNull();
    await producer.stop();
    await sqlite.close();
  });

  it('overload and an unreachable identity provider are 503s that say when to retry', () => {
    const overloaded = toHttpProblem(new OverloadedError('service_overloaded', 'too many waiting', 1));
    expect([overloaded.status, overloaded.code, overloaded.headers['retry-after']]).toEqual([503, 'service_overloaded', '1']);
    const idp = toHttpProblem(new AuthError('identity_provider_unavailable', 'the identity provider did not answer'));
    expect([idp.status, idp.code, idp.headers['retry-after']]).toEqual([503, 'identity_provider_unavailable', '5']);
  });

  it('an unexpected error becomes a 500 that says nothing about internals', () => {
    const mapped = toHttpProblem(new Error('SQLITE_CORRUPT: /var/lib/secret/ledger.db'));
    expect(mapped.code).toBe('internal_error');
    expect(mapped.status).toBe(500);
    expect(mapped.message).not.toMatch(/SQLITE|secret/);
  });
});
