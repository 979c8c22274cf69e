/**
 * A test consumer of `GET /api/events`: reads the stream over node:http (a connection of its own per
 * stream), remembers every event it was given in order, and when a stream ends or breaks — the
 * instance was killed, the test cut it — resumes with `Last-Event-ID` on the next of its instances,
 * as a real consumer would. Its oracle is `sequences()`: what it saw, in the order it saw it.
 */
import http from 'node:http';
import { expect } from 'vitest';

export type ConsumedEvent = { id: string; sequence: number; type: string; json: string; data: Record<string, unknown> };

export type EventConsumerOptions = {
  /** Base URLs to read from, tried in turn after a break (e.g. one per instance). */
  urls: () => readonly string[];
  token: string;
  /** First cursor (`?after=`). */
  after: number;
  /** Cut the stream after a random number of events up to this (0: never), to exercise resuming. */
  cut_after_events_max?: number;
  /** Pause between a break and the next connection. */
  retry_delay_ms?: number;
};

export class EventConsumer {
  readonly events: ConsumedEvent[] = [];
  /** Streams opened (each break is followed by a new one). */
  connections = 0;
  errors: string[] = [];
  private readonly options: EventConsumerOptions;
  private stopped = false;
  private request: http.ClientRequest | null = null;
  private running: Promise<void> | null = null;
  private turn = 0;

  constructor(options: EventConsumerOptions) {
    this.options = options;
  }

  start(): void {
    this.running ??= this.loop();
  }

  get last_sequence(): number {
    return this.events.at(-1)?.sequence ?? this.options.after;
  }

  sequences(): number[] {
    return this.events.map((event) => event.sequence);
  }

  /** Resolves once an event with `sequence` ≥ `target` has arrived (or rejects after `timeout_ms`). */
  async waitFor(target: number, timeout_ms: number): Promise<void> {
    const deadline = Date.now() + timeout_ms;
    while (this.last_sequence < target) {
      if (Date.now() > deadline) throw new Error(`consumer reached ${this.last_sequence}, not ${target}, in ${timeout_ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.request?.destroy();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const urls = this.options.urls();
      const url = urls[this.turn % urls.length] as string;
      this.turn += 1;
      await this.readOnce(url).catch((error: unknown) => this.errors.push(String(error)));
      if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, this.options.retry_delay_ms ?? 100));
    }
  }

  private readOnce(base: string): Promise<void> {
    const cut_max = this.options.cut_after_events_max ?? 0;
    const cut_at = cut_max > 0 ? 1 + Math.floor(Math.random() * cut_max) : Number.POSITIVE_INFINITY;
    const last = this.events.at(-1);
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.token}` };
    if (last !== undefined) headers['last-event-id'] = last.id;
    const path = last === undefined ? `/api/events?after=${this.options.after}` : '/api/events';
    return new Promise((resolve) => {
      let received = 0;
      const request = http.get(`${base}${path}`, { agent: false, headers }, (response) => {
        if (response.statusCode !== 200) {
          this.errors.push(`status ${response.statusCode} from ${base}`);
          response.resume();
          response.on('end', resolve);
          return;
        }
        this.connections += 1;
        response.setEncoding('utf8');
        let buffer = '';
        response.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = parseMessage(block);
            if (event === null) continue;
            this.events.push(event);
            received += 1;
            if (received >= cut_at) {
              request.destroy();
              return;
            }
          }
        });
        response.on('end', () => resolve());
        response.on('error', () => resolve());
        response.on('close', () => resolve());
      });
      this.request = request;
      request.on('error', () => resolve());
      request.on('close', () => resolve());
    });
  }
}

function parseMessage(block: string): ConsumedEvent | null {
  let id: string | null = null;
  let type: string | null = null;
  let data: string | null = null;
  for (const line of block.split('\n')) {
    if (line.startsWith('id: ')) id = line.slice(4);
    else if (line.startsWith('event: ')) type = line.slice(7);
    else if (line.startsWith('data: ')) data = line.slice(6);
  }
  if (id === null || type === null || data === null) return null;
  const parsed = JSON.parse(data) as { sequence: number; data: Record<string, unknown> };
  return { id, sequence: parsed.sequence, type, json: data, data: parsed.data };
}

/** Every acknowledged transaction: accepted, then exactly one outcome; each block's outcomes right before its block.sealed. */
export function checkEventOrder(events: readonly ConsumedEvent[], acknowledged: ReadonlySet<string>): void {
  const accepted_at = new Map<string, number>();
  const outcome_at = new Map<string, number>();
  events.forEach((event, index) => {
    const hash = event.data.tx_hash as string | undefined;
    if (event.type === 'transaction.accepted') {
      expect(accepted_at.has(hash!)).toBe(false);
      accepted_at.set(hash!, index);
    } else if (event.type === 'transaction.confirmed' || event.type === 'transaction.failed') {
      expect(outcome_at.has(hash!)).toBe(false);
      expect(accepted_at.get(hash!)).toBeLessThan(index);
      outcome_at.set(hash!, index);
    } else {
      const count = event.data.transactions_count as number;
      const outcomes = events.slice(index - count, index);
      expect(outcomes.map((outcome) => outcome.data.block_number)).toEqual(Array(count).fill(event.data.number));
      expect(outcomes.map((outcome) => outcome.data.position)).toEqual(Array.from({ length: count }, (_, position) => position));
    }
  });
  for (const hash of acknowledged) {
    expect(accepted_at.has(hash), hash).toBe(true);
    expect(outcome_at.has(hash), hash).toBe(true);
  }
}
