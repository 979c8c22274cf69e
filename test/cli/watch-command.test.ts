/**
 * `tabula watch` end to end: the built CLI following the real service's event log, as JSON lines and
 * as text, ending cleanly (exit 0) on SIGTERM and SIGINT or after `--limit` events, and refusing bad
 * options (exit 2) and a cursor the service refuses (exit 1).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { TabulaClient } from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStreamProxy } from '../support/event-stream-proxies.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ROOT, ServiceProcess } from '../support/service-process.js';
import { tabula } from './support/run-cli.js';

const BIN = path.join(ROOT, 'dist/cli/tabula.js');
const U63_MAX_TAB = '92233720368.54775807';

/** Runs `tabula watch …` until it printed `lines` lines, then sends `signal`; resolves with how it ended. */
function watchUntil(args: string[], env: Record<string, string>, lines: number, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'watch', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let signalled = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`tabula watch printed ${stdout.split('\n').length - 1} of ${lines} lines in time:\n${stdout}\n${stderr}`));
    }, 20_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (!signalled && stdout.split('\n').length - 1 >= lines) {
        signalled = true;
        child.kill(signal);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('close', (code, exit_signal) => {
      clearTimeout(timer);
      resolve({ code, signal: exit_signal, stdout, stderr });
    });
  });
}

describe('tabula watch', () => {
  let server: ServiceProcess;
  let env: Record<string, string>;
  let events = 0;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    const token = await server.token('treasury', { admin: true });
    const client = new TabulaClient({ baseUrl: server.url, jwt: token });
    await client.waitForTransaction((await client.submitTransaction({ from: 'treasury', to: 'alice', amount: '5', token: 'TAB', type: 'mint' })).tx_hash, { intervalMs: 20 });
    const last = await client.waitForTransaction((await client.submitTransaction({ from: 'treasury', to: 'whale', amount: U63_MAX_TAB, token: 'TAB', type: 'mint' })).tx_hash, { intervalMs: 20 });
    for await (const event of client.events({ after: 0, signal: AbortSignal.timeout(20_000) })) {
      events += 1;
      if (event.type === 'block.sealed' && event.data.number === last.block_number) break;
    }
    env = { TABULA_URL: server.url, TABULA_TOKEN: token };
  });
  afterAll(async () => { await server?.close(); });

  it('--json prints each event object as one line, amounts exact, and exits 0 on SIGTERM', async () => {
    const run = await watchUntil(['--after', '0', '--json'], env, events, 'SIGTERM');
    expect(run, run.stderr).toMatchObject({ code: 0, signal: null, stderr: '' });
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(events);
    const parsed = lines.map((line) => JSON.parse(line) as { id: string; sequence: number; type: string; data: { amount_text?: string } });
    expect(parsed.map((event) => event.sequence)).toEqual(parsed.map((_, index) => index + 1));
    expect(parsed[0]).toMatchObject({ type: 'block.sealed', schema_version: 1, data: { number: 0 } });
    expect(run.stdout).toContain(`"to":"whale","amount":${U63_MAX_TAB},`);
    expect(parsed.every((event) => event.data.amount_text === undefined)).toBe(true);
  });

  it('prints one line per event for people, and ends on SIGINT with exit 0', async () => {
    const run = await watchUntil(['--after', '0', '--verify'], env, events, 'SIGINT');
    expect(run, run.stderr).toMatchObject({ code: 0, signal: null });
    expect(run.stdout).toMatch(/^ +1 {2}block\.sealed +block 0 {2}0x[0-9a-f]{64} {2}0 transactions$/m);
    expect(run.stdout).toMatch(/^ +\d+ {2}transaction\.accepted +0x[0-9a-f]{64} {2}5 TAB {2}treasury → alice$/m);
    expect(run.stdout).toMatch(new RegExp(`^ +\\d+ {2}transaction\\.confirmed +0x[0-9a-f]{64} {2}${U63_MAX_TAB.replace('.', '\\.')} TAB {2}treasury → whale {2}block \\d+$`, 'm'));
  });

  it('--limit ends by itself; --types and --account filter', async () => {
    const limited = await tabula(['watch', '--after', '0', '--limit', '3'], env, 30_000);
    expect(limited, limited.stderr).toMatchObject({ status: 0 });
    expect(limited.stdout.trimEnd().split('\n')).toHaveLength(3);
    const alice = await tabula(['watch', '--after', '0', '--types', 'transaction.confirmed', '--account', 'alice', '--limit', '1', '--json'], env, 30_000);
    expect(alice.status, alice.stderr).toBe(0);
    expect(JSON.parse(alice.stdout)).toMatchObject({ type: 'transaction.confirmed', data: { to: 'alice', amount: 5 } });
  });

  it('--verify exits 3 when an event does not verify (a server lying about an amount)', async () => {
    const proxy = await startStreamProxy(server.url);
    try {
      proxy.rewrite = (line) => (line.startsWith('data: ') && line.includes('"type":"transaction.confirmed"') ? line.replace('"amount":5,', '"amount":6,') : line);
      const lied = await tabula(['watch', '--after', '0', '--verify'], { ...env, TABULA_URL: proxy.url }, 30_000);
      expect(lied.status, lied.stderr).toBe(3);
      expect(lied.stderr).toMatch(/^verification FAILED at block 1: .*hashes to/m);
      expect(lied.stdout).toMatch(/transaction\.accepted +0x[0-9a-f]{64} {2}5 TAB/); // the events before it were printed
      expect(lied.stdout).not.toContain('6 TAB');
    } finally {
      await proxy.close();
    }
  });

  it('exits 2 on bad options and 1 when the service refuses the cursor', async () => {
    for (const args of [['--after', 'x'], ['--after', '-1'], ['--limit', '0'], ['--types', 'transaction.minted'], ['--types', ','], ['extra'], ['--no-such-flag']]) {
      const run = await tabula(['watch', ...args], env, 30_000);
      expect(run.status, args.join(' ')).toBe(2);
      expect(run.stderr).toContain('see tabula --help');
    }
    const beyond = await tabula(['watch', '--after', '999999'], env, 30_000);
    expect(beyond.status).toBe(1);
    expect(beyond.stderr).toContain('error 400 invalid_event_cursor');
    expect((await tabula(['--help'], {}, 30_000)).stdout).toContain('tabula watch');
  });
});
