/** One spelling per account, at the HTTP edge: NFD and invisible format characters refused everywhere an id is read. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

const NFC = 'Zo\u00e9';
const NFD = 'Zoe\u0301';
const RLO = 'alice\u202Egpj.exe';

describe('user ids at the HTTP edge', () => {
  let ledger: TestTabula;
  let admin: Client;

  beforeEach(async () => {
    ledger = await startTestTabula();
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
  });
  afterEach(async () => { await ledger.close(); });

  const mint = (to: string) => admin.post('/api/transactions/submit', { from: 'treasury', to, amount: 5, token: 'TAB', type: 'mint' });

  it('refuses an NFD id and a bidi override in a submission, writing nothing', async () => {
    expectProblem(await mint(NFD), 400, 'invalid_user_id');
    expectProblem(await mint(RLO), 400, 'invalid_user_id');
    expect(await ledger.store.pendingCount()).toBe(0);
    expect((await mint(NFC)).status).toBe(202);
  });

  it('refuses them in balance and history paths and in the event filter', async () => {
    for (const id of [NFD, RLO]) {
      const encoded = encodeURIComponent(id);
      expectProblem(await admin.get(`/api/balance/${encoded}`), 400, 'invalid_user_id');
      expectProblem(await admin.get(`/api/accounts/${encoded}/transactions`), 400, 'invalid_user_id');
      expect((await admin.get(`/api/events?after=0&account=${encoded}`)).status).toBe(400);
    }
    expect((await admin.get(`/api/balance/${encodeURIComponent(NFC)}`)).status).toBe(200);
  });

  it('lets a token whose subject is spelt NFD act on the NFC account: one person, one account', async () => {
    expect((await mint(NFC)).status).toBe(202);
    await ledger.producer.sealNext();
    const zoe = clientFor(ledger, await ledger.token(NFD));
    const sent = await zoe.post('/api/transactions/submit', { from: NFC, to: 'bob', amount: 1, token: 'TAB', type: 'transfer' });
    expect(sent.status).toBe(202);
    await ledger.producer.sealNext();
    expect((await admin.get(`/api/transactions/${sent.json.tx_hash}`)).json).toMatchObject({ status: 'confirmed', from: NFC });
  });
});
