/**
 * The service as users run it: `node dist/main.js` in a child process, configured by environment
 * variables, with a fresh temporary data folder and a free loopback port. Output (JSON log lines on
 * stdout, anything on stderr) is captured. The process can be stopped with SIGTERM (graceful: the
 * exit code is returned) or SIGKILL (a crash), and restarted on the same database.
 *
 * Every child is also SIGKILLed when the test worker exits, so nothing outlives a run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPOSITORY_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const MAIN_SCRIPT = path.join(REPOSITORY_ROOT, 'dist', 'main.js');

const READY_TIMEOUT_MS = 20_000;
const READY_POLL_MS = 25;
const STOP_TIMEOUT_MS = 20_000;
const OUTPUT_LINES_MAX = 5000;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export type ExitStatus = { code: number | null; signal: NodeJS.Signals | null };

export type ServiceOptions = {
  /** Environment of the service (on top of PORT, HOST and DATABASE_URL, which are set here). */
  env?: Record<string, string>;
  /** Run on an existing data folder (its `ledger.db`) instead of a fresh one. */
  dataDir?: string;
};

export function assertBuilt(): void {
  if (!fs.existsSync(MAIN_SCRIPT)) {
    throw new Error(`${MAIN_SCRIPT} is missing: run \`npm run build\` before the end-to-end tests`);
  }
}

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
  readonly dataDir: string;
  readonly databasePath: string;
  private readonly owns_dir: boolean;
  private env: Record<string, string>;
  private child: ChildProcess | null = null;
  private exited: Promise<ExitStatus> | null = null;
  private last_exit: ExitStatus | null = null;
  private port = 0;
  private lines: string[] = [];
  private generation = 0;

  private constructor(options: ServiceOptions) {
    assertBuilt();
    this.owns_dir = options.dataDir === undefined;
    this.dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-e2e-'));
    this.databasePath = path.join(this.dataDir, 'ledger.db');
    this.env = { ...(options.env ?? {}) };
  }

  /** Starts a service and waits until `GET /readyz` answers 200. */
  static async start(options: ServiceOptions = {}): Promise<ServiceProcess> {
    const service = new ServiceProcess(options);
    try {
      await service.launch();
    } catch (error) {
      await service.dispose();
      throw error;
    }
    return service;
  }

  /** `http://127.0.0.1:<port>` of the running process (a restart gets a new port). */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** How the previous process ended. */
  get lastExit(): ExitStatus | null {
    return this.last_exit;
  }

  /** Captured stdout and stderr lines, of every process started so far (restarts are marked). */
  output(): string {
    return this.lines.join('\n');
  }

  /** The JSON log lines (pino) of the output. */
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

  /** Sends SIGTERM and waits for the process to exit. */
  async stop(timeout_ms = STOP_TIMEOUT_MS): Promise<ExitStatus> {
    return this.signal('SIGTERM', timeout_ms);
  }

  /** Sends SIGKILL (a crash) and waits for the process to be gone. */
  async kill(): Promise<ExitStatus> {
    return this.signal('SIGKILL', STOP_TIMEOUT_MS);
  }

  /** Sends SIGKILL without waiting (e.g. from inside a burst of requests). */
  killNow(): void {
    this.child?.kill('SIGKILL');
  }

  /** Sends a signal without waiting for the exit (see `exit()`). */
  sendSignal(signal: NodeJS.Signals): void {
    if (this.child === null) throw new Error('the service is not running');
    this.child.kill(signal);
  }

  /** Waits until a log line (parsed JSON) satisfies `predicate`. */
  async waitForLog(predicate: (line: Record<string, unknown>) => boolean, timeout_ms = 10_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeout_ms;
    for (;;) {
      const found = this.logs().find(predicate);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no such log line within ${timeout_ms} ms:\n${this.tail()}`);
      await delay(10);
    }
  }

  /** Waits for the current process to exit on its own. */
  async exit(timeout_ms = STOP_TIMEOUT_MS): Promise<ExitStatus> {
    if (this.exited === null) {
      if (this.last_exit !== null) return this.last_exit;
      throw new Error('the service was never started');
    }
    return withTimeout(this.exited, timeout_ms, `the service did not exit within ${timeout_ms} ms\n${this.tail()}`);
  }

  /** Starts the service again on the same data folder (stopping it first with SIGKILL if it runs). */
  async restart(env: Record<string, string> = {}): Promise<void> {
    if (this.child !== null) await this.kill();
    this.env = { ...this.env, ...env };
    await this.launch();
  }

  /** Kills the process if it still runs and removes the data folder it created. */
  async dispose(): Promise<void> {
    if (this.child !== null) await this.kill().catch(() => undefined);
    if (this.owns_dir && process.env.TABULA_E2E_KEEP_DATA === undefined) fs.rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** The last lines of output, for failure messages. */
  tail(lines = 40): string {
    return this.lines.slice(-lines).join('\n');
  }

  private async signal(signal: NodeJS.Signals, timeout_ms: number): Promise<ExitStatus> {
    const child = this.child;
    if (child === null || this.exited === null) {
      if (this.last_exit !== null) return this.last_exit;
      throw new Error('the service is not running');
    }
    child.kill(signal);
    return withTimeout(this.exited, timeout_ms, `the service did not exit within ${timeout_ms} ms of ${signal}\n${this.tail()}`);
  }

  private async launch(): Promise<void> {
    const attempts = 3;
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.launchOnce();
        return;
      } catch (error) {
        // Another process may have taken the port between `freePort()` and the child's listen.
        const port_taken = /EADDRINUSE/.test(this.tail(10));
        if (!port_taken || attempt >= attempts) throw error;
      }
    }
  }

  private async launchOnce(): Promise<void> {
    this.port = await freePort();
    this.generation += 1;
    this.record(`--- start #${this.generation} on port ${this.port} ---`);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? os.homedir(),
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      ...this.env,
      PORT: String(this.port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${this.databasePath}`,
    };
    const child = spawn(process.execPath, ['--enable-source-maps', MAIN_SCRIPT], {
      cwd: this.dataDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(child);
    this.child = child;
    this.capture(child.stdout, '');
    this.capture(child.stderr, '[stderr] ');
    this.exited = new Promise<ExitStatus>((resolve) => {
      child.once('exit', (code, signal) => {
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
    let exited = false;
    void this.exited?.then(() => {
      exited = true;
    });
    while (Date.now() < deadline) {
      if (exited || this.child !== child) {
        throw new Error(`the service exited before it was ready (${JSON.stringify(this.last_exit)}):\n${this.tail()}`);
      }
      try {
        const response = await fetch(`${this.baseUrl}/readyz`, { signal: AbortSignal.timeout(1000) });
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

  private capture(stream: NodeJS.ReadableStream | null, prefix: string): void {
    if (stream === null) return;
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const line of parts) this.record(prefix + line);
    });
    stream.on('end', () => {
      if (pending !== '') this.record(prefix + pending);
      pending = '';
    });
  }

  private record(line: string): void {
    this.lines.push(line);
    if (this.lines.length > OUTPUT_LINES_MAX) this.lines.splice(0, this.lines.length - OUTPUT_LINES_MAX);
  }
}

export function delay(ms: number): Promise<void> {
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

export type RunResult = ExitStatus & { stdout: string; stderr: string };

/**
 * Runs `node dist/main.js` with `env` (on a fresh or given data folder) and waits for it to exit on
 * its own, e.g. because its configuration is refused. A process still running after `timeout_ms` is
 * killed and reported as such.
 */
export async function runUntilExit(env: Record<string, string>, options: { dataDir?: string; timeout_ms?: number } = {}): Promise<RunResult> {
  assertBuilt();
  const data_dir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-e2e-'));
  try {
    const child = spawn(process.execPath, [MAIN_SCRIPT], {
      cwd: data_dir,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? os.homedir(),
        HOST: '127.0.0.1',
        PORT: '0',
        DATABASE_URL: `sqlite:${path.join(data_dir, 'ledger.db')}`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeout_ms ?? 15_000);
    const [code, signal] = (await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
      child.once('close', (exit_code, exit_signal) => resolve([exit_code, exit_signal]));
    }));
    clearTimeout(timer);
    live.delete(child);
    return { code, signal, stdout, stderr };
  } finally {
    if (options.dataDir === undefined) fs.rmSync(data_dir, { recursive: true, force: true });
  }
}
