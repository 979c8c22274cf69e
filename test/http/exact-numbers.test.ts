/** Numbers are never rounded: an amount a double cannot hold is kept exactly, any other such number refused. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isExactDouble, keepNumbersExact, mayHoldInexactNumber } from '../../src/http/json-body.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { expectProblem } from '../support/http-client.js';

describe('exact numbers in request bodies', () => {
  let ledger: TestTabula;
  let token: string;

  beforeEach(async () => {
    ledger = await startTestTabula();
    token = await ledger.token('treasury', { admin: true });
  });
  afterEach(async () => { await ledger.close(); });

  async function post(url: string, raw: string) {
    const response = await ledger.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: raw });
    expect(response.statusCode).toBeLessThan(500);
    return { status: response.statusCode, headers: response.headers, body: response.body, json: JSON.parse(response.body) };
  }

  it('keeps an amount with more digits than a double holds exactly as sent, never rounded', async () => {
    // JSON.parse reads this as 90000000000: the 0.00000762 would be lost.
    const answer = await post('/api/transactions/submit', '{"from":"treasury","to":"alice","amount":90000000000.00000762,"token":"TAB","type":"mint"}');
    expect(answer.status).toBe(202);
    const stored = await ledger.app.inject({ method: 'GET', url: `/api/transactions/${answer.json.tx_hash}`, headers: { authorization: `Bearer ${token}` } });
    expect(stored.body).toContain('"amount":90000000000.00000762');
  });

  it('reads a 17-digit amount as the decimal it is written as, where it was once refused', async () => {
    const answer = await post('/api/transactions/submit', '{"from":"treasury","to":"alice","amount":1234567890.1234567,"token":"TAB","type":"mint"}');
    expect(answer.status).toBe(202);
    const stored = await ledger.app.inject({ method: 'GET', url: `/api/transactions/${answer.json.tx_hash}`, headers: { authorization: `Bearer ${token}` } });
    expect(stored.body).toContain('"amount":1234567890.1234567');
  });

  it('refuses what an exact amount cannot be rather than rounding it into something it can', async () => {
    const too_precise = await post('/api/transactions/submit', '{"from":"treasury","to":"alice","amount":1.0000000000000000001,"token":"USDG","type":"mint"}');
    expectProblem(too_precise, 400, 'amount_too_precise');
    const too_large = await post('/api/transactions/submit', '{"from":"treasury","to":"alice","amount":12345678901234567890,"token":"TAB","type":"mint"}');
    expect(too_large.status).toBe(400);
    expect(['amount_out_of_range', 'amount_too_precise']).toContain(too_large.json.code);
    expect(await ledger.store.pendingCount()).toBe(0);
  });

  it('refuses a metadata number a double would round, naming the field and asking for a string', async () => {
    for (const number of ['12345678901234567890', '9007199254740993', '90000000000.00000762', '1e-400']) {
      const answer = await post('/api/transactions/submit', `{"from":"treasury","to":"alice","amount":1,"token":"TAB","type":"mint","metadata":{"order":{"id":${number}}}}`);
      expectProblem(answer, 400, 'number_not_exact');
      expect(answer.json.errors).toEqual([{ field: 'metadata.order.id', message: expect.stringMatching(/string/) }]);
    }
    expect(await ledger.store.pendingCount()).toBe(0);
    // The same numbers sent as strings are kept, and exact doubles with long digit runs pass as numbers.
    const kept = await post('/api/transactions/submit', '{"from":"treasury","to":"alice","amount":1,"token":"TAB","type":"mint","metadata":{"id":"12345678901234567890","safe":9007199254740991,"pi":3.141592653589793}}');
    expect(kept.status).toBe(202);
  });

  it('does the same for each item of a batch, and refuses an amount-named field inside metadata', async () => {
    const batch = await post('/api/transactions/batch', '{"transactions":[{"from":"treasury","to":"a","amount":90000000000.00000762,"token":"TAB","type":"mint"},{"from":"treasury","to":"b","amount":2,"token":"TAB","type":"mint"}]}');
    expect(batch.status).toBe(200);
    expect(batch.json.accepted).toBe(2);
    const nested = await post('/api/transactions/batch', '{"transactions":[{"from":"treasury","to":"a","amount":1,"token":"TAB","type":"mint","metadata":{"amount":90000000000.00000762}}]}');
    expectProblem(nested, 400, 'number_not_exact');
    expect(nested.json.errors[0].field).toBe('transactions.0.metadata.amount');
  });

  it('refuses a body too deep to read exactly with a 400, never a 500 (found by the edge fuzzer)', async () => {
    for (const depth of [80, 20_000]) {
      const nested = `${'['.repeat(depth)}${']'.repeat(depth)}`;
      expectProblem(await post('/api/transactions/submit', `{"from":"treasury","to":"a","amount":1234567890123456,"token":"TAB","type":"mint","metadata":{"x":${nested}}}`), 400, 'validation_failed');
      expectProblem(await post('/api/transactions/batch', `{"transactions":[{"amount":1234567890123456,"metadata":${nested}}]}`), 400, 'validation_failed');
    }
  });

  it('still refuses prototype-poisoning keys and malformed JSON on the exact path', async () => {
    expectProblem(await post('/api/transactions/submit', '{"__proto__":{"x":1},"amount":90000000000.00000762}'), 400, 'malformed_json');
    expectProblem(await post('/api/transactions/submit', '{"amount":90000000000.00000762,'), 400, 'malformed_json');
    // A key given twice with different values: read exactly, which one was meant cannot be told.
    const repeated = await post('/api/transactions/submit', '{"from":"treasury","to":"a","amount":1,"token":"TAB","type":"mint","metadata":{"a":1,"a":9007199254740993}}');
    expectProblem(repeated, 400, 'malformed_json');
    expect(repeated.json.detail).toContain('gives the key "a" twice');
  });
});

describe('the fast path test', () => {
  it('sends only bodies with a run of 16 digits to the lossless reading', () => {
    expect(mayHoldInexactNumber('{"amount":"12.5","to":"bob"}')).toBe(false);
    expect(mayHoldInexactNumber('{"amount":123456789012345}')).toBe(false);
    expect(mayHoldInexactNumber('{"amount":1234567890123456}')).toBe(true);
    expect(mayHoldInexactNumber('{"amount":123456789.0123456}')).toBe(true);
    expect(mayHoldInexactNumber('{"x":1e-400}')).toBe(true);
    expect(mayHoldInexactNumber('{"x":1e21}')).toBe(false);
  });

  it('calls a number exact when its double reads back as the same decimal, however it is written', () => {
    for (const text of ['0', '-0', '0.1', '1.0', '100', '1e21', '1E+21', '9007199254740991', '3.141592653589793', '0.30000000000000004', '1e400', '-2.5e-3']) {
      expect(isExactDouble(text), text).toBe(true);
    }
    for (const text of ['9007199254740993', '90000000000.00000762', '12345678901234567890', '1e-400', '0.1000000000000000000001', '-9007199254740993']) {
      expect(isExactDouble(text), text).toBe(false);
    }
  });

  it('leaves exact numbers and strings alone', () => {
    const text = '{"a":9007199254740991,"b":"1234567890123456789","c":[0.1,1e21]}';
    expect(keepNumbersExact(text, JSON.parse(text))).toEqual(JSON.parse(text));
  });
});
