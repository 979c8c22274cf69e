/**
 * The events scenario: many `GET /api/events` subscribers, held by a process of their own, while a
 * steady submitter posts transfers. Lag is measured from the submitter receiving a 202 (the commit is
 * durable then) to each stream receiving that transaction's `transaction.accepted`; the service's
 * memory and CPU are read from /proc while the streams are open. On SQLite the streams are on the
 * instance that takes the submissions; on PostgreSQL also on a second instance (across instances).
 */
import os from 'node:os';
import { monotonicMs } from './event-measures.js';
import { loadTransactions, metricValue, scrapeMetrics, signToken, waitUntilSealed, type TransferBody } from './ledger-client.js';
import type { BenchOptions } from './options.js';
import { BenchError, cpuSeconds, rssBytes, scheduleSeconds, sleep, startSubscriberProcess, type ServiceProcess } from './processes.js';
import type { EventsPlacement, EventsResult } from './report.js';
import { submitSteadily, type Sender } from './steady-submitter.js';

export type EventsContext = {
  options: BenchOptions;
  secret: string;
  metrics_token: string;
  admin: string;
  /** A service on a new, empty ledger, or (with `database_url`) another instance on the same one. */
  newLedger(name: string): Promise<string>;
  startService(database_url: string, overrides: Record<string, string>): Promise<ServiceProcess>;
  log(message: string): void;
};

/** Transfers are spread over this many funded senders (each with its own token). */
const SENDERS = 100;
const FUNDING_AMOUNT = '1000000';
/** Submissions awaiting their answer at the most (the submitter is open loop up to this). */
const IN_FLIGHT_MAX = 64;
const CONNECT_CONCURRENCY = 50;
const CONNECT_TIMEOUT_MS = 30_000;
const CATCH_UP_TIMEOUT_MS = 120_000;
const SAMPLE_INTERVAL_MS = 200;
const SCRAPE_INTERVAL_MS = 1000;
/** Streams allowed on an instance: the subscribers, and room for the benchmark's own probes. */
const STREAMS_HEADROOM = 100;

export async function eventsScenario(context: EventsContext): Promise<EventsResult> {
  const { options } = context;
  const database_url = await context.newLedger('events');
  const env = { EVENTS_STREAMS_MAX: String(options.events_subscribers + STREAMS_HEADROOM) };
  const writer = await context.startService(database_url, env);
  const readers: ServiceProcess[] = [];
  try {
    const senders = await fundSenders(context, writer);
    const placements: EventsPlacement[] = [];
    placements.push(await measurePlacement(context, writer, writer, senders, 'same_instance', 'on the instance'));
    if (options.database_url !== undefined) {
      readers.push(await context.startService(database_url, env));
      placements.push(await measurePlacement(context, writer, readers[0] as ServiceProcess, senders, 'across_instances', 'across instances'));
    }
    return { subscribers: options.events_subscribers, rate_per_s: options.events_rate_per_s, duration_s: options.events_duration_s, warmup_s: options.warmup_s, placements };
  } finally {
    for (const reader of readers) await reader.stop();
    await writer.stop();
  }
}

async function fundSenders(context: EventsContext, writer: ServiceProcess): Promise<Sender[]> {
  const users = Array.from({ length: SENDERS }, (_, index) => `events-sender-${index}`);
  context.log(`events: funding ${users.length} senders`);
  const mint = (index: number): TransferBody => ({ from: 'bench-treasury', to: users[index] as string, amount: FUNDING_AMOUNT, token: 'TAB', type: 'mint' });
  await loadTransactions(writer.url, context.admin, users.length, mint, { batch_size: 1000, concurrency: 1, sample_every: Number.MAX_SAFE_INTEGER });
  await waitUntilSealed(writer.url, context.metrics_token);
  return Promise.all(users.map(async (user) => ({ user, token: await signToken(context.secret, user) })));
}

async function eventHead(service: ServiceProcess, metrics_token: string): Promise<number> {
  return metricValue(await scrapeMetrics(service.url, metrics_token), 'tabula_events_head_sequence');
}

/** Waits until `reader` has loaded every event `writer` has (another instance hears of them by LISTEN/NOTIFY). */
async function sameHead(writer: ServiceProcess, reader: ServiceProcess, metrics_token: string): Promise<number> {
  const head = await eventHead(writer, metrics_token);
  const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
  while ((await eventHead(reader, metrics_token)) < head) {
    if (Date.now() > deadline) throw new BenchError(`the subscribers' instance did not reach event ${head} within ${CATCH_UP_TIMEOUT_MS / 1000} s`);
    await sleep(50);
  }
  return head;
}

