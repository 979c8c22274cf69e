// GET /api/balance/{userId}?proof=true: balances proven against the newest block's balance root, which pending transactions never change.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkBalanceEntry, type BalanceProofJson } from '../../src/domain/shared/balance-commitment.js';
import { sha256 } from '../../src/domain/hashing.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

const SUBMIT = '/api/transactions/submit';

describe('balance proofs over HTTP', () => {
  let ledger: TestTabula;
  let admin: Client;

  beforeEach(async () => {
    ledger = await startTestTabula();
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
  });
  afterEach(async () => { await ledger.close(); });

  const submit = (body: Record<string, unknown>) => admin.post(SUBMIT, body);

  function expectProven(proof: BalanceProofJson, user_id: string, expected: Record<string, bigint>): void {
    expect(proof.entries.map((entry) => entry.token).sort()).toEqual(Object.keys(expected).sort());
    for (const entry of proof.entries) {
      expect(checkBalanceEntry(sha256, user_id, entry, proof.balance_root)).toEqual({ ok: true, units: expected[entry.token] });
    }
  }

  it('proves every balance, and a zero one by absence, against the root stored for the newest block', async () => {
    await submit({ from: 'treasury', to: 'alice', amount: 1.5, token: 'TAB', type: 'mint' });
    await submit({ from: 'treasury', to: 'bob', amount: 2, token: 'USDG', type: 'mint' });
    await ledger.producer.sealNext();
    const answer = await admin.get('/api/balance/alice?proof=true');
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ user_id: 'alice', native: 1.5, usdg: 0 });
    const proof = answer.json.proof as BalanceProofJson;
    expect(proof.block_number).toBe(1);
    expectProven(proof, 'alice', { TAB: 150_000_000n, USDG: 0n });
    expect((await admin.get('/api/blocks/1/balance-root')).json).toEqual({ block_number: 1, balance_root: proof.balance_root });
    expect((await admin.get('/api/v1/balance/alice?proof=true')).json.proof).toEqual(proof);
    expectProven((await admin.get('/api/balance/nobody?proof=true')).json.proof, 'nobody', { TAB: 0n, USDG: 0n });
  });

  it('pending transactions change neither the proven balances nor the root; sealing does', async () => {
    await submit({ from: 'treasury', to: 'alice', amount: 3, token: 'TAB', type: 'mint' });
    await ledger.producer.sealNext();
    const before = (await admin.get('/api/balance/alice?proof=true')).json;
    await submit({ from: 'treasury', to: 'alice', amount: 4, token: 'TAB', type: 'mint' });
    const pending = (await admin.get('/api/balance/alice?proof=true')).json;
    expect(pending).toEqual(before);
    await ledger.producer.sealNext();
    const after = (await admin.get('/api/balance/alice?proof=true')).json;
    expect(after.native).toBe(7);
    expect(after.proof.block_number).toBe(2);
    expect(after.proof.balance_root).not.toBe(before.proof.balance_root);
    expectProven(after.proof, 'alice', { TAB: 700_000_000n, USDG: 0n });
    // Spending everything removes the leaf: the zero balance is proven by absence.
    await admin.post(SUBMIT, { from: 'alice', to: 'treasury', amount: 7, token: 'TAB', type: 'burn' });
    await ledger.producer.sealNext();
    expectProven((await admin.get('/api/balance/alice?proof=true')).json.proof, 'alice', { TAB: 0n, USDG: 0n });
  });

  it('answers without a proof by default or with proof=false, and refuses any other value', async () => {
    expect((await admin.get('/api/balance/alice')).json).not.toHaveProperty('proof');
    expect((await admin.get('/api/balance/alice?proof=false')).json).not.toHaveProperty('proof');
    for (const value of ['1', 'yes', 'TRUE', '']) expectProblem(await admin.get(`/api/balance/alice?proof=${value}`), 400, 'invalid_proof_flag');
    expectProblem(await admin.get('/api/blocks/99/balance-root'), 404, 'block_not_found');
    expectProblem(await admin.get('/api/blocks/x/balance-root'), 400, 'invalid_block_number');
  });
});
