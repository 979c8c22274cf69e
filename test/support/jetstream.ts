/**
 * The test side of NATS JetStream (TEST_NATS_URL, default the local server on 127.0.0.1:4222): names
 * of a stream and subjects of their own for each test, a real ordered consumer that records what the
 * stream holds, and stopping and restoring the local server (restored by `.ci/ensure-services`, which
 * starts it as this machine kind starts it and waits until it answers).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ROOT } from './service-process.js';

export const TEST_NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const NATS_PORT = Number(new URL(TEST_NATS_URL).port || '4222');
const NATS_HOST = new URL(TEST_NATS_URL).hostname;

const run = promisify(execFile);

/** A stream name and subject prefix no other test (or earlier run) uses. */
export function uniqueNatsNames(): { stream: string; subject_prefix: string } {
  const tag = randomBytes(5).toString('hex');
  return { stream: `TABULA_TEST_${tag}`, subject_prefix: `tabula_test_${tag}.events` };
}

export type StreamedEvent = { stream_sequence: number; subject: string; msg_id: string | undefined; tabula_sequence: string | undefined; body: string };

/** A real ordered consumer on a stream: records every message it is delivered, in order. */
export class StreamConsumer {
  readonly messages: StreamedEvent[] = [];
  private readonly connection: NatsConnection;
  private readonly consuming: ConsumerMessages;
  private readonly done: Promise<void>;

  private constructor(connection: NatsConnection, consuming: ConsumerMessages) {
    this.connection = connection;
    this.consuming = consuming;
    this.done = (async () => {
      for await (const message of consuming) {
        this.messages.push({
          stream_sequence: message.seq,
          subject: message.subject,
          msg_id: message.headers?.get('Nats-Msg-Id'),
          tabula_sequence: message.headers?.get('Tabula-Sequence'),
          body: message.string(),
        });
      }
    })().catch(() => undefined);
  }

  /** Starts an ordered consumer from the first message of `stream` (which must exist). */
  static async open(stream: string): Promise<StreamConsumer> {
    const connection = await connect({ servers: TEST_NATS_URL, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const consumer = await jetstream(connection).consumers.get(stream);
    return new StreamConsumer(connection, await consumer.consume());
  }

  /** Waits until at least `count` messages have arrived. */
  async waitForCount(count: number, timeout_ms: number): Promise<void> {
    const deadline = Date.now() + timeout_ms;
    while (this.messages.length < count) {
      if (Date.now() > deadline) throw new Error(`the consumer got ${this.messages.length} messages, not ${count}, within ${timeout_ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async close(): Promise<void> {
    await this.consuming.close().catch(() => undefined);
    await this.done;
    await this.connection.close().catch(() => undefined);
  }
}

/** Runs `action` with a JetStream manager on a connection of its own. */
export async function withStreams<T>(action: (manager: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<T>): Promise<T> {
  const connection = await connect({ servers: TEST_NATS_URL, reconnect: false, timeout: 5000 });
  try {
    return await action(await jetstreamManager(connection));
  } finally {
    await connection.close().catch(() => undefined);
  }
}

export async function streamMessageCount(stream: string): Promise<number> {
  return withStreams(async (manager) => (await manager.streams.info(stream)).state.messages);
}

/** Creates a stream capturing `<subject_prefix>.>` (as an operator would, before the service). */
export async function createStream(stream: string, subject_prefix: string): Promise<void> {
  await withStreams((manager) => manager.streams.add({ name: stream, subjects: [`${subject_prefix}.>`] }));
}

/** Deletes a stream if it exists (a test's cleanup; never fails the test over a missing stream). */
export async function deleteStream(stream: string): Promise<void> {
  await withStreams((manager) => manager.streams.delete(stream)).catch(() => undefined);
}

export async function natsAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: NATS_HOST, port: NATS_PORT });
    socket.setTimeout(1000);
    socket.once('data', (chunk) => {
      socket.destroy();
      resolve(chunk.toString('utf8').startsWith('INFO'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Stops the local nats-server (SIGTERM to its process) and waits until it has exited and its port no longer answers. */
export async function stopNatsServer(timeout_ms = 15_000): Promise<void> {
  const { stdout } = await run('pgrep', ['-x', 'nats-server']);
  const pids = stdout.split('\n').map((line) => Number(line.trim())).filter((pid) => Number.isSafeInteger(pid) && pid > 0);
  if (pids.length === 0) throw new Error('no nats-server process found');
  for (const pid of pids) process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + timeout_ms;
  while (pids.some(isRunning) || (await natsAnswers())) {
    if (Date.now() > deadline) throw new Error(`nats-server still runs ${timeout_ms} ms after SIGTERM`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts the local nats-server again if it is down (`.ci/ensure-services`) and waits until it answers with JetStream. */
export async function restoreNatsServer(): Promise<void> {
  await run('bash', ['.ci/ensure-services'], { cwd: ROOT, timeout: 120_000 });
  if (!(await natsAnswers())) throw new Error('nats-server does not answer after .ci/ensure-services');
}
