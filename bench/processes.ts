/**
 * The processes of a benchmark run: the service itself (`node dist/main.js` with the Node flags `npm start` gives it),
 * the bare Fastify ceiling, the load generator and the events scenario's subscribers. Each is a child
 * process on loopback.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { SubscriberCommand, SubscriberReply } from './event-measures.js';
import type { LoadResult, LoadSpec } from './load-types.js';

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 120_000;
/** Variables of the service's configuration: never inherited from the benchmark's own environment. */
const SERVICE_VARIABLES = [
  'PORT', 'HOST', 'DATABASE_URL', 'JWT_ISSUER', 'JWT_JWKS_URL', 'JWT_AUDIENCE', 'JWT_SECRET', 'LEDGER_ADMIN_SCOPE', 'API_KEYS',
  'RATE_LIMIT_MAX', 'RATE_LIMIT_WINDOW_MS', 'BLOCK_INTERVAL_MS', 'BLOCK_TXS_MAX', 'PENDING_MAX', 'NATIVE_SYMBOL', 'NATIVE_PRICE_USD', 'LOG_LEVEL',
  'LOG_FORMAT',
  'NODE_ENV', 'METRICS_TOKEN', 'METRICS_PORT', 'REDIS_URL', 'AUTH_FAILURES_MAX', 'TRUST_PROXY', 'CORS_ORIGINS',
  'DATABASE_QUERY_TIMEOUT_MS', 'SEALER_LEASE_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS', 'HTTP_HEADERS_TIMEOUT_MS', 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  'HTTP_CONNECTIONS_MAX', 'HEAP_GROWING_PERCENT',
];
/** Prefixes of the service's variables that are never inherited either (the event log's, webhooks', tokens', keys' and checkpoints'). */
const SERVICE_VARIABLE_PREFIXES = ['EVENTS_', 'WEBHOOK_', 'JWT_', 'JWKS_', 'CHECKPOINT_'];

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

/** The Node flags `npm start` gives the service (package.json's `config.service_node_flags`): measured as deployed. */
export function serviceNodeFlags(root: string): string[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { config?: { service_node_flags?: unknown } };
  const flags = manifest.config?.service_node_flags;
  if (typeof flags !== 'string') throw new BenchError('package.json has no config.service_node_flags');
  return flags.split(/\s+/).filter((flag) => flag !== '');
}

/** Node's flags that write a CPU profile of the service into `profile_dir` when it exits (none without one). */
export function profileFlags(profile_dir: string | undefined): string[] {
  return profile_dir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profile_dir}`];
}

/**
 * Starts `node [node_flags] dist/main.js` with `env` and waits for /readyz; a service that exits instead
 * is reported with its own words.
 */
export async function startService(root: string, env: Record<string, string>, node_flags: readonly string[] = []): Promise<ServiceProcess> {
  const port = await freePort();
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) =>
    !SERVICE_VARIABLES.includes(name) && !SERVICE_VARIABLE_PREFIXES.some((prefix) => name.startsWith(prefix))));
  const child = spawn(process.execPath, [...serviceNodeFlags(root), ...node_flags, 'dist/main.js'], {
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

/** VmRSS from /proc (Linux): the resident memory of the process now; 0 where /proc is not available. */
export function rssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? 0 : Number(match[1]) * 1024;
  } catch {
    return 0;
  }
}

/** Linux's clock ticks per second (USER_HZ), the unit of /proc/<pid>/stat's CPU times. */
const CLOCK_TICKS_PER_S = 100;

/** CPU time (user + system, every thread) the process has used so far, from /proc/<pid>/stat; 0 where unavailable. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, inside parentheses): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return 0;
  }
}

/**
 * Time the process's threads (or, with `main_thread_only`, its main thread: the one whose id is the
 * process's) have spent running on a CPU and runnable but waiting for one, from
 * /proc/<pid>/task/<tid>/schedstat (needs schedstats in the kernel); zeros where unavailable.
 */
export function scheduleSeconds(pid: number, main_thread_only = false): { running_s: number; waiting_s: number } {
  const total = { running_s: 0, waiting_s: 0 };
  try {
    for (const task of main_thread_only ? [String(pid)] : fs.readdirSync(`/proc/${pid}/task`)) {
      const [running_ns, waiting_ns] = fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').trim().split(' ').map(Number);
      total.running_s += (running_ns ?? 0) / 1e9;
      total.waiting_s += (waiting_ns ?? 0) / 1e9;
    }
  } catch {
    // A thread that ended between the listing and the read, or no /proc: what was read so far.
  }
  return total;
}

/** The soft limit of open files of this process (inherited by the processes it starts); null where unknown. */
export function openFilesLimit(): number | null {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return match === null ? null : match[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(match[1]);
  } catch {
    return null;
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

export type LoadGenerator = { pid: number; run(spec: LoadSpec): Promise<LoadResult>; stop(): void };

/**
 * A bench script in a process of its own for the whole run, spoken to in JSON lines: each request is
 * one line on its stdin and its answer one line on its stdout, one at a time.
 */
type JsonLinesChild<Request, Answer> = { pid: number; ask(request: Request): Promise<Answer>; stop(): void };

function startJsonLinesChild<Request, Answer>(root: string, script: string, name: string): JsonLinesChild<Request, Answer> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join('bench', script)], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let buffered = '';
  let waiting: { resolve: (answer: Answer) => void; reject: (error: Error) => void } | null = null;
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-8000); });
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const newline = buffered.indexOf('\n');
    if (newline < 0 || waiting === null) return;
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    const settle = waiting;
    waiting = null;
    settle.resolve(JSON.parse(line) as Answer);
  });
  child.once('exit', (code) => waiting?.reject(new BenchError(`the ${name} exited (code ${code}):\n${stderr}`)));
  return {
    pid: child.pid as number,
    ask(request) {
      if (waiting !== null) return Promise.reject(new BenchError(`one request at a time to the ${name}`));
      return new Promise<Answer>((resolve, reject) => {
        waiting = { resolve, reject };
        child.stdin?.write(`${JSON.stringify(request)}\n`);
      });
    },
    stop() {
      child.stdin?.end();
    },
  };
}

/** The load generator (bench/load.ts): each spec it is given runs, and its result comes back. */
export function startLoadGenerator(root: string): LoadGenerator {
  const child = startJsonLinesChild<LoadSpec, LoadResult>(root, 'load.ts', 'load generator');
  return { pid: child.pid, run: (spec) => child.ask(spec), stop: () => child.stop() };
}

export type SubscriberProcess = { pid: number; send(command: SubscriberCommand): Promise<SubscriberReply>; stop(): void };

/** The events scenario's subscriber process (bench/event-subscribers.ts): one command at a time, one answer each. */
export function startSubscriberProcess(root: string): SubscriberProcess {
  const child = startJsonLinesChild<SubscriberCommand, SubscriberReply>(root, 'event-subscribers.ts', 'subscriber process');
  return { pid: child.pid, send: (command) => child.ask(command), stop: () => child.stop() };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
