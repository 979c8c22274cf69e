/**
 * Issue 12 from the command line: `tabula checkpoint`, `tabula verify --since` and `tabula witness`
 * against honest services, and failing loudly (exit 3, the reason on stderr) against a proxy serving
 * an unsigned or stale checkpoint and against a service showing another history under the same key;
 * `tabula verify` (the chain walk) against the signed history, with a proxy that rewrites a block consistently.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TabulaClient } from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockHash, transactionsRoot } from '../../src/domain/hashing.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { forward, pass, startDouble, type Double } from '../support/test-double.js';
import { tabula } from './support/run-cli.js';

describe('tabula checkpoint, verify --since, witness', () => {
  let a: ServiceProcess;
  let b: ServiceProcess;
  let proxy: Double;
  let tamper: ((path: string, body: string) => string) | null = null;
  let env: Record<string, string>;
  let dir: string;

  async function seal(server: ServiceProcess, count: number): Promise<void> {
    const client = new TabulaClient({ baseUrl: server.url, jwt: await server.token('treasury', { admin: true }) });
    for (let index = 0; index < count; index += 1) {
      const receipt = await client.submitTransaction({ from: 'treasury', to: `user${index}`, amount: 1, token: 'TAB', type: 'mint' });
      await client.waitForTransaction(receipt.tx_hash, { intervalMs: 25 });
    }
  }

  beforeAll(async () => {
    [a, b] = await Promise.all([ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } }), ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } })]);
    await Promise.all([seal(a, 3), seal(b, 2)]);
    proxy = await startDouble(async (request, response) => {
      const upstream = await forward(a.url, request);
      pass(response, upstream, upstream.status === 200 && tamper !== null ? tamper(request.path.split('?')[0] as string, upstream.body) : upstream.body);
    });
    env = { TABULA_URL: a.url, TABULA_TOKEN: await a.token('treasury', { admin: true }) };
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-checkpoint-'));
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  it('stores a verified checkpoint and proves later histories extend it', async () => {
    const file = path.join(dir, 'a.json');
    const stored = await tabula(['checkpoint', '--out', file], env);
    expect(stored.status, stored.stderr).toBe(0);
    expect(stored.stdout).toMatch(/^verified checkpoint 4 \(block 3, history root 0x[0-9a-f]{64}\), signed by key [0-9a-f]{16}/);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).checkpoint.size).toBe(4);
    await seal(a, 2);
    const since = await tabula(['verify', '--since', file, '--json'], env);
    expect(since.status, since.stderr).toBe(0);
    expect(JSON.parse(since.stdout)).toMatchObject({ verified: true, from: 4, to: 6 });
  });

  it('fails loudly on an unsigned or stale checkpoint, and on another history under the same key', async () => {
    const file = path.join(dir, 'latest.json');
    expect((await tabula(['checkpoint', '--out', file], env)).status).toBe(0);
    const through_proxy = { ...env, TABULA_URL: proxy.url };
    tamper = (route, body) => (route === '/api/checkpoint' ? JSON.stringify({ ...JSON.parse(body), signature: 'AAAA' }) : body);
    const unsigned = await tabula(['verify', '--since', file], through_proxy);
    expect(unsigned.status).toBe(3);
    expect(unsigned.stderr).toMatch(/verification FAILED.*signature/);
    const old = await (await fetch(`${a.url}/api/checkpoint?size=2`, { headers: { authorization: `Bearer ${env.TABULA_TOKEN}` } })).text();
    tamper = (route, body) => (route === '/api/checkpoint' ? old : body);
    const stale = await tabula(['verify', '--since', file, '--json'], through_proxy);
    expect(stale.status).toBe(3);
    expect(JSON.parse(stale.stdout)).toMatchObject({ verified: false, code: 'checkpoint_stale' });
    tamper = null;
    await seal(b, 6); // b's history, larger than the stored one, does not extend it
    const forked = await tabula(['verify', '--since', file, '--json'], { ...env, TABULA_URL: b.url, TABULA_TOKEN: await b.token('treasury', { admin: true }) });
    expect(forked.status).toBe(3);
    expect(JSON.parse(forked.stdout)).toMatchObject({ verified: false, code: 'fork_detected' });
    expect(forked.stderr).toMatch(/trusted: .*\npresented: /);
  });

  it('witnesses peers: consistent ones pass, another history fails', async () => {
    tamper = null;
    const consistent = await tabula(['witness', '--peers', a.url, '--peers', proxy.url], env);
    expect(consistent.status, consistent.stderr).toBe(0);
    expect(consistent.stdout).toContain('consistent');
    const split = await tabula(['witness', '--peers', a.url, '--peers', b.url, '--json'], env);
    expect(split.status).toBe(3);
    expect(JSON.parse(split.stdout)).toMatchObject({ verified: false, code: 'fork_detected' });
  });

  it('verify compares the walked chain with the signed history: a consistently rewritten block exits 3', async () => {
    tamper = null;
    const honest = await tabula(['verify', '--json'], env);
    expect(honest.status, honest.stderr).toBe(0);
    const result = JSON.parse(honest.stdout) as { to: number; history: { size: number; checked: string } };
    expect(result.history).toMatchObject({ size: result.to + 1, checked: 'history_root' });
    const through_proxy = { ...env, TABULA_URL: proxy.url };
    expect((await tabula(['verify', '--from', '2'], through_proxy)).status).toBe(0);

    // Rewrite block 2 (another transaction in its list) and re-link every later block: each root, hash
    // and parent link still recomputes, so only the signed history can tell.
    const forged = new Map<string, string>();
    let parent_hash = '';
    for (let number = 0; number <= result.to; number += 1) {
      const text = await (await fetch(`${a.url}/api/blocks/${number}`, { headers: { authorization: `Bearer ${env.TABULA_TOKEN}` } })).text();
      const block = JSON.parse(text) as { number: number; hash: string; parent_hash: string; timestamp: number; transactions_root: string; transactions: string[] };
      if (number === 2) {
        block.transactions = [`0x${'ab'.repeat(32)}`, ...block.transactions.slice(1)];
        block.transactions_root = transactionsRoot(block.transactions);
      }
      if (number >= 2) {
        if (number > 2) block.parent_hash = parent_hash;
        block.hash = blockHash(block);
        forged.set(`/api/blocks/${number}`, JSON.stringify(block));
      }
      parent_hash = block.hash;
    }
    tamper = (route, body) => forged.get(route) ?? body;
    const rewritten = await tabula(['verify', '--json'], through_proxy);
    expect(rewritten.status, rewritten.stderr).toBe(3);
    expect(JSON.parse(rewritten.stdout)).toMatchObject({ verified: false, code: 'history_root_mismatch', block_number: result.to });
    expect(rewritten.stderr).toMatch(/verification FAILED at block \d+: the history root recomputed over the \d+ walked block hashes is 0x[0-9a-f]{64}, but the checkpoint of size \d+ signed by key [0-9a-f]{16} says 0x[0-9a-f]{64}/);
    const from_later = await tabula(['verify', '--from', '3', '--json'], through_proxy);
    expect(from_later.status, from_later.stderr).toBe(3);
    expect(JSON.parse(from_later.stdout)).toMatchObject({ verified: false, code: 'history_proof_invalid' });
    tamper = null;
  });
});
