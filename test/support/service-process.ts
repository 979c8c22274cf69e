/**
 * The service as users run it, for end-to-end tests: `node dist/main.js` (or another entry point,
 * e.g. the CLI's `serve`) in a child process, configured by environment variables, on a free
 * loopback port and a fresh temporary data folder. `start` returns once `GET /readyz` answers 200.
 * Output (JSON log lines on stdout, anything on stderr) is captured. The process can be stopped with
 * SIGTERM (graceful: the exit status is returned) or SIGKILL (a crash), and restarted on the same data.
 *
 * The environment is the caller's on top of a few defaults (an SQLite file in the data folder, blocks
 * every 50 ms, info logs); PORT and HOST are set here. Nothing else of the test's own environment is
 * passed on. The working directory is the repository, as for `npm start`.
 *
 * Every child is also SIGKILLed when the test process exits, so nothing outlives a run. Set
 * TABULA_E2E_KEEP_DATA to keep the data folders made here for a look after the run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { signTestToken } from './in-process-tabula.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const MAIN_SCRIPT = path.join(ROOT, 'dist', 'main.js');
const DATABASE_FILE = 'ledger.db';

const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 25;
const STOP_TIMEOUT_MS = 20_000;
const RUN_TIMEOUT_MS = 15_000;
const OUTPUT_LINES_MAX = 5000;
const START_ATTEMPTS = 3;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export type ExitStatus = { code: number | null; signal: NodeJS.Signals | null };

export type ServiceOptions = {
  /** Environment of the service, over the defaults (an empty value unsets one, e.g. `JWT_SECRET: ''`). */
  env?: Record<string, string>;
  /** Run on an existing data folder (its `ledger.db`), which is left in place, instead of a fresh one. */
  data_dir?: string;
  /** Arguments to node instead of `dist/main.js`, e.g. `[cli, 'serve']`. */
  command?: string[];
  /** Return once `/healthz` (alive) rather than `/readyz` (ready) answers 200, e.g. to watch a service that is not ready. */
  wait_for?: 'ready' | 'alive';
};

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released for the child to take). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port'))));
    });
  });
}

export class ServiceProcess {
  readonly data_dir: string;
  /** The SQLite file in the data folder: the database unless `env` sets DATABASE_URL. */
  readonly database_path: string;
  private readonly owns_dir: boolean;
  private readonly command: string[];
  private readonly wait_for: 'ready' | 'alive';
  private caller_env: Record<string, string>;
  private full_env: Record<string, string> = {};
  private child: ChildProcess | null = null;
  private exited: Promise<ExitStatus> | null = null;
  private last_exit: ExitStatus | null = null;
  private port = 0;
  private lines: string[] = [];
  private generation = 0;

  private constructor(options: ServiceOptions) {
    assertBuilt();
    this.owns_dir = options.data_dir === undefined;
    this.data_dir = options.data_dir ?? makeDataDir();
    this.database_path = path.join(this.data_dir, DATABASE_FILE);
    this.command = options.command ?? [MAIN_SCRIPT];
    this.caller_env = { ...options.env };
    this.wait_for = options.wait_for ?? 'ready';
  }

  /** Starts a service and waits until `GET /readyz` (or `/healthz`, see `wait_for`) answers 200. */
  static async start(options: ServiceOptions = {}): Promise<ServiceProcess> {
    const service = new ServiceProcess(options);
    try {
      await service.launch();
    } catch (error) {
      await service.close();
      throw error;
    }
    return service;
  }

  /** `http://127.0.0.1:<port>` of the running process (a restart gets a new port). */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** The whole environment the current process was started with. */
  get env(): Readonly<Record<string, string>> {
    return this.full_env;
  }

  /** A token for `sub` the service accepts: HS256 with the JWT_SECRET of its environment. */
  async token(sub: string, options: { admin?: boolean; expires_in_s?: number } = {}): Promise<string> {
    const config = loadConfig(this.full_env);
    if (config.jwt.secret === undefined) throw new Error('token() needs JWT_SECRET in the service environment');
    return signTestToken(sub, config, options);
  }

