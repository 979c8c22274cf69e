/**
 * The events scenario's subscribers: a process of its own (`node --import tsx bench/event-subscribers.ts`)
 * holding many `GET /api/events` streams, each on its own connection (node:http, no agent). It reads
 * only what it must from each message — the sequence from the `id:` line, the type from `event:` and,
 * once per event, the `tx_hash` of a `transaction.accepted` or `transaction.confirmed` — and stamps every chunk with the machine's
 * monotonic clock as it arrives. Commands come as JSON lines on stdin, answers go as JSON lines on
 * stdout (see event-measures.ts); the last answer carries the lags, computed against the submitter's
 * acknowledgements.
 */
import http from 'node:http';
import readline from 'node:readline';
import { monotonicMs, summarize, type Acknowledgement, type SubscriberCommand, type SubscriberReply, type SubscriberReport } from './event-measures.js';

const ACCEPTED = 'transaction.accepted';
const CONFIRMED = 'transaction.confirmed';
const TX_HASH_KEY = '"tx_hash":"';
const TX_HASH_LENGTH = 66;
const END_REASONS_KEPT = 10;

type Stream = {
  last: number;
  received: number;
  out_of_sequence: number;
  opened: boolean;
  ended: boolean;
  pending: string;
  request: http.ClientRequest | null;
};

const streams: Stream[] = [];
const end_reasons: string[] = [];
/** Per event of one type (by sequence): its transaction's hash, and when each stream received it. */
type Receipts = { hash: Map<number, string>; at_ms: Map<number, number[]> };
const accepted: Receipts = { hash: new Map(), at_ms: new Map() };
const confirmed: Receipts = { hash: new Map(), at_ms: new Map() };
let after = 0;
let closing = false;
let cpu_at_open: NodeJS.CpuUsage | null = null;
let opened_at_ms = 0;

function noteEnd(stream: Stream, reason: string): void {
  if (stream.ended || closing) return;
  stream.ended = true;
  if (end_reasons.length < END_REASONS_KEPT) end_reasons.push(reason);
}

/** One SSE message, `text.slice(start, end)`: a comment, the `retry:` line, or an event. */
function onMessage(stream: Stream, text: string, start: number, end: number, at_ms: number): void {
  if (text.startsWith('id: evt_', start)) {
    const sequence = Number.parseInt(text.slice(start + 8, text.indexOf('_', start + 8)), 10);
    stream.received += 1;
    if (sequence !== stream.last + 1) stream.out_of_sequence += 1;
    stream.last = sequence;
    const type_at = text.indexOf('\nevent: ', start) + 8;
    const receipts = text.startsWith(ACCEPTED, type_at) ? accepted : text.startsWith(CONFIRMED, type_at) ? confirmed : null;
    if (receipts !== null) noteReceipt(receipts, sequence, text, type_at, end, at_ms);
  } else if (text.startsWith('retry:', start)) {
    stream.opened = true;
  } else if (text.startsWith(': disconnected', start)) {
    noteEnd(stream, text.slice(start, end));
  }
}

/** Stamps one stream's receipt of a transaction event; the first receipt of each event also reads its hash. */
function noteReceipt(receipts: Receipts, sequence: number, text: string, type_at: number, end: number, at_ms: number): void {
  let times = receipts.at_ms.get(sequence);
  if (times === undefined) {
    const hash_at = text.indexOf(TX_HASH_KEY, type_at);
    if (hash_at < 0 || hash_at > end) return;
    receipts.hash.set(sequence, text.slice(hash_at + TX_HASH_KEY.length, hash_at + TX_HASH_KEY.length + TX_HASH_LENGTH));
    times = [];
    receipts.at_ms.set(sequence, times);
  }
  times.push(at_ms);
}

function onChunk(stream: Stream, chunk: string): void {
  const at_ms = monotonicMs();
  const text = stream.pending === '' ? chunk : stream.pending + chunk;
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n\n', start);
    if (end < 0) break;
    onMessage(stream, text, start, end, at_ms);
    start = end + 2;
  }
  stream.pending = start === text.length ? '' : text.slice(start);
}

function connect(url: URL, token: string, stream: Stream, timeout_ms: number): Promise<string | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(`no \`retry:\` line within ${timeout_ms} ms`), timeout_ms);
    const settle = (failure: string | null) => {
      clearTimeout(timer);
      resolve(failure);
    };
    const request = http.request({
      host: url.hostname, port: url.port, path: `/api/events?after=${after}`, agent: false,
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    stream.request = request;
    request.on('error', (error) => {
      noteEnd(stream, `connection error: ${error.message}`);
      settle(`connection error: ${error.message}`);
    });
    request.on('response', (response) => {
      response.setEncoding('latin1');
      if (response.statusCode !== 200) {
        let body = '';
        response.on('data', (chunk: string) => { body += chunk; });
        response.on('end', () => settle(`${response.statusCode}: ${body.slice(0, 300)}`));
        return;
      }
      response.on('data', (chunk: string) => {
        onChunk(stream, chunk);
        if (stream.opened) settle(null);
      });
      response.on('close', () => noteEnd(stream, 'the stream closed'));
    });
    request.end();
  });
}

