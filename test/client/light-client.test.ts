/**
 * Issue 12: the SDK's light client against an honest and a lying server. The server is in process
 * and the client's `fetch` is routed to it through `app.inject()`, with a tampering hook in between (a
 * lying proxy) and a count of requests and bytes. A real fork is made by two ledgers that share the
 * checkpoint key and their first blocks, then diverge.
 */
import pino from 'pino';
import { ForkDetectedError, TabulaClient, VerificationError, type SignedCheckpoint } from '@tabula/client';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { blockHash } from '../../src/domain/hashing.js';
import { startTabula, type Tabula } from '../../src/compose.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { signTestToken, TEST_SECRET } from '../support/in-process-tabula.js';
import { TEST_CHECKPOINT_KEY } from '../support/service-process.js';
import { verifyEd25519Fallback } from '../../packages/client/src/signature.js';
import { generateKeyPairSync, sign } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

type Tamper = (path: string, body: string) => string;
type Wire = { requests: number; bytes: number; paths: string[] };

const config = loadConfig({ RATE_LIMIT_MAX: '100000', JWT_SECRET: TEST_SECRET, CHECKPOINT_SIGNING_KEY: TEST_CHECKPOINT_KEY, BLOCK_INTERVAL_MS: '3600000', LOG_LEVEL: 'silent' });
const PUBLIC_KEY = Buffer.from(config.checkpoint_signing_key?.public_key ?? []).toString('base64');

type Node = { ledger: Tabula; admin: string; seconds: number };

async function startNode(file = ':memory:'): Promise<Node> {
  let seconds = 1_767_225_600;
  const clock = { now_ms: () => seconds * 1000 };
  const ledger = await startTabula(config, { store: SqliteStore.open({ path: file }), logger: pino({ level: 'silent' }), clock });
  await ledger.producer.stop();
  const node = { ledger, admin: await signTestToken('treasury', config, { admin: true }), get seconds() { return seconds; }, set seconds(value: number) { seconds = value; } };
  return node;
}

/** Seals `count` blocks of one mint each, to `to`; returns the last transaction's hash. */
async function seal(node: Node, count: number, to = 'alice'): Promise<string> {
  let tx_hash = '';
  for (let index = 0; index < count; index += 1) {
    const response = await node.ledger.app.inject({
      method: 'POST', url: '/api/transactions/submit', headers: { authorization: `Bearer ${node.admin}` },
      payload: { from: 'treasury', to, amount: 1, token: 'TAB', type: 'mint', metadata: { index } },
    });
    tx_hash = response.json().tx_hash;
    await node.ledger.producer.sealNext();
  }
  return tx_hash;
}

/** A client whose requests go to `node` through a tampering proxy (`tamper` rewrites 200 answers). */
function clientOf(node: () => Node, trust: { checkpoint?: SignedCheckpoint } = {}, tamper: () => Tamper | null = () => null, wire?: Wire): TabulaClient {
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const answer = await node().ledger.app.inject({ method: (init?.method ?? 'GET') as 'GET', url: url.pathname + url.search, headers, ...(init?.body ? { payload: String(init.body) } : {}) });
    const rewrite = tamper();
    const body = answer.statusCode === 200 && rewrite !== null ? rewrite(url.pathname + url.search, answer.body) : answer.body;
    if (wire !== undefined) {
      wire.requests += 1;
      wire.bytes += Buffer.byteLength(body);
      wire.paths.push(url.pathname);
    }
    return new Response(answer.statusCode === 204 ? null : body, { status: answer.statusCode, headers: { 'content-type': String(answer.headers['content-type'] ?? 'application/json') } });
  };
  return new TabulaClient({ baseUrl: 'http://ledger.test', jwt: async () => signTestToken('treasury', config, { admin: true }), fetch, trust: { publicKey: PUBLIC_KEY, ...trust } });
}