  /** The JSON log lines (pino) of every process started so far. */
  logs(): Array<Record<string, unknown>> {
    const parsed: Array<Record<string, unknown>> = [];
    for (const line of this.lines) {
      if (!line.startsWith('{')) continue;
      try {
        parsed.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
    return parsed;
  }

  /** Whether a log line's message contains `message_part`. */
  logged(message_part: string): boolean {
    return this.logs().some((line) => String(line.msg).includes(message_part));
  }

  /** Waits until a log line satisfies `predicate`. */
  async waitForLog(predicate: (line: Record<string, unknown>) => boolean, timeout_ms = 10_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeout_ms;
    for (;;) {
      const found = this.logs().find(predicate);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no such log line within ${timeout_ms} ms:\n${this.tail()}`);
      await delay(10);
    }
  }

  /** The last lines of output (stdout, stderr marked, starts and exits marked), for failure messages. */
  tail(lines = 40): string {
    return this.lines.slice(-lines).join('\n');
  }

  /** Sends SIGTERM (graceful: seals what is pending, closes the store) and waits for the exit. */
  async stop(timeout_ms = STOP_TIMEOUT_MS): Promise<ExitStatus> {
    return this.signalAndWait('SIGTERM', timeout_ms);
  }

  /** Sends SIGKILL (a crash) and waits for the process to be gone. */
  async kill(): Promise<ExitStatus> {
    return this.signalAndWait('SIGKILL', STOP_TIMEOUT_MS);
  }

  /** Sends a signal without waiting (e.g. from inside a burst of requests); see `exit()`. */
  signal(signal: NodeJS.Signals): void {
    if (this.child === null) throw new Error('the service is not running');
    this.child.kill(signal);
  }

  /** Waits for the current process to exit (or returns how the last one did). */
  async exit(timeout_ms = STOP_TIMEOUT_MS): Promise<ExitStatus> {
    if (this.child === null || this.exited === null) return this.lastExit();
    return withTimeout(this.exited, timeout_ms, `the service did not exit within ${timeout_ms} ms\n${this.tail()}`);
  }

  /** Starts the service again on the same data (SIGKILLing it first if it runs), `env` over the previous one. */
  async restart(env: Record<string, string> = {}): Promise<void> {
    if (this.child !== null) await this.kill();
    this.caller_env = { ...this.caller_env, ...env };
    await this.launch();
  }

  /** Stops the process if it runs (SIGTERM; SIGKILL if it does not exit in time) and removes a data folder made here. */
  async close(): Promise<void> {
    if (this.child !== null) await this.stop().catch(() => this.kill()).catch(() => undefined);
    if (this.owns_dir && process.env.TABULA_E2E_KEEP_DATA === undefined) fs.rmSync(this.data_dir, { recursive: true, force: true });
  }

  private lastExit(): ExitStatus {
    if (this.last_exit === null) throw new Error('the service was never started');
    return this.last_exit;
  }

  private async signalAndWait(signal: NodeJS.Signals, timeout_ms: number): Promise<ExitStatus> {
    if (this.child === null || this.exited === null) return this.lastExit();
    this.child.kill(signal);
    return withTimeout(this.exited, timeout_ms, `the service did not exit within ${timeout_ms} ms of ${signal}\n${this.tail()}`);
  }

  private async launch(): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.launchOnce();
        return;
      } catch (error) {
        // Another process may have taken the port between `freePort()` and the child's listen.
        const port_taken = /EADDRINUSE/.test(this.tail(10));
        if (!port_taken || attempt >= START_ATTEMPTS) throw error;
      }
    }
  }

  private async launchOnce(): Promise<void> {
    this.port = await freePort();
    this.generation += 1;
    this.record(`--- start #${this.generation} on port ${this.port} ---`);
    this.full_env = { ...serviceEnvironment(this.data_dir, this.caller_env), PORT: String(this.port), HOST: '127.0.0.1' };
    const child = spawnService(this.command, this.full_env);
    this.child = child;
    captureLines(child.stdout, (line) => this.record(line));
    captureLines(child.stderr, (line) => this.record(`[stderr] ${line}`));
    this.exited = new Promise<ExitStatus>((resolve) => {
      child.once('close', (code, signal) => {
        live.delete(child);
        const status = { code, signal };
        this.last_exit = status;
        if (this.child === child) this.child = null;
        this.record(`--- exit: code ${String(code)}, signal ${String(signal)} ---`);
        resolve(status);
      });
    });
    child.once('error', (error) => this.record(`[spawn error] ${error.message}`));
    await this.waitUntilReady(child);
  }

  private async waitUntilReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (this.child !== child) {
        throw new Error(`the service exited before it was ready (${JSON.stringify(this.last_exit)}):\n${this.tail()}`);
      }
      try {
        const response = await fetch(`${this.url}${this.wait_for === 'alive' ? '/healthz' : '/readyz'}`, { signal: AbortSignal.timeout(1000) });
        await response.arrayBuffer();
        if (response.status === 200) return;
      } catch {
        // not listening yet
      }
      await delay(READY_POLL_MS);
    }
    child.kill('SIGKILL');
    throw new Error(`the service was not ready within ${READY_TIMEOUT_MS} ms:\n${this.tail()}`);
  }

  private record(line: string): void {
    this.lines.push(line);
    if (this.lines.length > OUTPUT_LINES_MAX) this.lines.splice(0, this.lines.length - OUTPUT_LINES_MAX);
  }
}

/**
 * The instances that have logged taking the sealer lease, once at least one has. An instance answers
 * /healthz before its first election ends, so a test that needs the sealer waits here rather than
 * reading the logs the moment the instances are up.
 */
export async function sealersOf(instances: readonly ServiceProcess[], timeout_ms = 10_000): Promise<ServiceProcess[]> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const sealers = instances.filter((instance) => instance.logged('sealer lease acquired'));
    if (sealers.length > 0 || Date.now() > deadline) return sealers;
    await delay(10);
  }
}

