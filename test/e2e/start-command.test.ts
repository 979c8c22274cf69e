/**
 * `npm start`, the README's way to run the service, on the real process: it starts Node with the flags
 * package.json's `config.service_node_flags` names (the young generation's size, which only a flag at
 * start sets; docs/operations.md, "Memory"), and the service logs the flags it runs with.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../support/service-process.js';
import { readJsonLogLines } from './support/json-log-lines.js';

const LISTENING_TIMEOUT_MS = 60_000;

type ListeningLine = { msg: string; node_flags?: string[]; heap_growing_percent?: number };

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

/** Runs `npm start` in its own process group, returns the `tabula is listening` line, and kills the group. */
async function listeningLineOfNpmStart(): Promise<ListeningLine> {
  const data_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-npm-start-'));
  folders.push(data_dir);
  const env = { PATH: process.env.PATH ?? '', HOME: data_dir, PORT: '0', LOG_FORMAT: 'json', DATABASE_URL: `sqlite:${path.join(data_dir, 'ledger.db')}` };
  const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  try {
    return await new Promise<ListeningLine>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not listening within ${LISTENING_TIMEOUT_MS} ms:\n${output}`)), LISTENING_TIMEOUT_MS);
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
      child.once('close', (code) => reject(new Error(`exited (${String(code)}) before listening:\n${output}`)));
      readJsonLogLines<ListeningLine>(child.stdout, (line) => {
        if (line.msg !== 'tabula is listening') return;
        clearTimeout(timer);
        resolve(line);
      }, (chunk) => { output += chunk; });
    });
  } finally {
    // npm, its shell and the service share the group: none outlives the test.
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

describe('npm start', () => {
  it('starts Node with package.json\'s service flags, and the service logs them with its heap growth', async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { config: { service_node_flags: string } };
    const expected = manifest.config.service_node_flags.split(/\s+/);
    expect(expected).toContain('--max-semi-space-size=16');
    const line = await listeningLineOfNpmStart();
    expect(line.node_flags).toEqual(['--enable-source-maps', ...expected]);
    expect(line.heap_growing_percent).toBe(50);
  }, 90_000);
});
