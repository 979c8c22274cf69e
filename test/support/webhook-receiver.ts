/**
 * A webhook receiver for tests: a real HTTP server on 127.0.0.1 that checks every request's Standard
 * Webhooks signature itself (node:crypto, not the service's code) against the secrets it knows,
 * records the verified events, and can be told to answer 503 or to stop listening for a while.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceivedEvent = { id: string; sequence: number; type: string; body: string; timestamp_s: number; signatures: string[] };

/** Whether one of the `v1,` signatures of `header` is the HMAC of `<id>.<timestamp>.<body>` under `secret`. */
export function verifySignature(secret: string, id: string, timestamp: string, body: string, header: string): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = Buffer.from(createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64'));
  return header.split(' ').some((signature) => {
    if (!signature.startsWith('v1,')) return false;
    const given = Buffer.from(signature.slice(3));
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export class WebhookReceiver {
  /** Every verified request, in arrival order (duplicates included). */
  readonly received: ReceivedEvent[] = [];
  /** Requests whose signature did not verify, or which lacked a header. */
  readonly rejected: string[] = [];
  secrets: string[] = [];
  /** The status answered to verified requests. */
  status = 204;
  /** How long each answer is held back (widens the window in which a concurrent duplicate would show). */
  delay_ms = 0;
  /** Requests being answered at the moment, at the most seen at once. */
  concurrent_max = 0;
  private concurrent = 0;
  private server: http.Server | null = null;
  private port_number = 0;

  static async start(port = 0): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await receiver.listen(port);
    return receiver;
  }

  /** Requests received and not answered yet. */
  get in_flight(): number {
    return this.concurrent;
  }

  get port(): number {
    return this.port_number;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port_number}/hook`;
  }

  /** The ids of the distinct events received, in the order first received. */
  distinctIds(): string[] {
    return [...new Set(this.received.map((event) => event.id))];
  }

  async listen(port = this.port_number): Promise<void> {
    const server = http.createServer((request, response) => this.handle(request, response));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port_number = (server.address() as AddressInfo).port;
  }

  /** Stops listening (connections are cut): deliveries fail to connect until `listen()` again. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async waitFor(predicate: (receiver: WebhookReceiver) => boolean, timeout_ms = 20_000): Promise<void> {
    const deadline = Date.now() + timeout_ms;
    while (!predicate(this)) {
      if (Date.now() > deadline) throw new Error(`the receiver did not get what was expected within ${timeout_ms} ms (${this.received.length} received: ${this.distinctIds().slice(-5).join(', ')})`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    this.concurrent += 1;
    this.concurrent_max = Math.max(this.concurrent_max, this.concurrent);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(request.headers['webhook-id'] ?? '');
      const timestamp = String(request.headers['webhook-timestamp'] ?? '');
      const signature = String(request.headers['webhook-signature'] ?? '');
      const verified = request.method === 'POST' && this.secrets.some((secret) => verifySignature(secret, id, timestamp, body, signature));
      if (!verified) {
        this.rejected.push(id);
        this.answer(response, 401);
        return;
      }
      if (this.status >= 200 && this.status < 300) {
        const event = JSON.parse(body) as { id: string; sequence: number; type: string };
        if (event.id !== id) throw new Error(`webhook-id ${id} is not the body's id ${event.id}`);
        this.received.push({ id, sequence: event.sequence, type: event.type, body, timestamp_s: Number(timestamp), signatures: signature.split(' ') });
      }
      this.answer(response, this.status);
    });
  }

  private answer(response: http.ServerResponse, status: number): void {
    const send = () => {
      this.concurrent -= 1;
      response.writeHead(status).end();
    };
    if (this.delay_ms > 0) setTimeout(send, this.delay_ms);
    else send();
  }
}
