/**
 * Issue 12: the history tree over blocks, its proofs and signed checkpoints over HTTP (both stores):
 * every proof verifies against roots recomputed from the blocks, checkpoints are signed and reproducible,
 * bad sizes are 4xx with their codes, and a ledger that predates the tree has it filled in at start.
 */
import { createPublicKey, verify } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkpointFieldsMismatch, parseCheckpointNote } from '../../src/domain/shared/checkpoint.js';
import { runHashSteps } from '../../src/domain/shared/hash-steps.js';
import { sha256 } from '../../src/domain/hashing.js';
import { hexToBytes, toHashHex } from '../../src/domain/shared/hex.js';
import { verifyConsistencySteps } from '../../src/domain/shared/history-tree.js';
import { merkleRoot, rootFromInclusionProof } from '../../src/domain/shared/merkle.js';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Client } from '../support/http-client.js';

describe('history tree and checkpoints', () => {
  let ledger: TestTabula;
  let admin: Client;

  beforeEach(async () => {
    ledger = await startTestTabula();
    admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
  });
  afterEach(async () => { await ledger.close(); });

  async function sealBlocks(count: number): Promise<string[]> {
    const hashes: string[] = [];
    for (let index = 0; index < count; index += 1) {
      const receipt = await admin.post('/api/transactions/submit', { token: 'TAB', from: 'treasury', to: `user${index}`, amount: 1, type: 'mint' });
      hashes.push(receipt.json.tx_hash);
      await ledger.producer.sealNext();
    }
    return hashes;
  }

  /** Empties the history tree behind the service's back, as a ledger from before it would be: on SQLite from a connection of the test's own (the store's is on its thread). */
  async function forgetHistoryNodes(): Promise<void> {
    const database = ledger.config.database;
    if (database.kind === 'sqlite') {
      const db = new Database(database.path);
      try {
        db.exec('DELETE FROM history_nodes');
      } finally {
        db.close();
      }
      return;
    }
    await (ledger.store as unknown as { pool: { query(sql: string): Promise<unknown> } }).pool.query('DELETE FROM history_nodes');
  }

  async function blockHashes(): Promise<Uint8Array[]> {
    const page = (await admin.get('/api/blocks?limit=100')).json as { blocks: Array<{ hash: string }> };
    return page.blocks.map((block) => hexToBytes(block.hash)).reverse();
  }

  it('proves every block in every history size and every history consistent with every later one', async () => {
    await sealBlocks(8);
    const leaves = await blockHashes();
    expect(leaves).toHaveLength(9);
    const root = (size: number) => merkleRoot(sha256, leaves.slice(0, size));
    for (let size = 1; size <= 9; size += 1) {
      for (let number = 0; number < size; number += 1) {
        const proof = (await admin.get(`/api/blocks/${number}/proof?size=${size}`)).json;
        expect(proof).toMatchObject({ block_number: number, block_hash: toHashHex(leaves[number] as Uint8Array), size, leaf_index: number });
        const path = proof.audit_path.map(hexToBytes);
        expect(rootFromInclusionProof(sha256, leaves[number] as Uint8Array, number, size, path)).toEqual(root(size));
      }
      for (let to = size; to <= 9; to += 1) {
        const { proof } = (await admin.get(`/api/v1/chain/consistency?from=${size}&to=${to}`)).json;
        expect(runHashSteps(verifyConsistencySteps(size, to, root(size), root(to), proof.map(hexToBytes)), sha256)).toBe(true);
      }
    }
    expect((await admin.get('/api/blocks/3/proof')).json.size).toBe(9);
  });

  it('gives a transaction proof its block\'s inclusion in the latest history', async () => {
    const [tx_hash] = await sealBlocks(3);
    const proof = (await admin.get(`/api/transactions/${tx_hash}/proof`)).json;
    const leaves = await blockHashes();
    expect(proof.history).toMatchObject({ size: 4, history_root: toHashHex(merkleRoot(sha256, leaves)), leaf_index: 1 });
    expect(rootFromInclusionProof(sha256, hexToBytes(proof.block_hash), 1, 4, proof.history.audit_path.map(hexToBytes))).toEqual(merkleRoot(sha256, leaves));
  });

  it('signs checkpoints with the published key, the same for the same size', async () => {
    await sealBlocks(4);
    const key = await ledger.app.inject({ method: 'GET', url: '/.well-known/tabula-checkpoint-key' });
    expect(key.statusCode).toBe(200);
    const { public_key, key_id, algorithm } = key.json();
    expect(algorithm).toBe('Ed25519');
    expect(key_id).toBe(ledger.config.checkpoint_signing_key?.key_id);
    const checkpoint = (await admin.get('/api/checkpoint')).json;
    const leaves = await blockHashes();
    expect(checkpoint).toMatchObject({ size: 5, block_number: 4, block_hash: toHashHex(leaves[4] as Uint8Array), history_root: toHashHex(merkleRoot(sha256, leaves)), key_id });
    expect(checkpointFieldsMismatch(checkpoint)).toBeNull();
    const note = parseCheckpointNote(checkpoint.note);
    expect(note?.origin).toBe(`tabula/${toHashHex(leaves[0] as Uint8Array)}`);
    expect(checkpoint.note.split('\n').slice(0, 3)).toEqual([note?.origin, '5', Buffer.from(merkleRoot(sha256, leaves)).toString('base64')]);
    const spki = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(public_key, 'base64').toString('base64url') }, format: 'jwk' });
    expect(verify(null, Buffer.from(checkpoint.note), spki, Buffer.from(checkpoint.signature, 'base64'))).toBe(true);
    expect(verify(null, Buffer.from(checkpoint.note.replace('\n5\n', '\n6\n')), spki, Buffer.from(checkpoint.signature, 'base64'))).toBe(false);
    const older = (await admin.get('/api/v1/checkpoint?size=2')).json;
    expect(older).toMatchObject({ size: 2, block_number: 1 });
    await sealBlocks(1);
    expect((await admin.get('/api/checkpoint?size=2')).json).toEqual(older);
  });

  it('refuses bad sizes with their codes, writing nothing', async () => {
    await sealBlocks(2);
    expectProblem(await admin.get('/api/checkpoint?size=0'), 400, 'invalid_history_size');
    expectProblem(await admin.get('/api/checkpoint?size=x'), 400, 'invalid_history_size');
    expectProblem(await admin.get('/api/checkpoint?size=4'), 404, 'history_size_not_reached');
    expectProblem(await admin.get('/api/chain/consistency?from=3&to=2'), 400, 'invalid_history_size');
    expectProblem(await admin.get('/api/chain/consistency?from=1&to=9'), 404, 'history_size_not_reached');
    expectProblem(await admin.get('/api/chain/consistency?from=1'), 400, 'validation_failed');
    expectProblem(await admin.get('/api/blocks/2/proof?size=2'), 400, 'block_not_in_history');
    expectProblem(await admin.get('/api/blocks/9/proof'), 404, 'block_not_found');
    expectProblem(await admin.get('/api/blocks/x/proof'), 400, 'invalid_block_number');
    expect((await admin.get('/api/blocks')).json.total).toBe(3);
  });

  it('fills in the history tree of a ledger whose blocks predate it', async () => {
    await sealBlocks(5);
    const before = (await admin.get('/api/checkpoint')).json;
    await forgetHistoryNodes();
    expect(await ledger.store.historySize()).toBe(0);
    const { fillHistory } = await import('../../src/service/history-writer.js');
    expect(await fillHistory(ledger.store)).toBe(6);
    expect((await admin.get('/api/checkpoint')).json).toEqual(before);
    await sealBlocks(1);
    expect((await admin.get('/api/checkpoint?size=6')).json).toEqual(before);
  });
});
