/**
 * The PostgreSQL event signal: every write's NOTIFY reaches the listening instance with the log's head
 * as of that write, so the event hub need not read the head again; a reconnection tells of no head.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { genesisBlock } from '../../../src/domain/block.js';
import { pendingTransaction } from '../../../src/domain/hashing.js';
import type { LedgerStore } from '../../../src/service/ledger-store.js';
import { announcedHead, PostgresEventSignal } from '../../../src/store/postgres/postgres-event-signal.js';
import { createTestDatabase, type TestDatabase } from '../../support/test-database.js';

const HOUR = 1_800_000_000;

describe('the PostgreSQL event signal', () => {
  let database: TestDatabase;
  let store: LedgerStore;
  let signal: PostgresEventSignal;
  const heads: Array<number | null> = [];

  beforeEach(async () => {
    database = await createTestDatabase('postgres');
    store = await database.open();
    heads.length = 0;
    signal = new PostgresEventSignal({ ...(database.postgres as { url: string; schema: string }) }, pino({ level: 'silent' }));
    await signal.start((head) => heads.push(head));
  });
  afterEach(async () => {
    await signal.stop();
    await store.close();
    await database.drop();
  });

  async function heard(count: number): Promise<void> {
    for (let turn = 0; turn < 200 && heads.length < count; turn += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(heads.length).toBeGreaterThanOrEqual(count);
  }

  it("tells of no head when it starts listening, then of each write's head", async () => {
    await heard(1);
    expect(heads[0]).toBeNull();
    await store.commitBlock({
      header: genesisBlock(HOUR), totals: { transactions: 0, users: 0, transfer_volume_units: {} }, outcomes: [], balances: [], new_users: [], active_users: [],
    });
    await heard(2);
    const mint = (nonce: number) => pendingTransaction({
      from: 'treasury', to: 'alice', amount_units: 5n, token: 'TAB', type: 'mint', metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: HOUR + 1,
    });
    await store.appendPending([mint(1), mint(2)].map((transaction) => ({ transaction, idempotency: null, failure_budget: null })));
    await heard(3);
    expect(heads.slice(1)).toEqual([1, 3]); // block.sealed of the genesis, then the two transaction.accepted
    expect(await store.eventHead()).toBe(3);
  });

  it('reads a head only from a payload that is one', () => {
    expect(announcedHead('42')).toBe(42);
    expect(announcedHead('0')).toBe(0);
    expect(announcedHead(undefined)).toBeNull();
    expect(announcedHead('')).toBeNull();
    expect(announcedHead('-1')).toBeNull();
    expect(announcedHead('4.2')).toBeNull();
    expect(announcedHead('1'.repeat(16))).toBeNull();
  });
});
