import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

const SUBMIT = '/api/transactions/submit';
const IMMUTABLE = 'private, max-age=31536000, immutable';

describe('sealed transactions and blocks: cached answers, ETag, 304', () => {
  let ledger: TestTabula;
  let admin: Client;

  beforeEach(async () => {
    ledger = await startTestTabula();
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
  });
  afterEach(async () => { await ledger.close(); });

  async function mint(to: string, amount: string | number): Promise<string> {
    const call = await admin.post(SUBMIT, { from: 'treasury', to, amount, token: 'TAB', type: 'mint' });
    expect(call.status, call.body).toBe(202);
    return call.json.tx_hash as string;
  }

  it('answers a pending transaction from the store every time (no-store), and its sealed state right after sealing', async () => {
    const hash = await mint('alice', '90071992.54740993');
    const reads = vi.spyOn(ledger.service, 'transaction');
    const pending = await admin.get(`/api/transactions/${hash}`);
    expect(pending.status).toBe(200);
    expect(pending.json.status).toBe('pending');
    expect(pending.headers['cache-control']).toBe('no-store');
    expect(pending.headers.etag).toBeUndefined();
    await admin.get(`/api/transactions/${hash}`);
    expect(reads).toHaveBeenCalledTimes(2);

    await ledger.producer.sealNext();
    const sealed = await admin.get(`/api/transactions/${hash}`);
    expect(sealed.json).toMatchObject({ status: 'confirmed', block_number: 1, position: 0 });
    expect(sealed.headers['cache-control']).toBe(IMMUTABLE);
    expect(sealed.headers.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(sealed.body).toContain('"amount":90071992.54740993');
    expect(reads).toHaveBeenCalledTimes(3);

    // From the cache: the same bytes and tag, no store read.
    const again = await admin.get(`/api/transactions/${hash}`);
    expect(again.body).toBe(sealed.body);
    expect(again.headers.etag).toBe(sealed.headers.etag);
    expect(again.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(again.headers['cache-control']).toBe(IMMUTABLE);
    expect(again.headers['api-version']).toBe('1');
    expect(again.headers['x-content-type-options']).toBe('nosniff');
    expect(reads).toHaveBeenCalledTimes(3);
    // The hash in the path is case-insensitive: the same record, the same answer.
    expect((await admin.get(`/api/transactions/0x${hash.slice(2).toUpperCase()}`)).body).toBe(sealed.body);
  });

  it('answers 304 with no body to If-None-Match naming the current tag, and the body otherwise', async () => {
    const hash = await mint('bob', 5);
    await ledger.producer.sealNext();
    const first = await admin.get(`/api/transactions/${hash}`);
    const etag = first.headers.etag as string;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const conditional = await admin.get(`/api/transactions/${hash}`, undefined, { 'if-none-match': header });
      expect(conditional.status, header).toBe(304);
      expect(conditional.body).toBe('');
      expect(conditional.headers.etag).toBe(etag);
      expect(conditional.headers['cache-control']).toBe(IMMUTABLE);
    }
    const stale = await admin.get(`/api/transactions/${hash}`, undefined, { 'if-none-match': '"not-this-one"' });
    expect(stale.status).toBe(200);
    expect(stale.body).toBe(first.body);
  });

  it('still verifies the token on a cached answer', async () => {
    const hash = await mint('carol', 1);
    await ledger.producer.sealNext();
    await admin.get(`/api/transactions/${hash}`);
    expectProblem(await admin.get(`/api/transactions/${hash}`, null), 401, 'missing_token');
    expectProblem(await admin.get(`/api/transactions/${hash}`, 'not-a-token'), 401, 'invalid_token');
  });

  it('answers a block from the cache with the same bytes as the first time, ETag and immutable', async () => {
    await mint('dave', 2);
    await mint('erin', 3);
    await ledger.producer.sealNext();
    const reads = vi.spyOn(ledger.service, 'block');
    const first = await admin.get('/api/blocks/1');
    expect(Object.keys(first.json)).toEqual(['number', 'hash', 'parent_hash', 'timestamp', 'transactions_count', 'transactions_root', 'native_price', 'transactions']);
    expect(first.json.transactions).toHaveLength(2);
    expect(first.headers['cache-control']).toBe(IMMUTABLE);
    const again = await admin.get('/api/blocks/1');
    expect(again.body).toBe(first.body);
    expect(reads).toHaveBeenCalledTimes(1);
    const conditional = await admin.get('/api/blocks/1', undefined, { 'if-none-match': first.headers.etag as string });
    expect(conditional.status).toBe(304);
    // A block that does not exist yet is not remembered as missing: once sealed, it is served.
    expectProblem(await admin.get('/api/blocks/2'), 404, 'block_not_found');
    await mint('frank', 4);
    await ledger.producer.sealNext();
    expect((await admin.get('/api/blocks/2')).json.number).toBe(2);
  });

  it('answers many lookups arriving together, each with its own record (kept, pending or unknown; written at the end of the turn)', async () => {
    const hashes = [await mint('carol', 1), await mint('dave', 2), await mint('erin', 3)];
    await ledger.producer.sealNext();
    const first = await Promise.all(hashes.map((hash) => admin.get(`/api/transactions/${hash}`)));
    const block = await admin.get('/api/blocks/1');
    const pending = await mint('frank', 4);
    const urls = Array.from({ length: 30 }, (_, index) => (index % 4 === 3 ? '/api/blocks/1' : `/api/transactions/${hashes[index % 4]}`));
    const answers = await Promise.all([
      ...urls.map((url) => admin.get(url)),
      admin.get(`/api/transactions/${hashes[0]}`, undefined, { 'if-none-match': first[0]?.headers.etag as string }),
      admin.get(`/api/transactions/${pending}`),
      admin.get(`/api/transactions/0x${'1'.repeat(64)}`),
    ]);
    answers.slice(0, urls.length).forEach((answer, index) => {
      expect(answer.status).toBe(200);
      expect(answer.body).toBe(index % 4 === 3 ? block.body : first[index % 4]?.body);
    });
    expect(answers.at(-3)?.status).toBe(304);
    expect(answers.at(-2)?.json).toMatchObject({ tx_hash: pending, status: 'pending' });
    expect(answers.at(-1)?.status).toBe(404);
  });

  it('answers the same through /api/v1', async () => {
    const hash = await mint('grace', 6);
    await ledger.producer.sealNext();
    const plain = await admin.get(`/api/transactions/${hash}`);
    const versioned = await admin.get(`/api/v1/transactions/${hash}`);
    expect(versioned.body).toBe(plain.body);
    expect(versioned.headers.etag).toBe(plain.headers.etag);
  });
});

describe('the rate limit on cached answers', () => {
  it('counts every cached answer: past the limit, 429 like any other request', async () => {
    // Six requests a day: the bucket does not refill during the test, whatever the machine's speed.
    const ledger = await startTestTabula({ RATE_LIMIT_MAX: '6', RATE_LIMIT_WINDOW_MS: '86400000' });
    try {
      const admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
      const reader = clientFor(ledger, await ledger.token('reader'));
      const hash = (await admin.post(SUBMIT, { from: 'treasury', to: 'ivan', amount: 1, token: 'TAB', type: 'mint' })).json.tx_hash as string;
      await ledger.producer.sealNext();
      const reads = vi.spyOn(ledger.service, 'transaction');
      for (let request = 1; request <= 6; request += 1) expect((await reader.get(`/api/transactions/${hash}`)).status).toBe(200);
      expect(reads).toHaveBeenCalledTimes(1);
      const refused = await reader.get(`/api/transactions/${hash}`);
      expectProblem(refused, 429, 'rate_limited');
      expect(refused.headers.etag).toBeUndefined();
    } finally {
      await ledger.close();
    }
  });
});

describe('READ_CACHE_MAX_BYTES=0', () => {
  it('keeps nothing, and still answers with ETag, immutable and 304', async () => {
    const ledger = await startTestTabula({ READ_CACHE_MAX_BYTES: '0' });
    try {
      const admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
      const hash = (await admin.post(SUBMIT, { from: 'treasury', to: 'heidi', amount: 1, token: 'TAB', type: 'mint' })).json.tx_hash as string;
      await ledger.producer.sealNext();
      const reads = vi.spyOn(ledger.service, 'transaction');
      const first = await admin.get(`/api/transactions/${hash}`);
      const second = await admin.get(`/api/transactions/${hash}`, undefined, { 'if-none-match': first.headers.etag as string });
      expect(second.status).toBe(304);
      expect(reads).toHaveBeenCalledTimes(2);
    } finally {
      await ledger.close();
    }
  });
});
