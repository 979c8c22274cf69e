/**
 * The processes of a benchmark run: the service itself (`node dist/main.js`, exactly as deployed),
 * the bare Fastify ceiling, and the load generator. Each is a child process on loopback.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { LoadResult, LoadSpec } from './load-types.js';

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 120_000;
/** Variables of the service's configuration: never inherited from the benchmark's own environment. */
const SERVICE_VARIABLES = [
  'PORT', 'HOST', 'DATABASE_URL', 'JWT_ISSUER', 'JWT_JWKS_URL', 'JWT_AUDIENCE', 'JWT_SECRET', 'LEDGER_ADMIN_SCOPE', 'API_KEYS',
  'RATE_LIMIT_MAX', 'RATE_LIMIT_WINDOW_MS', 'BLOCK_INTERVAL_MS', 'BLOCK_TXS_MAX', 'NATIVE_SYMBOL', 'NATIVE_PRICE_USD', 'LOG_LEVEL',
  'NODE_ENV', 'METRICS_TOKEN', 'METRICS_PORT',
];

export class BenchError extends Error {}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export type ServiceProcess = {
  url: string;
  pid: number;
  /** VmHWM: the most resident memory the process has had, in bytes. */
  peakRssBytes(): number;
  /** SIGTERM and wait: the service seals what is pending and exits. */
  stop(): Promise<void>;
  /** SIGKILL: what a crash does. */
  kill(): Promise<void>;
};

/** Starts `node dist/main.js` with `env` and waits for /readyz; a service that exits instead is reported with its own words. */
export async function startService(root: string, env: Record<string, string>, profile_dir?: string): Promise<ServiceProcess> {
  const port = await freePort();
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !SERVICE_VARIABLES.includes(name)));
  const profile = profile_dir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profile_dir}`];
  const child = spawn(process.execPath, [...profile, 'dist/main.js'], {
    cwd: root,
    env: { ...inherited, HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-8000); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exit_code: number | null | undefined;
  void exited.then((code) => { exit_code = code; });
  while (exit_code === undefined) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new BenchError(`the service did not become ready within ${READY_TIMEOUT_MS / 1000} s:\n${stderr}`);
    }
    const ready = await fetch(`${url}/readyz`).then((response) => response.ok, () => false);
    if (ready) return serviceHandle(child, url, exited);
    await sleep(50);
  }
  throw new BenchError(`the service exited with code ${exit_code} while starting:\n${stderr.trim()}`);
}

function serviceHandle(child: ChildProcess, url: string, exited: Promise<number | null>): ServiceProcess {
  const pid = child.pid as number;
  const wait = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), STOP_TIMEOUT_MS); });
    const outcome = await Promise.race([exited, timeout]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      child.kill('SIGKILL');
      throw new BenchError(`the service did not stop within ${STOP_TIMEOUT_MS / 1000} s of ${signal}`);
    }
  };
  return { url, pid, peakRssBytes: () => peakRssBytes(pid), stop: () => wait('SIGTERM'), kill: () => wait('SIGKILL') };
}

/** VmHWM from /proc (Linux); 0 where /proc is not available. */
export function peakRssBytes(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return match === null ? 0 : Number(match[1]) * 1024;
  } catch {
    return 0;
  }
}

/** The bare Fastify ceiling, in a process of its own. */
export async function startBareServer(root: string): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join('bench', 'bare-server.ts')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').once('data', (chunk: string) => resolve(chunk.trim()));
    child.once('exit', (code) => reject(new BenchError(`the bare server exited with code ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => { child.kill('SIGTERM'); } };
}

export type LoadGenerator = { run(spec: LoadSpec): Promise<LoadResult>; stop(): void };

/**
 * The load generator, a process of its own for the whole run: each spec goes to it as one line on
 * its stdin, and its result comes back as one line on its stdout.
 */
export function startLoadGenerator(root: string): LoadGenerator {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join('bench', 'load.ts')], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let buffered = '';
  let waiting: { resolve: (result: LoadResult) => void; reject: (error: Error) => void } | null = null;
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-8000); });
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const newline = buffered.indexOf('\n');
    if (newline < 0 || waiting === null) return;
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    const settle = waiting;
    waiting = null;
    settle.resolve(JSON.parse(line) as LoadResult);
  });
  child.once('exit', (code) => waiting?.reject(new BenchError(`the load generator exited (code ${code}):\n${stderr}`)));
  return {
    run(spec) {
      if (waiting !== null) return Promise.reject(new BenchError('one load at a time'));
      return new Promise<LoadResult>((resolve, reject) => {
        waiting = { resolve, reject };
        child.stdin?.write(`${JSON.stringify(spec)}\n`);
      });
    },
    stop() {
      child.stdin?.end();
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
