/**
 * The real service as a separate process (`node dist/main.js`, as in production) on a loopback port
 * with a temporary SQLite file and the test HS256 secret, for end-to-end tests of the SDK and CLI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { signTestToken, TEST_SECRET } from './in-process-ledger.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const READY_ATTEMPTS_MAX = 150;
const READY_POLL_MS = 100;

export type ServerProcess = {
  url: string;
  dir: string;
  db_path: string;
  env: Record<string, string>;
  child: ChildProcess;
  token(sub: string, options?: { admin?: boolean; expires_in_s?: number }): Promise<string>;
  /** SIGTERM (graceful: seals what is pending, closes the store) and wait for the exit. */
  stop(): Promise<void>;
  /** stop(), then delete the temporary folder. */
  close(): Promise<void>;
};

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function waitUntilReady(url: string, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < READY_ATTEMPTS_MAX; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} before it was ready`);
    const ready = await fetch(`${url}/readyz`).then((response) => response.ok, () => false);
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  throw new Error('the service did not become ready');
}

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/**
 * Starts `node dist/main.js` (or `options.command`, e.g. the CLI's `serve`); `env` overrides the
 * defaults (BLOCK_INTERVAL_MS=50 and so on).
 */
export async function startServerProcess(env: Record<string, string> = {}, options: { db_path?: string; command?: string[] } = {}): Promise<ServerProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-e2e-'));
  const db_path = options.db_path ?? path.join(dir, 'ledger.db');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const full_env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${db_path}`,
    JWT_SECRET: TEST_SECRET,
    BLOCK_INTERVAL_MS: '50',
    LOG_LEVEL: 'warn',
    ...env,
  };
  const child = spawn(process.execPath, options.command ?? ['dist/main.js'], { cwd: ROOT, env: full_env, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitUntilReady(url, child);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const config = loadConfig(full_env);
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exit = exited(child);
    child.kill('SIGTERM');
    await exit;
  };
  return {
    url, dir, db_path, env: full_env, child, stop,
    token: (sub, token_options = {}) => signTestToken(sub, config, token_options),
    async close() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
