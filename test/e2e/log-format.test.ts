/**
 * The built service's log lines as people and collectors meet them: pretty-printed (pino-pretty) when
 * stdout is a terminal, here a pseudo-terminal made by util-linux `script`, and JSON lines when it is
 * a pipe; LOG_FORMAT overrides both ways, and the pretty transport still flushes the last line at a stop.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, ServiceProcess, TEST_CHECKPOINT_KEY } from '../support/service-process.js';

const LISTENING = 'tabula is listening';
const TERMINAL_RUN_TIMEOUT_MS = 30_000;
const PRETTY_LINE = /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (INFO|WARN): /;

/** Lines that parse as JSON objects (pino's JSON lines). */
function jsonLines(output: string): Array<Record<string, unknown>> {
  return output.split(/\r?\n/).filter((line) => line.startsWith('{')).flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

function withoutColours(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m/g, '');
}

/**
 * Runs `node dist/main.js` (this test's own Node) with stdout on a pseudo-terminal until it logs that
 * it listens, then stops it; returns everything the terminal showed.
 */
async function runOnTerminal(env: Record<string, string>): Promise<string> {
  const data_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-e2e-'));
  const command = `exec '${process.execPath}' dist/main.js`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.homedir(), NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${path.join(data_dir, 'ledger.db')}`, ...env,
    },
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  try {
    const deadline = Date.now() + TERMINAL_RUN_TIMEOUT_MS;
    while (!output.includes(LISTENING) && child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(output, 'the service did not start on the terminal').toContain(LISTENING);
    return withoutColours(output);
  } finally {
    child.kill('SIGTERM');
    await closed;
    fs.rmSync(data_dir, { recursive: true, force: true });
  }
}

describe('e2e: log format', () => {
  const services: ServiceProcess[] = [];

  afterAll(async () => {
    await Promise.all(services.map((service) => service.close()));
  });

  it('pretty-prints on a terminal when LOG_FORMAT is unset', async () => {
    const output = await runOnTerminal({});
    expect(jsonLines(output)).toEqual([]);
    const lines = output.split(/\r?\n/);
    expect(lines.find((line) => line.includes(LISTENING)), output).toMatch(PRETTY_LINE);
    expect(output).toMatch(/^\s+address: "http:\/\/127\.0\.0\.1:\d+"/m);
  });

  it('writes JSON lines on a terminal when LOG_FORMAT=json, and outside development', async () => {
    const settings: Array<Record<string, string>> = [{ LOG_FORMAT: 'json' }, { NODE_ENV: 'production', JWT_SECRET: 'e2e-secret-that-is-at-least-32-bytes!!', CHECKPOINT_SIGNING_KEY: TEST_CHECKPOINT_KEY }];
    for (const env of settings) {
      const output = await runOnTerminal(env);
      const listening = jsonLines(output).find((line) => line.msg === LISTENING);
      expect(listening, output).toMatchObject({ level: 30, service: 'tabula', database: 'sqlite' });
    }
  });

  it('writes JSON lines to a pipe when LOG_FORMAT is unset, and pretty lines when LOG_FORMAT=pretty, to the last one', async () => {
    const piped = await ServiceProcess.start();
    services.push(piped);
    expect(await piped.waitForLog((line) => line.msg === LISTENING)).toMatchObject({ level: 30, service: 'tabula' });

    const pretty = await ServiceProcess.start({ env: { LOG_FORMAT: 'pretty' } });
    services.push(pretty);
    expect((await pretty.stop()).code).toBe(0);
    const output = withoutColours(pretty.tail(5000));
    expect(pretty.logs()).toEqual([]);
    expect(output).toMatch(/^\[[\d:.]+\] INFO: tabula is listening$/m);
    // The transport runs in a worker thread: the line written just before exit still comes out.
    expect(output).toMatch(/^\[[\d:.]+\] INFO: stopped$/m);
  });
});
