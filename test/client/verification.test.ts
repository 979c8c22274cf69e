/**
 * Adversarial verification: the SDK against a lying server (a loopback double in front of the real
 * service that rewrites its answers). Every tampering is rejected with a VerificationError, including
 * forgeries that are consistent by themselves (recomputed roots and hashes), which only the checks
 * against the hashed header or the chain's links can catch; the lesson of immudb's
 * GHSA-672p-m5jq-mrh8: never take a root or size the server states on the side.
 */
import { TabulaClient, VerificationError, type Block, type InclusionProof } from '@tabula/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { blockHash, sha256, transactionsRoot } from '../../src/domain/hashing.js';
import { hexToBytes, toHashHex } from '../../src/domain/shared/hex.js';
import { rootFromInclusionProof } from '../../src/domain/shared/merkle.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { forward, pass, startDouble, type Double } from '../support/test-double.js';

type Tamper = (path: string, body: string) => string;

function rehash<T extends Block>(block: T): T {
  return { ...block, hash: blockHash(block) };
}

function flipFirstNibble(hash: string): string {
  return `0x${hash[2] === '0' ? '1' : '0'}${hash.slice(3)}`;
}

describe('verification against a lying server', () => {
  let server: ServiceProcess;
  let honest: TabulaClient;
  let liar: Double;
  let lying: TabulaClient;
  let tamper: Tamper = (_path, body) => body;
  let big: Block; // a block in the middle of the chain with several transactions
  let latest: number;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '400' } }); // long enough for the burst below to share a block
    const token = await server.token('treasury', { admin: true });
    honest = new TabulaClient({ baseUrl: server.url, jwt: token });
    const mint = (to: string) => honest.submitTransaction({ from: 'treasury', to, amount: 7, token: 'TAB', type: 'mint' });
    await honest.waitForTransaction((await mint('first')).tx_hash, { intervalMs: 25 });
    const burst = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map(mint));
    await Promise.all(burst.map((receipt) => honest.waitForTransaction(receipt.tx_hash, { intervalMs: 25 })));
    await honest.waitForTransaction((await mint('last')).tx_hash, { intervalMs: 25 });
    latest = (await honest.getStats()).latest_block_number;
    const blocks = await Promise.all(Array.from({ length: latest + 1 }, (_, number) => honest.getBlock(number)));
    big = blocks.reduce((best, block) => (block.transactions_count > best.transactions_count ? block : best));
    expect(big.transactions_count).toBeGreaterThanOrEqual(2);
    expect(big.number).toBeLessThan(latest);

    liar = await startDouble(async (request, response) => {
      const upstream = await forward(server.url, request);
      pass(response, upstream, upstream.status === 200 ? tamper(request.path.split('?')[0] as string, upstream.body) : upstream.body);
    });
    lying = new TabulaClient({ baseUrl: liar.url, jwt: token });
  });
  afterEach(() => { tamper = (_path, body) => body; });
  afterAll(async () => {
    await liar?.close();
    await server?.close();
  });

  /** Rewrites the JSON answer of `path` only. */
  function on<T>(path: string, change: (record: T) => T): void {
    tamper = (seen, body) => (seen === path ? JSON.stringify(change(JSON.parse(body) as T)) : body);
  }

  async function verificationError(promise: Promise<unknown>): Promise<VerificationError> {
    const error = await promise.then(() => null, (failure: unknown) => failure);
    expect(error).toBeInstanceOf(VerificationError);
    return error as VerificationError;
  }

  const proofPath = (tx_hash: string) => `/api/transactions/${tx_hash}/proof`;
  const target = () => big.transactions[1] as string;

  it('control: through the double, untouched answers all verify', async () => {
    const chain = await lying.verifyChain();
    expect(chain).toMatchObject({ from: 0, to: latest, blocks_verified: latest + 1 });
    await lying.verifyBlock(await lying.getBlock(big.number));
    await lying.verifyInclusion(await lying.getProof(target()));
    await lying.verifyTransaction(await lying.getTransaction(target()));
  });

  describe('a tampered proof', () => {
    it('a flipped audit path element', async () => {
      on<InclusionProof>(proofPath(target()), (proof) => ({ ...proof, audit_path: [flipFirstNibble(proof.audit_path[0] as string), ...proof.audit_path.slice(1)] }));
      const error = await verificationError(lying.getProof(target()).then((proof) => lying.verifyInclusion(proof)));
      expect(error).toMatchObject({ code: 'inclusion_proof_invalid', block_number: big.number, tx_hash: target() });
    });

    it('another leaf index', async () => {
      on<InclusionProof>(proofPath(target()), (proof) => ({ ...proof, leaf_index: proof.leaf_index === 0 ? 1 : 0 }));
      expect((await verificationError(lying.getProof(target()).then((proof) => lying.verifyInclusion(proof)))).code).toBe('inclusion_proof_invalid');
    });

    it('a tree size that is not the block\'s transaction count', async () => {
      on<InclusionProof>(proofPath(target()), (proof) => ({ ...proof, tree_size: proof.tree_size + 1 }));
      expect((await verificationError(lying.getProof(target()).then((proof) => lying.verifyInclusion(proof)))).code).toBe('transactions_count_mismatch');
    });

    it('a self-consistent forged path with the root it leads to: the root inside the hashed header decides', async () => {
      on<InclusionProof>(proofPath(target()), (proof) => {
        const audit_path = proof.audit_path.map((hash, index) => (index === 0 ? flipFirstNibble(hash) : hash));
        const root = rootFromInclusionProof(sha256, hexToBytes(proof.tx_hash), proof.leaf_index, proof.tree_size, audit_path.map(hexToBytes));
        return { ...proof, audit_path, transactions_root: toHashHex(root as Uint8Array) };
      });
      expect((await verificationError(lying.getProof(target()).then((proof) => lying.verifyInclusion(proof)))).code).toBe('transactions_root_mismatch');
    });

    it('a proof of another transaction than the one asked for', async () => {
      const other = big.transactions[0] as string;
      tamper = (path, body) => (path === proofPath(target()) ? body.replaceAll(target(), other) : body);
      expect((await verificationError(lying.getProof(target()))).code).toBe('record_mismatch');
    });

    it('a whole forged block with a recomputed hash passes alone, but not against a verified chain', async () => {
      const outsider = `0x${'5a'.repeat(32)}`;
      const forged_list = [...big.transactions.slice(0, -1), outsider];
      const forged = rehash({ ...big, transactions: forged_list, transactions_root: transactionsRoot(forged_list) });
      const forged_proof: InclusionProof = {
        tx_hash: outsider, block_number: big.number, block_hash: forged.hash, transactions_root: forged.transactions_root,
        leaf_index: forged_list.length - 1, tree_size: forged_list.length,
        audit_path: (await import('../../src/domain/hashing.js')).transactionsAuditPath(forged_list, forged_list.length - 1),
      };
      on<Block>(`/api/blocks/${big.number}`, () => forged);
      // Consistent by itself: nothing fetched from this server alone can refute it...
      await lying.verifyInclusion(forged_proof);
      // ...but the next block's parent_hash commits to the real block, so the chain breaks there.
      const error = await verificationError(lying.verifyChain());
      expect(error).toMatchObject({ code: 'parent_hash_mismatch', block_number: big.number + 1 });
      // Anchored to a header from a verified chain, the forged proof fails.
      tamper = (_path, body) => body;
      const verified: Block[] = [];
      await honest.verifyChain(0, undefined, { onBlock: (header) => { if (header.number === big.number) verified.push({ ...header, transactions: [] }); } });
      const anchored = await verificationError(lying.verifyInclusion(forged_proof, { header: verified[0] as Block }));
      expect(anchored.code).toBe('block_hash_mismatch');
    });
  });

  describe('a tampered block', () => {
    const blockPath = () => `/api/blocks/${big.number}`;

    it('a changed timestamp (hash not recomputed)', async () => {
      on<Block>(blockPath(), (block) => ({ ...block, timestamp: block.timestamp + 1 }));
      expect(await verificationError(lying.getBlock(big.number).then((block) => lying.verifyBlock(block)))).toMatchObject({ code: 'block_hash_mismatch', block_number: big.number });
      expect(await verificationError(lying.verifyChain())).toMatchObject({ code: 'block_hash_mismatch', block_number: big.number });
      expect(await verificationError(lying.getProof(target()).then((proof) => lying.verifyInclusion(proof)))).toMatchObject({ code: 'block_hash_mismatch' });
    });

    it('a changed transactions_root, even with the hash recomputed', async () => {
      on<Block>(blockPath(), (block) => rehash({ ...block, transactions_root: flipFirstNibble(block.transactions_root) }));
      expect((await verificationError(lying.getBlock(big.number).then((block) => lying.verifyBlock(block)))).code).toBe('transactions_root_mismatch');
    });

    it('a transactions_count that does not match the list', async () => {
      on<Block>(blockPath(), (block) => ({ ...block, transactions_count: block.transactions_count - 1 }));
      expect((await verificationError(lying.verifyChain())).code).toBe('transactions_count_mismatch');
    });

    it('another block than the one asked for', async () => {
      on<Block>(blockPath(), () => big.number > 0 ? { ...big, number: big.number - 1 } : big);
      expect((await verificationError(lying.getBlock(big.number))).code).toBe('record_mismatch');
    });

    it('a malformed hash', async () => {
      on<Block>(blockPath(), (block) => ({ ...block, hash: block.hash.toUpperCase().replace('0X', '0x') }));
      expect((await verificationError(lying.getBlock(big.number).then((block) => lying.verifyBlock(block)))).code).toBe('malformed_record');
    });
  });

  it('a reordered transaction list is rejected (the root commits to the order)', async () => {
    on<Block>(`/api/blocks/${big.number}`, (block) => ({ ...block, transactions: [...block.transactions].reverse() }));
    const error = await verificationError(lying.getBlock(big.number).then((block) => lying.verifyBlock(block)));
    expect(error).toMatchObject({ code: 'transactions_root_mismatch', block_number: big.number });
    expect((await verificationError(lying.verifyChain())).block_number).toBe(big.number);
  });

  it('a broken parent link is rejected by the chain walk, even when the block rehashes to a valid header', async () => {
    on<Block>(`/api/blocks/${big.number}`, (block) => rehash({ ...block, parent_hash: flipFirstNibble(block.parent_hash) }));
    await lying.verifyBlock(await lying.getBlock(big.number)); // consistent by itself
    const error = await verificationError(lying.verifyChain());
    expect(error).toMatchObject({ code: 'parent_hash_mismatch', block_number: big.number });
    expect(error.message).toContain(`block ${big.number}:`);
    const previous = await honest.getBlock(big.number - 1);
    await expect(lying.getBlock(big.number).then((block) => lying.verifyBlock(block, { parent: previous }))).rejects.toMatchObject({ code: 'parent_hash_mismatch' });
  });

  it('a rewritten genesis parent is rejected', async () => {
    on<Block>('/api/blocks/0', (block) => rehash({ ...block, parent_hash: `0x${'11'.repeat(32)}` }));
    expect(await verificationError(lying.getBlock(0).then((block) => lying.verifyBlock(block)))).toMatchObject({ code: 'parent_hash_mismatch', block_number: 0 });
  });

  it("an account's history that is another account's, or lists a transaction that is not the account's, is rejected", async () => {
    const path = '/api/accounts/a/transactions';
    expect((await lying.listAccountTransactions('a')).transactions).toHaveLength(1);
    type Page = { user_id: string; transactions: Array<{ to: string; tx_hash: string }>; next_cursor: string | null };
    on<Page>(path, (page) => ({ ...page, user_id: 'b' }));
    expect((await verificationError(lying.listAccountTransactions('a'))).code).toBe('record_mismatch');
    on<Page>(path, (page) => ({ ...page, transactions: page.transactions.map((tx) => ({ ...tx, to: 'b' })) }));
    expect(await verificationError(lying.listAccountTransactions('a'))).toMatchObject({ code: 'record_mismatch', tx_hash: expect.any(String) });
    // A next_cursor that always names the same place (past the newest, so the page repeats itself).
    on<Page>(path, (page) => ({ ...page, next_cursor: '999999999' }));
    const looping = (async () => { for await (const _ of lying.iterateAccountTransactions('a')) { /* reads on */ } })();
    await expect(looping).rejects.toThrow(/does not move on/);
  });

  it('a tampered transaction record (amount, metadata or nonce) no longer hashes to its tx_hash', async () => {
    const path = `/api/transactions/${target()}`;
    for (const change of [(body: string) => body.replace('"amount":7', '"amount":70'), (body: string) => body.replace('"metadata":{}', '"metadata":{"x":1}'), (body: string) => body.replace(/"nonce":"[0-9a-f]/, '"nonce":"z')]) {
      tamper = (seen, body) => (seen === path ? change(body) : body);
      const record = await lying.getTransaction(target());
      expect((await verificationError(lying.verifyTransaction(record))).code).toMatch(/^(transaction_hash_mismatch|malformed_record)$/);
    }
  });
});
