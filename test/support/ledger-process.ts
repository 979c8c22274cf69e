/**
 * A real `node dist/main.js` on a free loopback port, as `npm start` runs it, for tests of several
 * instances. Its JSON log lines are kept so a test can tell which instance holds the sealer lease.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';

const ROOT = path.resolve(import.meta.dirname, '../..');
const READY_POLL_MS = 100;

export type LedgerProcess = {
  name: string;
  url: string;
  child: ChildProcess;
  /** Parsed JSON log lines, in order. */
  logs: Array<Record<string, unknown>>;
  /** Text the process wrote to stderr (start-up failures). */
  stderr(): string;
  exited: Promise<void>;
  logged(message_part: string): boolean;
  waitReady(timeout_ms: number): Promise<void>;
  kill(signal: NodeJS.Signals): Promise<void>;
};

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function startLedgerProcess(name: string, env: Record<string, string>): Promise<LedgerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    url,
    child,
    logs,
    stderr: () => stderr,
    exited,
    logged: (message_part) => logs.some((line) => String(line.msg).includes(message_part)),
    async waitReady(timeout_ms) {
      const deadline = Date.now() + timeout_ms;
      while (Date.now() < deadline) {
        if (!running()) throw new Error(`${name} exited before it was ready: ${stderr}`);
        const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) }).then((response) => response.ok, () => false);
        if (ready) return;
        await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
      }
      throw new Error(`${name} was not ready within ${timeout_ms} ms: ${stderr}`);
    },
    async kill(signal) {
      if (!running()) return;
      child.kill(signal);
      await exited;
    },
  };
}
