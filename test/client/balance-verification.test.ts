/**
 * The SDK's balance proofs against a lying server (a loopback double in front of the real service that
 * rewrites its answers): a rewritten balance, a rewritten proven balance, a forged path, or a root the
 * server does not store each fail with a VerificationError that says what; the honest answers verify.
 */
import { TabulaClient, VerificationError, verifyBalanceProof, type BalanceProof } from '@tabula/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { balanceEntryJson, balanceKey } from '../../src/domain/shared/balance-commitment.js';
import { BalanceTree, balanceRootHex } from '../../src/domain/balance-tree.js';
import { sha256 } from '../../src/domain/hashing.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { forward, pass, startDouble, type Double } from '../support/test-double.js';

type Answer = { user_id: string; native: number; usdg: number; total_usd: number; proof: BalanceProof };

describe('verified balances against a lying server', () => {
  let server: ServiceProcess;
  let honest: TabulaClient;
  let liar: Double;
  let lying: TabulaClient;
  let tamper: (path: string, body: string) => string = (_path, body) => body;
  let token: string;
  const raw = async (path: string): Promise<string> => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).text();

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '50' } });
    token = await server.token('treasury', { admin: true });
    honest = new TabulaClient({ baseUrl: server.url, jwt: token });
    for (const to of ['alice', 'bob', 'carol']) {
      await honest.waitForTransaction((await honest.submitTransaction({ from: 'treasury', to, amount: 12.5, token: 'TAB', type: 'mint' })).tx_hash, { intervalMs: 20 });
    }
    liar = await startDouble(async (request, response) => {
      const upstream = await forward(server.url, request);
      pass(response, upstream, upstream.status === 200 ? tamper(request.path, upstream.body) : upstream.body);
    });
    lying = new TabulaClient({ baseUrl: liar.url, jwt: token });
  }, 60_000);
  afterEach(() => { tamper = (_path, body) => body; });
  afterAll(async () => {
    await liar?.close();
    await server?.close();
  });

  function onBalance(change: (answer: Answer) => Answer): void {
    tamper = (path, body) => (path.startsWith('/api/balance/alice') ? JSON.stringify(change(JSON.parse(body) as Answer)) : body);
  }

  async function verificationError(promise: Promise<unknown>): Promise<VerificationError> {
    const error = await promise.then(() => null, (failure: unknown) => failure);
    expect(error).toBeInstanceOf(VerificationError);
    return error as VerificationError;
  }

  it('control: the honest answers verify, through the double too, a zero balance by absence', async () => {
    const alice = await lying.getBalanceVerified('alice');
    expect(alice).toMatchObject({ user_id: 'alice', native: 12.5, usdg: 0, verified: { against: 'server_root', units: { TAB: 1_250_000_000n, USDG: 0n } } });
    expect((await honest.getBalanceVerified('nobody')).verified.units).toEqual({ TAB: 0n, USDG: 0n });
  });

  it('a rewritten balance fails loudly: balance_mismatch', async () => {
    onBalance((answer) => ({ ...answer, native: 1000 }));
    const error = await verificationError(lying.getBalanceVerified('alice'));
    expect(error.code).toBe('balance_mismatch');
    expect(error.message).toMatch(/states 1000 TAB, but the proof proves 1250000000 base units/);
  });

  it('a rewritten balance with its proof entry rewritten to match: balance_proof_invalid', async () => {
    onBalance((answer) => ({
      ...answer, native: 1000,
      proof: { ...answer.proof, entries: answer.proof.entries.map((entry) => (entry.token === 'TAB' && entry.leaf !== null ? { ...entry, units: '100000000000', leaf: { ...entry.leaf, units: '100000000000' } } : entry)) },
    }));
    const error = await verificationError(lying.getBalanceVerified('alice'));
    expect(error.code).toBe('balance_proof_invalid');
    expect(error.message).toMatch(/does not lead to balance root/);
  });

  it('a balance hidden as zero (the leaf dropped): balance_proof_invalid', async () => {
    onBalance((answer) => ({
      ...answer, native: 0, total_usd: 0,
      proof: { ...answer.proof, entries: answer.proof.entries.map((entry) => (entry.token === 'TAB' ? { ...entry, units: '0', leaf: null } : entry)) },
    }));
    expect((await verificationError(lying.getBalanceVerified('alice'))).code).toBe('balance_proof_invalid');
  });

  it("another user's proof: balance_proof_invalid", async () => {
    const bob = await raw('/api/balance/bob?proof=true');
    onBalance(() => ({ ...(JSON.parse(bob) as Answer), user_id: 'alice' }));
    expect((await verificationError(lying.getBalanceVerified('alice'))).code).toBe('balance_proof_invalid');
  });

  it('a root that is not the stored one (a proof of a forged state, consistent by itself): balance_root_mismatch', async () => {
    tamper = (path, body) => (path.endsWith('/balance-root') ? body.replace(/"balance_root":"0x[0-9a-f]/, '"balance_root":"0xf') : body);
    const error = await verificationError(lying.getBalanceVerified('alice'));
    expect(error.code).toBe('balance_root_mismatch');
  });

  describe('a light client (trusting the checkpoint key)', () => {
    const lightClient = async (base_url: string) => new TabulaClient({ baseUrl: base_url, jwt: token, trust: { publicKey: (await honest.getCheckpointKey()).public_key } });

    it('checks the root against the signed checkpoint\'s balances line', async () => {
      const verified = await (await lightClient(liar.url)).getBalanceVerified('alice');
      expect(verified.verified).toMatchObject({ against: 'checkpoint', units: { TAB: 1_250_000_000n, USDG: 0n } });
      expect(verified.verified.anchor?.checkpoint.note).toContain(`balances ${verified.verified.block_number} `);
    });

    it('a forged state with a proof consistent by itself fails against the signed root: balance_root_mismatch', async () => {
      const forged = BalanceTree.empty(sha256).update([{ key: balanceKey(sha256, 'alice', 'TAB'), units: 100_000_000_000n }]);
      onBalance((answer) => {
        const entries = ['TAB', 'USDG'].map((symbol) => {
          const key = balanceKey(sha256, 'alice', symbol);
          return balanceEntryJson(symbol, key, forged.prove(key));
        });
        return { ...answer, native: 1000, proof: { ...answer.proof, balance_root: balanceRootHex(forged), entries } };
      });
      const error = await verificationError((await lightClient(liar.url)).getBalanceVerified('alice'));
      expect(error.code).toBe('balance_root_mismatch');
      expect(error.message).toMatch(/is not the one signed in checkpoint/);
    });
  });

  it('verifyBalanceProof is pure: it refuses a proof without entries', async () => {
    const answer = JSON.parse(await raw('/api/balance/alice?proof=true')) as Answer;
    const balance = { user_id: 'alice', native_text: '12.5', usdg_text: '0' };
    await expect(verifyBalanceProof('alice', balance, answer.proof)).resolves.toMatchObject({ block_number: answer.proof.block_number });
    expect((await verificationError(verifyBalanceProof('alice', balance, { ...answer.proof, entries: [] }))).code).toBe('balance_proof_invalid');
  });
});