export type RunResult = ExitStatus & { stdout: string; stderr: string };

/**
 * Runs the service with `env` (on a fresh or given data folder) and waits for it to exit on its own,
 * e.g. because its configuration is refused. PORT (0) and HOST can be set in `env`. A process still
 * running after `timeout_ms` is killed and reported as such.
 */
export async function runUntilExit(env: Record<string, string>, options: { data_dir?: string; timeout_ms?: number } = {}): Promise<RunResult> {
  assertBuilt();
  const data_dir = options.data_dir ?? makeDataDir();
  try {
    const child = spawnService([MAIN_SCRIPT], { ...serviceEnvironment(data_dir, {}), PORT: '0', HOST: '127.0.0.1', ...env });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeout_ms ?? RUN_TIMEOUT_MS);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
      child.once('close', (exit_code, exit_signal) => resolve([exit_code, exit_signal]));
    });
    clearTimeout(timer);
    live.delete(child);
    return { code, signal, stdout, stderr };
  } finally {
    if (options.data_dir === undefined) fs.rmSync(data_dir, { recursive: true, force: true });
  }
}

function assertBuilt(): void {
  if (!fs.existsSync(MAIN_SCRIPT)) {
    throw new Error(`${MAIN_SCRIPT} is missing: run \`npm run build\` before the end-to-end tests`);
  }
}

function makeDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-e2e-'));
}

/** A fixed checkpoint signing key (issue 12), so that production-mode tests start and checkpoints are reproducible. */
export const TEST_CHECKPOINT_KEY = 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=';

/** The defaults, then the caller's `env` (PORT and HOST are the caller's to add). */
function serviceEnvironment(data_dir: string, env: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.homedir(),
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    BLOCK_INTERVAL_MS: '50',
    DATABASE_URL: `sqlite:${path.join(data_dir, DATABASE_FILE)}`,
    CHECKPOINT_SIGNING_KEY: TEST_CHECKPOINT_KEY,
    ...env,
  };
}

function spawnService(command: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--enable-source-maps', ...command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  return child;
}

function captureLines(stream: NodeJS.ReadableStream | null, record: (line: string) => void): void {
  if (stream === null) return;
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const line of parts) record(line);
  });
  stream.on('end', () => {
    if (pending !== '') record(pending);
    pending = '';
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}