describe('light client', () => {
  const nodes: Node[] = [];
  afterEach(async () => {
    for (const node of nodes.splice(0)) await node.ledger.stop();
  });

  it('verifies against the honest server and advances through consistency proofs', async () => {
    const node = await startNode();
    nodes.push(node);
    const first = await seal(node, 3);
    const client = clientOf(() => node);
    const { anchor } = await client.verifyTransaction(await client.getTransaction(first));
    expect(anchor?.checkpoint.size).toBe(4);
    expect(anchor?.key_id).toBe(config.checkpoint_signing_key?.key_id);
    const later = await seal(node, 5);
    const verified = await client.verifyTransaction(await client.getTransaction(later));
    expect(verified.anchor?.checkpoint.size).toBe(9);
    expect((await client.trustedCheckpoint())?.size).toBe(9);
  });

  it('trusting the checkpoint at block 10 verifies a transaction in block 4,000 with a constant number of requests', async () => {
    const node = await startNode();
    nodes.push(node);
    await seal(node, 10);
    const honest = clientOf(() => node);
    const at_block_10 = await honest.getCheckpoint(11);
    await seal(node, 3989);
    const tx_hash = await seal(node, 1, 'bob');
    await seal(node, 5);
    const wire: Wire = { requests: 0, bytes: 0, paths: [] };
    const client = clientOf(() => node, { checkpoint: at_block_10 }, () => null, wire);
    const transaction = await client.getTransaction(tx_hash);
    expect(transaction.block_number).toBe(4000);
    const { anchor } = await client.verifyTransaction(transaction);
    expect(anchor?.checkpoint.size).toBe(4006);
    // transaction, its proof, its block header, the latest checkpoint, one consistency proof, one block proof
    expect(wire.paths).toEqual(['/api/transactions/' + tx_hash, `/api/transactions/${tx_hash}/proof`, '/api/blocks/4000', '/api/checkpoint', '/api/chain/consistency', '/api/blocks/4000/proof']);
    expect(wire.bytes).toBeLessThan(12_000);
    console.info(`light client, checkpoint 11 → 4006, transaction in block 4000: ${wire.requests} requests, ${wire.bytes} bytes`);
  }, 240_000);

  it('fails loudly when a proxy rewrites a block consistently with itself', async () => {
    const node = await startNode();
    nodes.push(node);
    const tx_hash = await seal(node, 4);
    let tamper: Tamper | null = null;
    const client = clientOf(() => node, {}, () => tamper);
    await client.advanceCheckpoint();
    // The forged block 4: a later timestamp, its hash recomputed, and the proof pointing at it.
    let forged_hash = '';
    tamper = (path, body) => {
      if (path === '/api/blocks/4') {
        const block = JSON.parse(body);
        const forged = { ...block, timestamp: block.timestamp + 60 };
        forged_hash = blockHash(forged);
        return JSON.stringify({ ...forged, hash: forged_hash });
      }
      if (path === `/api/transactions/${tx_hash}/proof`) return JSON.stringify({ ...JSON.parse(body), block_hash: forged_hash });
      return body;
    };
    const transaction = await client.getTransaction(tx_hash);
    await client.getBlock(4); // sets forged_hash
    const failure = await client.verifyTransaction(transaction).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(VerificationError);
    expect((failure as VerificationError).code).toBe('history_proof_invalid');
  });

  it('fails loudly on an unsigned, wrongly signed or stale checkpoint', async () => {
    const node = await startNode();
    nodes.push(node);
    const tx_hash = await seal(node, 3);
    let tamper: Tamper | null = null;
    const client = clientOf(() => node, {}, () => tamper);
    await client.advanceCheckpoint();
    await seal(node, 2);
    const cases: Array<[Tamper, string]> = [
      [(path, body) => (path === '/api/checkpoint' ? JSON.stringify({ ...JSON.parse(body), signature: undefined }) : body), 'checkpoint_signature_invalid'],
      [(path, body) => (path === '/api/checkpoint' ? JSON.stringify({ ...JSON.parse(body), note: JSON.parse(body).note.replace('\n6\n', '\n7\n') }) : body), 'checkpoint_signature_invalid'],
      [(path, body) => (path === '/api/checkpoint' ? JSON.stringify({ ...JSON.parse(body), size: 5 }) : body), 'checkpoint_signature_invalid'],
    ];
    for (const [rewrite, code] of cases) {
      tamper = rewrite;
      const failure = await client.advanceCheckpoint().catch((error: unknown) => error);
      expect((failure as VerificationError).code, String(failure)).toBe(code);
    }
    // A checkpoint signed by another key.
    const other = generateKeyPairSync('ed25519');
    tamper = (path, body) => {
      if (path !== '/api/checkpoint') return body;
      const checkpoint = JSON.parse(body);
      return JSON.stringify({ ...checkpoint, signature: sign(null, Buffer.from(checkpoint.note), other.privateKey).toString('base64') });
    };
    expect(((await client.advanceCheckpoint().catch((error: unknown) => error)) as VerificationError).code).toBe('checkpoint_signature_invalid');
    tamper = null;
    await client.advanceCheckpoint();
    // Stale: the server answers an older (validly signed) checkpoint than the one the client trusts.
    const old = await client.getCheckpoint(2);
    tamper = (path, body) => (path === '/api/checkpoint' ? JSON.stringify(old) : body);
    expect(((await client.advanceCheckpoint().catch((error: unknown) => error)) as VerificationError).code).toBe('checkpoint_stale');
    tamper = null;
    expect((await client.verifyTransaction(await client.getTransaction(tx_hash))).anchor?.checkpoint.size).toBe(6);
  });

  it('detects a history forked for one client, with both signed checkpoints as evidence', async () => {
    // Same key, same first blocks (a copy of the database), then different blocks.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-fork-'));
    const first = await startNode(path.join(dir, 'a.db'));
    await seal(first, 3);
    await first.ledger.stop();
    fs.copyFileSync(path.join(dir, 'a.db'), path.join(dir, 'b.db'));
    const a = await startNode(path.join(dir, 'a.db'));
    const b = await startNode(path.join(dir, 'b.db'));
    nodes.push(a, b);
    expect((await clientOf(() => a).getCheckpoint(4)).history_root).toBe((await clientOf(() => b).getCheckpoint(4)).history_root);
    await seal(a, 2, 'carol');
    await seal(b, 4, 'mallory');
    let target = a;
    const client = clientOf(() => target);
    const trusted = await client.advanceCheckpoint();
    expect(trusted.size).toBe(6);
    target = b; // the server now shows this client another history
    const failure = await client.advanceCheckpoint().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ForkDetectedError);
    const fork = failure as ForkDetectedError;
    expect(fork.trusted).toEqual(trusted);
    expect(fork.presented.size).toBe(8);
    // Both checkpoints verify with the published key: the evidence stands by itself.
    for (const checkpoint of [fork.trusted, fork.presented]) {
      expect(await verifyEd25519Fallback(Buffer.from(PUBLIC_KEY, 'base64'), new TextEncoder().encode(checkpoint.note), Buffer.from(checkpoint.signature, 'base64'))).toBe(true);
    }
    // Same size, another root: a fork too.
    await seal(a, 2, 'carol');
    const fresh = clientOf(() => target, { checkpoint: await clientOf(() => a).getCheckpoint(8) });
    expect(await fresh.advanceCheckpoint().catch((error: unknown) => error)).toBeInstanceOf(ForkDetectedError);
  });

  it('verifies Ed25519 without WebCrypto Ed25519 (the fallback), and refuses a forgery', async () => {
    const pair = generateKeyPairSync('ed25519');
    const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x as string, 'base64url');
    for (const message of ['', 'tabula/0x00\n1\n', 'x'.repeat(1000)]) {
      const signature = sign(null, Buffer.from(message), pair.privateKey);
      expect(await verifyEd25519Fallback(raw, new TextEncoder().encode(message), signature)).toBe(true);
      const bad = Buffer.from(signature);
      bad[10] = (bad[10] ?? 0) ^ 1;
      expect(await verifyEd25519Fallback(raw, new TextEncoder().encode(message), bad)).toBe(false);
      expect(await verifyEd25519Fallback(raw, new TextEncoder().encode(`${message}!`), signature)).toBe(false);
    }
  });
});
