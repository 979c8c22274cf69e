/**
 * Safe development defaults, on the real process: with no identity provider and NODE_ENV unset, the
 * service listens on 127.0.0.1 unless HOST says otherwise, and when told to listen beyond loopback it
 * says so loudly (a warn log naming the risk) as it starts.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../support/service-process.js';
import { readJsonLogLines } from './support/json-log-lines.js';

const LISTENING_TIMEOUT_MS = 30_000;
const AFTER_LISTENING_MS = 500;
const BEYOND_LOOPBACK = 'DEVELOPMENT MODE IS LISTENING BEYOND LOOPBACK';

type LogLine = { level: number; msg: string; address?: string; host?: string };

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

/** Starts `node dist/main.js` with only `env` (no NODE_ENV, no JWT settings), returns its log up to "tabula is listening", and kills it. */
async function logUntilListening(env: Record<string, string>): Promise<LogLine[]> {
  const data_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-dev-defaults-'));
  folders.push(data_dir);
  const full_env = { PATH: process.env.PATH ?? '', HOME: data_dir, PORT: '0', DATABASE_URL: `sqlite:${path.join(data_dir, 'ledger.db')}`, ...env };
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'main.js')], { cwd: ROOT, env: full_env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: LogLine[] = [];
  let output = '';
  try {
    return await new Promise<LogLine[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not listening within ${LISTENING_TIMEOUT_MS} ms:\n${output}`)), LISTENING_TIMEOUT_MS);
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
      });
      child.once('close', (code) => reject(new Error(`exited (${String(code)}) before listening:\n${output}`)));
      let listening = false;
      readJsonLogLines<LogLine>(child.stdout, (line) => {
        lines.push(line);
        // The warning, when there is one, is written right after the listening line: give it a moment.
        if (!listening && line.msg === 'tabula is listening') {
          listening = true;
          clearTimeout(timer);
          setTimeout(() => resolve(lines), AFTER_LISTENING_MS);
        }
      }, (chunk) => { output += chunk; });
    });
  } finally {
    child.kill('SIGKILL');
  }
}

describe('development mode defaults', () => {
  it('listens on 127.0.0.1 when HOST is not set, without the warning', async () => {
    const lines = await logUntilListening({});
    const listening = lines.find((line) => line.msg === 'tabula is listening');
    expect(listening?.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(lines.some((line) => line.msg.includes(BEYOND_LOOPBACK))).toBe(false);
  }, 60_000);

  it('warns loudly at start when HOST makes it listen beyond loopback', async () => {
    const lines = await logUntilListening({ HOST: '0.0.0.0' });
    const warning = lines.find((line) => line.msg.includes(BEYOND_LOOPBACK));
    expect(warning, JSON.stringify(lines)).toBeDefined();
    expect(warning?.level).toBe(40);
    expect(warning?.host).toBe('0.0.0.0');
    expect(warning?.msg).toMatch(/can become an admin/);
  }, 60_000);
});