async function open(command: Extract<SubscriberCommand, { op: 'open' }>): Promise<SubscriberReply> {
  after = command.after;
  const url = new URL(command.url);
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < command.tokens.length) {
      const token = command.tokens[next] as string;
      next += 1;
      const stream: Stream = { last: after, received: 0, out_of_sequence: 0, opened: false, ended: false, pending: '', request: null };
      streams.push(stream);
      const failure = await connect(url, token, stream, command.timeout_ms);
      if (failure !== null) failures.push(failure);
    }
  };
  await Promise.all(Array.from({ length: Math.min(command.connect_concurrency, command.tokens.length) }, worker));
  cpu_at_open = process.cpuUsage();
  opened_at_ms = monotonicMs();
  return { op: 'opened', opened: streams.filter((stream) => stream.opened).length, failures: failures.slice(0, END_REASONS_KEPT) };
}

async function waitFor(head: number, timeout_ms: number): Promise<SubscriberReply> {
  const started_ms = monotonicMs();
  const reached = () => streams.filter((stream) => stream.last >= head).length;
  while (reached() < streams.length && monotonicMs() - started_ms < timeout_ms) await new Promise((resolve) => setTimeout(resolve, 20));
  return { op: 'caught_up', reached: reached(), elapsed_ms: monotonicMs() - started_ms };
}

/** Receipts of each acknowledged transaction's event by every stream, against its submission's times. */
function lags(receipts: Receipts, acknowledgements: Acknowledgement[]) {
  const sequence_of = new Map<string, number>();
  for (const [sequence, hash] of receipts.hash) sequence_of.set(hash, sequence);
  const from_ack: number[] = [];
  const from_send: number[] = [];
  const spread: number[] = [];
  let missing = 0;
  let before_ack = 0;
  for (const ack of acknowledgements) {
    const sequence = sequence_of.get(ack.tx_hash);
    const times = sequence === undefined ? undefined : receipts.at_ms.get(sequence);
    if (times === undefined || times.length < streams.length) missing += 1;
    if (times === undefined || times.length === 0) continue;
    let first = Infinity;
    let last = -Infinity;
    for (const at_ms of times) {
      from_ack.push(at_ms - ack.acked_ms);
      from_send.push(at_ms - ack.sent_ms);
      if (at_ms < ack.acked_ms) before_ack += 1;
      first = Math.min(first, at_ms);
      last = Math.max(last, at_ms);
    }
    spread.push(last - first);
  }
  return { missing, before_ack, from_ack: summarize(from_ack), from_send: summarize(from_send), spread: summarize(spread) };
}

function finish(acknowledgements: Acknowledgement[], head: number): SubscriberReply {
  const cpu = process.cpuUsage(cpu_at_open ?? undefined);
  const elapsed_ms = monotonicMs() - opened_at_ms;
  closing = true;
  for (const stream of streams) stream.request?.destroy();
  const accepted_lags = lags(accepted, acknowledgements);
  const confirmed_lags = lags(confirmed, acknowledgements);
  const report: SubscriberReport = {
    subscribers: streams.length,
    opened: streams.filter((stream) => stream.opened).length,
    // Complete: every event from the start cursor to the head or past it (the log may grow by a block's
    // events while the head is read), each once and in sequence, and the stream still open.
    complete: streams.filter((stream) => stream.opened && !stream.ended && stream.out_of_sequence === 0 && stream.last >= head && stream.received === stream.last - after).length,
    out_of_sequence: streams.reduce((sum, stream) => sum + stream.out_of_sequence, 0),
    ended_early: streams.filter((stream) => stream.ended).length,
    end_reasons,
    received: streams.reduce((sum, stream) => sum + stream.received, 0),
    missing_accepted: accepted_lags.missing,
    lag_from_ack_ms: accepted_lags.from_ack,
    lag_from_send_ms: accepted_lags.from_send,
    delivered_before_ack: accepted_lags.before_ack,
    fanout_spread_ms: accepted_lags.spread,
    missing_confirmed: confirmed_lags.missing,
    confirmed_from_ack_ms: confirmed_lags.from_ack,
    cpu_percent: ((cpu.user + cpu.system) / 1000 / Math.max(1, elapsed_ms)) * 100,
  };
  return { op: 'finished', report };
}

function reply(answer: SubscriberReply): void {
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}

let head = 0;
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const command = JSON.parse(line) as SubscriberCommand;
  if (command.op === 'open') reply(await open(command));
  else if (command.op === 'wait') {
    head = command.head;
    reply(await waitFor(command.head, command.timeout_ms));
  } else reply(finish(command.acknowledgements, head));
}
