/**
 * The whole flow against the built service (`node dist/main.js`) trusting a real test identity
 * provider: an admin mints, a user transfers, the transaction is sealed, and every read endpoint of
 * the contract (transaction record, balances, blocks list and lookup, stats, inclusion proof, health)
 * tells the same story.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/domain/hashing.js';
import { bytesToHex, hexToBytes, toHashHex } from '../../src/domain/shared/hex.js';
import { rootFromInclusionProof } from '../../src/domain/shared/merkle.js';
import { ADMIN, startEnvironment, type E2eEnvironment } from './support/fixture.js';
import {
  type ApiClient,
  type ApiResponse,
  type BlockPageRecord,
  type BlockRecord,
  type ProblemRecord,
  type ProofRecord,
  type Receipt,
  HASH_PATTERN,
  rawMembers,
  serverErrors,
  waitUntilSealed,
} from './support/http.js';

const ZERO_HASH = `0x${'0'.repeat(64)}`;
const EMPTY_TREE_ROOT = `0x${bytesToHex(sha256(new Uint8Array(0)))}`;
const TRANSACTION_FIELDS = ['tx_hash', 'from', 'to', 'amount', 'token', 'type', 'metadata', 'status', 'timestamp', 'block_number', 'block_hash', 'position', 'error'];
const BLOCK_HEADER_FIELDS = ['number', 'hash', 'parent_hash', 'timestamp', 'transactions_count', 'transactions_root', 'native_price'];
const STATS_FIELDS = ['total_transactions', 'total_users', 'native_price', 'trading_volume_24h', 'active_users_24h', 'latest_block_number'];

function expectProblem(response: ApiResponse, status: number, code: string): void {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = response.body as ProblemRecord;
  expect(body).toMatchObject({ status, code });
  expect(typeof body.type).toBe('string');
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
}

function expectReceipt(response: ApiResponse<Receipt>): Receipt {
  expect(response.status, response.text).toBe(202);
  expect(Object.keys(response.body).sort()).toEqual(['status', 'timestamp', 'tx_hash']);
  expect(response.body.status).toBe('pending');
  expect(response.body.tx_hash).toMatch(HASH_PATTERN);
  expect(Number.isInteger(response.body.timestamp)).toBe(true);
  expect(Math.abs(response.body.timestamp - Date.now() / 1000)).toBeLessThan(10);
  expect(response.headers.get('location')).toBe(`/api/transactions/${response.body.tx_hash}`);
  return response.body;
}

describe('e2e: the whole flow through the built service', () => {
  let env: E2eEnvironment;
  let alice: ApiClient;
  let bob: ApiClient;
  /** Every transaction this suite submitted. */
  const submitted: string[] = [];
  let transfer_hash = '';

  beforeAll(async () => {
    env = await startEnvironment({ env: { BLOCK_INTERVAL_MS: '100' } });
    alice = await env.as('alice');
    bob = await env.as('bob', { alg: 'RS256' });
  });

  afterAll(async () => {
    await env?.close();
    expect(serverErrors()).toEqual([]);
  });

  it('answers /healthz and /readyz without authentication, and /api only with it', async () => {
    const health = await env.anonymous.get('/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
    const ready = await env.anonymous.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
    expectProblem(await env.anonymous.get('/api/stats'), 401, 'missing_token');
    expect(env.service.logs().some((line) => typeof line.msg === 'string' && line.msg.startsWith('Server listening'))).toBe(true);
  });

  it('mints to alice, lets alice pay bob, and records the confirmed transfer with every contract field', async () => {
    const mint = expectReceipt(await env.admin.submit({ from: ADMIN, to: 'alice', amount: 100, token: 'TAB', type: 'mint', metadata: { reason: 'e2e' } }));
    submitted.push(mint.tx_hash);
    const minted = (await waitUntilSealed(env.admin, [mint.tx_hash])).get(mint.tx_hash);
    expect(minted).toMatchObject({ status: 'confirmed', error: null, type: 'mint', from: ADMIN, to: 'alice', amount: 100, token: 'TAB' });

    const metadata = { memo: 'rent for März ☕', nested: { list: [1, 2.5, 'three', null, true] } };
    const receipt = expectReceipt(await alice.submit({ from: 'alice', to: 'bob', amount: 30.5, token: 'tab', type: 'transfer', metadata }));
    submitted.push(receipt.tx_hash);
    transfer_hash = receipt.tx_hash;

    const early = await alice.transaction(receipt.tx_hash);
    expect(early.status).toBe(200);
    if (early.body.status === 'pending') {
      expect(early.body).toMatchObject({ block_number: null, block_hash: null, position: null, error: null });
      const proof = await alice.get(`/api/transactions/${receipt.tx_hash}/proof`);
      // Pending means no block yet, so no proof; it may have been sealed in between.
      if (proof.status !== 200) expectProblem(proof, 404, 'transaction_not_sealed');
    }

    const record = (await waitUntilSealed(alice, [receipt.tx_hash])).get(receipt.tx_hash);
    expect(record).toBeDefined();
    if (record === undefined) return;
    for (const field of TRANSACTION_FIELDS) expect(record, `field ${field}`).toHaveProperty(field);
    // The record carries exactly the contract's fields, plus the nonce that makes each hash unique and
    // the market's swap fields (null on a transfer; docs/api.md, "Market").
    expect(Object.keys(record).filter((field) => !TRANSACTION_FIELDS.includes(field)).sort()).toEqual(['amount_out', 'min_receive', 'nonce', 'token_out']);
    expect(record).toMatchObject({ min_receive: null, amount_out: null, token_out: null });
    expect(record).toMatchObject({
      tx_hash: receipt.tx_hash,
      from: 'alice',
      to: 'bob',
      amount: 30.5,
      token: 'TAB',
      type: 'transfer',
      metadata,
      status: 'confirmed',
      timestamp: receipt.timestamp,
      error: null,
    });
    expect(Number.isInteger(record.block_number)).toBe(true);
    expect(record.block_number).toBeGreaterThanOrEqual(1);
    expect(record.block_hash).toMatch(HASH_PATTERN);
    expect(Number.isInteger(record.position)).toBe(true);
    expect(typeof record.nonce).toBe('string');

    const block = await bob.block(record.block_number ?? -1);
    expect(block.status).toBe(200);
    expect(block.body.hash).toBe(record.block_hash);
    expect(block.body.transactions[record.position ?? -1]).toBe(receipt.tx_hash);
  });

  it('reports balances from confirmed state, exact and in USD', async () => {
    const alice_balance = await bob.balance('alice');
    expect(alice_balance.status).toBe(200);
    expect(Object.fromEntries(rawMembers(alice_balance.text))).toEqual({ user_id: '"alice"', native: '69.5', usdg: '0', total_usd: '69.5' });
    const bob_balance = await alice.balance('bob');
    expect(bob_balance.body).toEqual({ user_id: 'bob', native: 30.5, usdg: 0, total_usd: 30.5 });
    const stranger = `auth0|${randomUUID().replaceAll('-', '').slice(0, 24)}`;
    const unknown = await alice.balance(stranger);
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ user_id: stranger, native: 0, usdg: 0, total_usd: 0 });
  });

  it('pages the blocks newest first and looks each one up', async () => {
    // A few more blocks: one mint per block.
    for (const user of ['carol', 'dave', 'erin']) {
      const receipt = expectReceipt(await env.admin.submit({ from: ADMIN, to: user, amount: '1.00000001', token: 'TAB', type: 'mint' }));
      submitted.push(receipt.tx_hash);
      await waitUntilSealed(env.admin, [receipt.tx_hash]);
    }

    const first = await alice.get<BlockPageRecord>('/api/blocks');
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(['blocks', 'limit', 'offset', 'total']);
    const { total } = first.body;
    const latest = total - 1;
    expect(total).toBeGreaterThanOrEqual(6); // genesis + at least five blocks of ours
    expect(first.body.limit).toBe(20);
    expect(first.body.offset).toBe(0);
    expect(first.body.blocks.map((block) => block.number)).toEqual(Array.from({ length: Math.min(20, total) }, (_, index) => latest - index));
    for (const header of first.body.blocks) expect(Object.keys(header).sort()).toEqual([...BLOCK_HEADER_FIELDS].sort());

    const middle = await alice.get<BlockPageRecord>('/api/blocks?limit=2&offset=1');
    expect(middle.body).toMatchObject({ total, limit: 2, offset: 1 });
    expect(middle.body.blocks.map((block) => block.number)).toEqual([latest - 1, latest - 2]);
    const oldest = await alice.get<BlockPageRecord>(`/api/blocks?limit=5&offset=${total - 1}`);
    expect(oldest.body.blocks.map((block) => block.number)).toEqual([0]);
    const beyond = await alice.get<BlockPageRecord>(`/api/blocks?offset=${total + 10}`);
    expect(beyond.status).toBe(200);
    expect(beyond.body.blocks).toEqual([]);

    // Walking pages of 2 visits every block once; each header equals the single lookup.
    const seen: number[] = [];
    for (let offset = 0; offset < total; offset += 2) {
      const page = await alice.get<BlockPageRecord>(`/api/blocks?limit=2&offset=${offset}`);
      for (const header of page.body.blocks) {
        seen.push(header.number);
        const single = await alice.block(header.number);
        expect(single.status).toBe(200);
        const { transactions, ...single_header } = single.body;
        expect(single_header).toEqual(header);
        expect(transactions).toHaveLength(header.transactions_count);
      }
    }
    expect(seen).toEqual(Array.from({ length: total }, (_, index) => latest - index));

    const genesis = await alice.block(0);
    expect(genesis.body).toMatchObject({ number: 0, parent_hash: ZERO_HASH, transactions_count: 0, transactions: [], transactions_root: EMPTY_TREE_ROOT });
    const newest = await alice.block(latest);
    expect(newest.body.transactions_count).toBeGreaterThan(0);

    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'limit=-1', 'offset=-1', 'offset=x', 'offset=1.5']) {
      expectProblem(await alice.get(`/api/blocks?${query}`), 400, 'invalid_pagination');
    }
    expectProblem(await alice.get(`/api/blocks/${latest + 1000}`), 404, 'block_not_found');
    expectProblem(await alice.get('/api/blocks/abc'), 400, 'invalid_block_number');
    expectProblem(await alice.get('/api/blocks/-1'), 400, 'invalid_block_number');
  });

  it('proves inclusion with an RFC 6962 audit path that recomputes the block root', async () => {
    // Several transactions at once, so that blocks hold more than one leaf.
    const receipts = await Promise.all(
      Array.from({ length: 7 }, (_, index) => env.admin.submit({ from: ADMIN, to: `proof-user-${index}`, amount: index + 1, token: 'USDG', type: 'mint' })),
    );
    const hashes = receipts.map((response) => expectReceipt(response).tx_hash);
    submitted.push(...hashes);
    const records = await waitUntilSealed(env.admin, hashes);
    let largest_tree = 0;
    for (const tx_hash of [...hashes, transfer_hash]) {
      const proof = await alice.get<ProofRecord>(`/api/transactions/${tx_hash}/proof`);
      expect(proof.status, proof.text).toBe(200);
      const record = records.get(tx_hash) ?? (await alice.transaction(tx_hash)).body;
      const block = (await alice.block(proof.body.block_number)).body as BlockRecord;
      expect(proof.body).toMatchObject({
        tx_hash,
        block_number: record.block_number,
        block_hash: block.hash,
        transactions_root: block.transactions_root,
        leaf_index: record.position,
        tree_size: block.transactions_count,
      });
      const root = rootFromInclusionProof(sha256, hexToBytes(tx_hash), proof.body.leaf_index, proof.body.tree_size, proof.body.audit_path.map(hexToBytes));
      expect(root).not.toBeNull();
      expect(toHashHex(root ?? new Uint8Array(0))).toBe(block.transactions_root);
      if (proof.body.audit_path.length > 0) {
        // A forged sibling must not verify.
        const forged = proof.body.audit_path.map(hexToBytes);
        forged[0] = sha256(new TextEncoder().encode('forged'));
        const forged_root = rootFromInclusionProof(sha256, hexToBytes(tx_hash), proof.body.leaf_index, proof.body.tree_size, forged);
        expect(forged_root === null ? null : toHashHex(forged_root)).not.toBe(block.transactions_root);
      }
      largest_tree = Math.max(largest_tree, proof.body.tree_size);
    }
    expect(largest_tree).toBeGreaterThan(1);

    expectProblem(await alice.get(`/api/transactions/0x${'ab'.repeat(32)}/proof`), 404, 'transaction_not_found');
    expectProblem(await alice.get(`/api/transactions/0x${'ab'.repeat(32)}`), 404, 'transaction_not_found');
    expectProblem(await alice.get('/api/transactions/0x1234/proof'), 400, 'invalid_transaction_hash');
    expectProblem(await alice.get('/api/transactions/not-a-hash'), 400, 'invalid_transaction_hash');
  });

  it('summarises the network in /api/stats with the six numeric fields', async () => {
    await waitUntilSealed(env.admin, submitted);
    const stats = await alice.stats();
    expect(stats.status).toBe(200);
    expect(Object.keys(stats.body).sort()).toEqual([...STATS_FIELDS].sort());
    for (const field of STATS_FIELDS) expect(typeof (stats.body as Record<string, unknown>)[field], field).toBe('number');
    const page = await alice.get<BlockPageRecord>('/api/blocks?limit=1');
    expect(stats.body.latest_block_number).toBe(page.body.total - 1);
    expect(stats.body.latest_block_number).toBe(page.body.blocks[0]?.number);
    expect(stats.body.total_transactions).toBe(submitted.length);
    expect(stats.body.native_price).toBe(1);
    // Trading volume counts swaps only (docs/api.md, "Market"); this flow makes transfers, no swap.
    expect(stats.body.trading_volume_24h).toBe(0);
    expect(stats.body.active_users_24h).toBe(2);
    // issuer, alice, bob, carol, dave, erin and seven proof users.
    expect(stats.body.total_users).toBe(13);
  });
});
