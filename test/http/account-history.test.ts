/**
 * `GET /api/accounts/{userId}/transactions`: an account's history, newest first in arrival order,
 * paged with an opaque cursor. Every record is the one `GET /api/transactions/{hash}` answers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

const SUBMIT = '/api/transactions/submit';
const U63_MAX_TAB = '92233720368.54775807';

type Page = { user_id: string; transactions: Array<{ tx_hash: string; status: string; from: string; to: string; type: string }>; next_cursor: string | null };

const history = (user_id: string, query = '') => `/api/accounts/${encodeURIComponent(user_id)}/transactions${query === '' ? '' : `?${query}`}`;

describe("an account's transaction history", () => {
  let ledger: TestTabula;
  let admin: Client;
  let alice: Client;

  beforeEach(async () => {
    ledger = await startTestTabula();
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
    alice = clientFor(ledger, await ledger.token('alice'));
  });
  afterEach(async () => { await ledger.close(); });

  async function submit(client: Client, body: Record<string, unknown>): Promise<string> {
    const call = await client.post(SUBMIT, { token: 'TAB', type: 'transfer', ...body });
    expect(call.status, call.body).toBe(202);
    return call.json.tx_hash as string;
  }

  /** Every page of `user_id`'s history at `limit`, following next_cursor until it is null. */
  async function walk(client: Client, user_id: string, limit: number): Promise<Page[]> {
    const pages: Page[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const call = await client.get(history(user_id, query));
      expect(call.status, call.body).toBe(200);
      const page = call.json as Page;
      expect(page.user_id).toBe(user_id);
      expect(page.transactions.length).toBeLessThanOrEqual(limit);
      pages.push(page);
      cursor = page.next_cursor;
      expect(pages.length).toBeLessThan(100);
    } while (cursor !== null);
    return pages;
  }

  it('pages through every transaction of the account exactly once, newest first, pending and sealed, each the record of GET /api/transactions/{hash}', async () => {
    const submitted: string[] = [];
    submitted.push(await submit(admin, { from: 'treasury', to: 'alice', amount: 100, type: 'mint' }));
    await submit(admin, { from: 'treasury', to: 'carol', amount: 5, type: 'mint' });
    await ledger.producer.drain();
    submitted.push(await submit(alice, { from: 'alice', to: 'bob', amount: '12.5', metadata: { memo: 'rent' } }));
    submitted.push(await submit(alice, { from: 'alice', to: 'bob', amount: 1000 })); // fails: insufficient funds
    await ledger.producer.drain();
    const bob = clientFor(ledger, await ledger.token('bob'));
    submitted.push(await submit(bob, { from: 'bob', to: 'alice', amount: '0.5' }));
    submitted.push(await submit(admin, { from: 'alice', to: 'treasury', amount: 1, type: 'burn' }));
    await submit(bob, { from: 'bob', to: 'carol', amount: 1 });
    submitted.push(await submit(alice, { from: 'alice', to: 'dave', amount: 2 })); // these three stay pending

    const pages = await walk(alice, 'alice', 2);
    expect(pages.map((page) => page.transactions.length)).toEqual([2, 2, 2]);
    expect(pages.at(-1)?.next_cursor).toBeNull();
    const listed = pages.flatMap((page) => page.transactions);
    expect(listed.map((tx) => tx.tx_hash)).toEqual([...submitted].reverse());
    expect(listed.map((tx) => tx.status)).toEqual(['pending', 'pending', 'pending', 'failed', 'confirmed', 'confirmed']);
    for (const tx of listed) {
      const single = await alice.get(`/api/transactions/${tx.tx_hash}`);
      expect(JSON.stringify(tx)).toBe(single.body);
    }
    // Another caller reads the same history, as any caller reads any transaction or balance.
    const by_carol = await walk(clientFor(ledger, await ledger.token('carol')), 'alice', 100);
    expect(by_carol).toEqual([{ user_id: 'alice', transactions: listed, next_cursor: null }]);
  });

  it('answers sealed records from the read cache, byte for byte as GET /api/transactions/{hash} does, and never a pending one stale', async () => {
    const minted = await submit(admin, { from: 'treasury', to: 'alice', amount: 100, type: 'mint' });
    await ledger.producer.drain();
    const paid = await submit(alice, { from: 'alice', to: 'bob', amount: '12.5', metadata: { memo: 'rent' } });
    const load = vi.spyOn(ledger.store, 'transactionsByHash');
    /** The page as it must be: each record the text GET /api/transactions/{hash} answers. */
    const expected = async (hashes: string[]) => {
      const singles = await Promise.all(hashes.map(async (hash) => (await alice.get(`/api/transactions/${hash}`)).body));
      return `{"user_id":"alice","transactions":[${singles.join(',')}],"next_cursor":null}`;
    };

    const cold = await alice.get(history('alice'));
    expect(load).toHaveBeenCalledTimes(1);
    expect(load.mock.calls[0]?.[0]).toEqual([paid, minted]);
    expect(cold.body).toBe(await expected([paid, minted]));
    expect(cold.headers['cache-control']).toBeUndefined();
    load.mockClear();

    const warm = await alice.get(history('alice'));
    expect(load.mock.calls).toEqual([[[paid]]]);
    expect(warm.body).toBe(cold.body);
    expect((warm.json as Page).transactions.map((tx) => tx.status)).toEqual(['pending', 'confirmed']);

    await ledger.producer.drain();
    load.mockClear();
    const sealed = await alice.get(history('alice'));
    expect((sealed.json as Page).transactions.map((tx) => tx.status)).toEqual(['confirmed', 'confirmed']);
    expect(sealed.body).toBe(await expected([paid, minted]));
    expect(load).toHaveBeenCalledTimes(1);
    load.mockClear();
    expect((await alice.get(history('alice'))).body).toBe(sealed.body);
    expect(load).not.toHaveBeenCalled();
  });

  it('keeps a page whose transactions are all sealed until the account has a newer one, and answers the newer one at once', async () => {
    for (const amount of [1, 2, 3]) await submit(admin, { from: 'treasury', to: 'alice', amount, type: 'mint' });
    await ledger.producer.drain();
    const read = vi.spyOn(ledger.store, 'accountHistory');
    const first = await alice.get(history('alice', 'limit=2'));
    const cursor = (first.json as Page).next_cursor as string;
    const older = await alice.get(history('alice', `limit=2&cursor=${cursor}`));
    const beyond = await alice.get(history('alice', 'cursor=1000000'));
    expect(read).toHaveBeenCalledTimes(3);
    read.mockClear();
    expect((await alice.get(history('alice', 'limit=2'))).body).toBe(first.body);
    expect((await alice.get(history('alice', `limit=2&cursor=${cursor}`))).body).toBe(older.body);
    expect((await alice.get(history('alice', 'cursor=1000000'))).body).toBe(beyond.body);
    expect(read).not.toHaveBeenCalled();

    // A new transaction of the account: every page it belongs to is read afresh, the page before it is not.
    const paid = await submit(alice, { from: 'alice', to: 'bob', amount: 1 });
    const fresh = (await alice.get(history('alice', 'limit=2'))).json as Page;
    expect(fresh.transactions.map((tx) => [tx.tx_hash, tx.status])[0]).toEqual([paid, 'pending']);
    expect(((await alice.get(history('alice', 'cursor=1000000'))).json as Page).transactions[0]?.tx_hash).toBe(paid);
    expect(read).toHaveBeenCalledTimes(2);
    expect((await alice.get(history('alice', `limit=2&cursor=${cursor}`))).body).toBe(older.body);
    expect(read).toHaveBeenCalledTimes(2);
    // Pending, that page is not kept; sealed, it is answered with its new status, then kept.
    expect((await alice.get(history('alice', 'limit=2'))).json).toEqual(fresh);
    expect(read).toHaveBeenCalledTimes(3);
    await ledger.producer.drain();
    const sealed = (await alice.get(history('alice', 'limit=2'))).json as Page;
    expect(sealed.transactions[0]).toMatchObject({ tx_hash: paid, status: 'confirmed' });
    expect((await alice.get(history('alice', 'limit=2'))).json).toEqual(sealed);
    expect(read).toHaveBeenCalledTimes(4);
    // While no transaction at all is stored, the account's newest is not even asked again.
    const asked = vi.spyOn(ledger.store, 'newestAccountSeq');
    expect((await alice.get(history('alice', 'limit=2'))).json).toEqual(sealed);
    expect(asked).not.toHaveBeenCalled();
    // Another user's transaction: alice's newest is asked again, and her page is still the kept one.
    await submit(admin, { from: 'treasury', to: 'carol', amount: 1, type: 'mint' });
    expect((await alice.get(history('alice', 'limit=2'))).json).toEqual(sealed);
    expect(asked).toHaveBeenCalledTimes(1);
    expect(read).toHaveBeenCalledTimes(4);
  });

  it('answers the same bytes with the read cache turned off (READ_CACHE_MAX_BYTES=0)', async () => {
    const uncached = await startTestTabula({ READ_CACHE_MAX_BYTES: '0' });
    try {
      const treasury = clientFor(uncached, await uncached.token('treasury', { admin: true }));
      const reader = clientFor(uncached, await uncached.token('alice'));
      const hashes: string[] = [];
      for (const amount of [1, 2, 3]) hashes.unshift((await treasury.post(SUBMIT, { from: 'treasury', to: 'alice', amount, token: 'TAB', type: 'mint' })).json.tx_hash as string);
      await uncached.producer.drain();
      const page = await reader.get(history('alice', 'limit=2'));
      const singles = await Promise.all(hashes.slice(0, 2).map(async (hash) => (await reader.get(`/api/transactions/${hash}`)).body));
      const cursor = (page.json as Page).next_cursor;
      expect(page.body).toBe(`{"user_id":"alice","transactions":[${singles.join(',')}],"next_cursor":${JSON.stringify(cursor)}}`);
      expect((await reader.get(history('alice', 'limit=2'))).body).toBe(page.body);
    } finally {
      await uncached.close();
    }
  });

  it('lists mints and burns for the account they credit or debit and for the issuer named on the other side, a mint to its own issuer once', async () => {
    const mint = await submit(admin, { from: 'treasury', to: 'alice', amount: 10, type: 'mint' });
    const self_mint = await submit(admin, { from: 'treasury', to: 'treasury', amount: 3, type: 'mint' });
    const burn = await submit(admin, { from: 'alice', to: 'treasury', amount: 4, type: 'burn' });
    await ledger.producer.drain();
    const hashes = async (user_id: string) => ((await alice.get(history(user_id))).json as Page).transactions.map((tx) => tx.tx_hash);
    expect(await hashes('alice')).toEqual([burn, mint]);
    expect(await hashes('treasury')).toEqual([burn, self_mint, mint]);
    const page = (await alice.get(history('treasury'))).json as Page;
    expect(page.transactions.map((tx) => [tx.type, tx.from, tx.to, tx.status])).toEqual([
      ['burn', 'alice', 'treasury', 'confirmed'], ['mint', 'treasury', 'treasury', 'confirmed'], ['mint', 'treasury', 'alice', 'confirmed'],
    ]);
  });

  it('keeps amounts exact, and pages 20 by default and up to 100', async () => {
    const whale = await submit(admin, { from: 'treasury', to: 'whale', amount: U63_MAX_TAB, type: 'mint' });
    const batch = Array.from({ length: 24 }, (_, index) => ({ from: 'treasury', to: 'whale', amount: 1, token: 'USDG', type: 'mint', idempotency_key: `m-${index}` }));
    expect((await admin.post('/api/transactions/batch', { transactions: batch })).json).toMatchObject({ accepted: 24 });
    const first = await alice.get(history('whale'));
    expect((first.json as Page).transactions).toHaveLength(20);
    expect((first.json as Page).next_cursor).toEqual(expect.any(String));
    const all = await alice.get(history('whale', 'limit=100'));
    expect((all.json as Page).transactions).toHaveLength(25);
    expect((all.json as Page).next_cursor).toBeNull();
    expect((all.json as Page).transactions.at(-1)?.tx_hash).toBe(whale);
    expect(all.body).toContain(`"amount":${U63_MAX_TAB},`);
    const exactly = await alice.get(history('whale', 'limit=25'));
    expect((exactly.json as Page).next_cursor).toBeNull();
  });

  it('does not repeat or skip a transaction when others arrive or are sealed between pages', async () => {
    const older = [await submit(admin, { from: 'treasury', to: 'alice', amount: 1, type: 'mint' }), await submit(admin, { from: 'treasury', to: 'alice', amount: 2, type: 'mint' })];
    const newer = [await submit(admin, { from: 'treasury', to: 'alice', amount: 3, type: 'mint' }), await submit(admin, { from: 'treasury', to: 'alice', amount: 4, type: 'mint' })];
    const first = (await alice.get(history('alice', 'limit=2'))).json as Page;
    expect(first.transactions.map((tx) => tx.tx_hash)).toEqual([...newer].reverse());
    const arrived = await submit(admin, { from: 'treasury', to: 'alice', amount: 5, type: 'mint' });
    await ledger.producer.drain();
    const second = (await alice.get(history('alice', `limit=2&cursor=${first.next_cursor}`))).json as Page;
    expect(second.transactions.map((tx) => [tx.tx_hash, tx.status])).toEqual([...older].reverse().map((hash) => [hash, 'confirmed']));
    expect(second.next_cursor).toBeNull();
    const again = (await alice.get(history('alice', 'limit=1'))).json as Page;
    expect(again.transactions.map((tx) => tx.tx_hash)).toEqual([arrived]);
  });

  it('answers an unknown account with an empty history, whatever its id looks like', async () => {
    for (const user_id of ['nobody', 'auth0|5f7c8ec7c33c6c004bbafe82', 'someone@example.com', 'é'.repeat(128), 'a/b?c#d%']) {
      const call = await alice.get(history(user_id));
      expect(call.status, user_id).toBe(200);
      expect(call.json).toEqual({ user_id, transactions: [], next_cursor: null });
    }
    await submit(admin, { from: 'treasury', to: 'alice', amount: 1, type: 'mint' });
    expect((await alice.get(history('Alice'))).json).toEqual({ user_id: 'Alice', transactions: [], next_cursor: null });
    expect((await alice.get(history('alice', 'cursor=1'))).json).toEqual({ user_id: 'alice', transactions: [], next_cursor: null });
  });

  it('refuses a malformed limit or cursor with invalid_pagination', async () => {
    const queries = [
      'limit=0', 'limit=101', 'limit=-1', 'limit=1.5', 'limit=abc', 'limit=', 'limit=1e1',
      'cursor=', 'cursor=abc', 'cursor=0', 'cursor=-1', 'cursor=1.5', 'cursor=01', 'cursor=1e3', 'cursor=%201',
      'cursor=9007199254740992', `cursor=${'9'.repeat(17)}`, 'cursor=0x10', 'limit=2&cursor=x',
    ];
    for (const query of queries) {
      const call = await alice.get(history('alice', query));
      expect(call.json?.errors?.[0]?.field, query).toBe(query.startsWith('limit=') && !query.includes('cursor') ? 'limit' : 'cursor');
      expectProblem(call, 400, 'invalid_pagination');
    }
    const both = await alice.get(history('alice', 'limit=1&limit=2'));
    expect(both.status).toBe(400);
  });

  it('refuses a malformed user id with invalid_user_id, and needs a token like every /api route', async () => {
    expectProblem(await alice.get('/api/accounts/a%20b/transactions'), 400, 'invalid_user_id');
    expectProblem(await alice.get(`/api/accounts/${'x'.repeat(129)}/transactions`), 400, 'invalid_user_id');
    expectProblem(await alice.get('/api/accounts/%E2%80%8Ftab%09/transactions?cursor=bad'), 400, 'invalid_user_id');
    expectProblem(await alice.get('/api/accounts/%ZZ/transactions'), 400, 'invalid_url');
    expectProblem(await alice.get(history('alice'), null), 401, 'missing_token');
    expectProblem(await alice.get(history('alice'), 'not.a.token'), 401, 'invalid_token');
  });
});