/** Subscribers on `reader`, submissions to `writer`: one measured run. */
async function measurePlacement(
  context: EventsContext, writer: ServiceProcess, reader: ServiceProcess, senders: Sender[], name: EventsPlacement['name'], title: string,
): Promise<EventsPlacement> {
  const { options } = context;
  const start_head = await sameHead(writer, reader, context.metrics_token);
  const tokens = await Promise.all(Array.from({ length: options.events_subscribers }, (_, index) => signToken(context.secret, `events-watcher-${index}`)));
  const rss_before_bytes = rssBytes(reader.pid);
  const load_average = os.loadavg()[0] as number;
  context.log(`events, ${title}: ${options.events_subscribers} subscribers, ${options.events_rate_per_s} submissions/s for ${options.events_duration_s} s (load average ${load_average.toFixed(1)})`);
  const subscribers = startSubscriberProcess(options.root);
  try {
    const opened = await subscribers.send({ op: 'open', url: reader.url, after: start_head, tokens, connect_concurrency: CONNECT_CONCURRENCY, timeout_ms: CONNECT_TIMEOUT_MS });
    if (opened.op !== 'opened') throw new BenchError(`the subscriber process answered ${opened.op} to open`);
    if (opened.opened < tokens.length) context.log(`  only ${opened.opened} of ${tokens.length} streams opened: ${opened.failures.join('; ')}`);
    const sampler = sampleProcess(reader, context.metrics_token);
    const started_ms = monotonicMs();
    const submitted = await submitSteadily({
      url: writer.url, senders, rate_per_s: options.events_rate_per_s, warmup_s: options.warmup_s, duration_s: options.events_duration_s, in_flight_max: IN_FLIGHT_MAX,
    });
    await waitUntilSealed(writer.url, context.metrics_token);
    const end_head = await sameHead(writer, reader, context.metrics_token);
    const caught_up = await subscribers.send({ op: 'wait', head: end_head, timeout_ms: CATCH_UP_TIMEOUT_MS });
    const elapsed_s = (monotonicMs() - started_ms) / 1000;
    const sampled = await sampler.stop();
    if (caught_up.op !== 'caught_up') throw new BenchError(`the subscriber process answered ${caught_up.op} to wait`);
    const finished = await subscribers.send({ op: 'finish', acknowledgements: submitted.measured });
    if (finished.op !== 'finished') throw new BenchError(`the subscriber process answered ${finished.op} to finish`);
    const streams = finished.report;
    const errors = submitted.errors + (streams.subscribers - streams.complete) + streams.out_of_sequence + streams.missing_accepted + streams.missing_confirmed;
    const placement: EventsPlacement = {
      name, title, load_average, events: end_head - start_head, elapsed_s,
      submitter: { submitted: submitted.submitted, acknowledged: submitted.acknowledged, measured: submitted.measured.length, errors: submitted.errors, error_samples: submitted.error_samples, late_starts: submitted.late_starts, latency_ms: submitted.latency_ms },
      streams,
      delivered_events_per_s: streams.received / elapsed_s,
      service: { rss_before_bytes, ...sampled },
      errors,
    };
    context.log(`  lag p50 ${placement.streams.lag_from_ack_ms.p50.toFixed(1)} ms, p99 ${placement.streams.lag_from_ack_ms.p99.toFixed(1)} ms over ${placement.streams.lag_from_ack_ms.count} deliveries; ` +
      `${Math.round(placement.delivered_events_per_s).toLocaleString('en-US')} events/s delivered; RSS ${mib(rss_before_bytes)} → ${mib(sampled.rss_peak_bytes)} MiB ` +
      `(heap ≤ ${mib(sampled.heap_used_peak_bytes)}, external ≤ ${mib(sampled.external_peak_bytes)}); service CPU ${sampled.cpu_percent.toFixed(0)} %, waiting for a CPU ${sampled.cpu_wait_percent.toFixed(0)} %; ${errors} errors`);
    if (errors > 0) context.log(`  errors: ${JSON.stringify({ submitter: submitted.error_samples, ended: streams.end_reasons, opened: streams.opened, complete: streams.complete, caught_up: caught_up.reached })}`);
    return placement;
  } finally {
    subscribers.stop();
  }
}

/**
 * Samples a service's resident memory (/proc) until stopped, and its heap and external memory (its
 * /metrics, less often); returns the peaks and the CPU it used meanwhile.
 */
function sampleProcess(service: ServiceProcess, metrics_token: string) {
  const peaks = { rss_peak_bytes: rssBytes(service.pid), heap_used_peak_bytes: 0, external_peak_bytes: 0 };
  const cpu_start_s = cpuSeconds(service.pid);
  const schedule_start = scheduleSeconds(service.pid);
  const started_ms = monotonicMs();
  const timer = setInterval(() => { peaks.rss_peak_bytes = Math.max(peaks.rss_peak_bytes, rssBytes(service.pid)); }, SAMPLE_INTERVAL_MS);
  let scraping = true;
  const scrapes = (async () => {
    while (scraping) {
      const text = await scrapeMetrics(service.url, metrics_token).catch(() => '');
      peaks.heap_used_peak_bytes = Math.max(peaks.heap_used_peak_bytes, metricValue(text, 'nodejs_heap_size_used_bytes'));
      peaks.external_peak_bytes = Math.max(peaks.external_peak_bytes, metricValue(text, 'nodejs_external_memory_bytes'));
      await sleep(SCRAPE_INTERVAL_MS);
    }
  })();
  return {
    async stop() {
      clearInterval(timer);
      scraping = false;
      await scrapes;
      peaks.rss_peak_bytes = Math.max(peaks.rss_peak_bytes, rssBytes(service.pid));
      const elapsed_ms = Math.max(1, monotonicMs() - started_ms);
      const cpu_percent = ((cpuSeconds(service.pid) - cpu_start_s) * 1000 / elapsed_ms) * 100;
      const schedule_end = scheduleSeconds(service.pid);
      // Runnable but not running: the share of the time its threads waited for a CPU another process held.
      const cpu_wait_percent = ((schedule_end.waiting_s - schedule_start.waiting_s) * 1000 / elapsed_ms) * 100;
      return { ...peaks, cpu_percent, cpu_wait_percent };
    },
  };
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}
