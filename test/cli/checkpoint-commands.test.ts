/**
 * Issue 12 from the command line: `tabula checkpoint`, `tabula verify --since` and `tabula witness`
 * against honest services, and failing loudly (exit 3, the reason on stderr) against a proxy serving
 * an unsigned or stale checkpoint and against a service showing another history under the same key.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TabulaClient } from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-ledger.js';
import { ROOT, ServiceProcess } from '../support/service-process.js';
import { forward, pass, startDouble, type Double } from '../support/test-double.js';

const BIN = path.join(ROOT, 'dist/cli/tabula.js');
type Run = { status: number; stdout: string; stderr: string };

function tabula(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

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
});
