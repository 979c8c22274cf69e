/**
 * The soak run (`npm run soak -- --minutes 10`): the built service under steady mixed load (transfers
 * between funded accounts, and reads of balances, transactions, blocks and stats) for as long as asked,
 * sampled every 10 s — RSS, heap, event-loop delay, open handles and descriptors, response times —
 * then charted and checked for a growth trend. `--overload-seconds N` (default 60; 0: skip) then offers
 * five times the submission rate it measured as sustainable, and checks that memory stays bounded and
 * the excess is refused with 503. `--flood-seconds N` (default 20; 0: skip) measures well-behaved reads
 * alone and then while another loopback address (127.0.0.2) floods the service with forged tokens.
 * Opt-in: not part of `npm test` or `npm run bench`.
 *
 * Options: --minutes N (default 10), --database-url postgres://… (default: a new SQLite file),
 * --overload-seconds N, --out DIR (default bench/results; files latest.soak.{json,md,svg}).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freshDatabase, type FreshDatabase } from './databases.js';
import { getJson, loadTransactions, metricValue, scrapeMetrics, signToken, waitUntilSealed, type TransferBody } from './ledger-client.js';
import type { LoadResult, PooledRequest } from './load-types.js';
import { BenchError, rssBytes, startLoadGenerator, startService, type LoadGenerator, type ServiceProcess } from './processes.js';
import { soakChart, soakMarkdown, TRENDED, trendOf, type FloodResult, type OverloadResult, type SoakResults, type SoakSample } from './soak-report.js';

const SLICE_S = 10;
const MINUTES_MAX = 24 * 60;
const SENDERS = 200;
const STEADY_CONNECTIONS = 16;
const SUSTAINABLE_CONNECTIONS = 64;
const OVERLOAD_CONNECTIONS = 512;
const OVERLOAD_FACTOR = 5;
const FUNDING_AMOUNT = '1000000';
const FLOOD_CONNECTIONS = 64;
/** Another loopback address, so the flood has a per-address budget of its own. */
const FLOOD_ADDRESS = '127.0.0.2';
const MIB = 1024 * 1024;

type SoakOptions = { root: string; minutes: number; database_url: string | undefined; overload_s: number; flood_s: number; out_dir: string };

function readOptions(argv: string[]): SoakOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: 'string', default: '10' },
      'database-url': { type: 'string' },
      'overload-seconds': { type: 'string', default: '60' },
      'flood-seconds': { type: 'string', default: '20' },
      out: { type: 'string', default: path.join('bench', 'results') },
    },
  });
  const minutes = Number(values.minutes);
  const overload_s = Number(values['overload-seconds']);
  if (!Number.isFinite(minutes) || minutes <= 0 || minutes > MINUTES_MAX) throw new BenchError(`--minutes must be a number from 0 to ${MINUTES_MAX}`);
  if (!Number.isInteger(overload_s) || overload_s < 0 || overload_s > 3600) throw new BenchError('--overload-seconds must be a whole number from 0 to 3600');
  const flood_s = Number(values['flood-seconds']);
  if (!Number.isInteger(flood_s) || flood_s < 0 || flood_s > 3600) throw new BenchError('--flood-seconds must be a whole number from 0 to 3600');
  return { root: process.cwd(), minutes, database_url: values['database-url'], overload_s, flood_s, out_dir: values.out };
}

async function main(): Promise<void> {
  const options = readOptions(process.argv.slice(2));
  if (!fs.existsSync(path.join(options.root, 'dist', 'main.js'))) throw new BenchError('dist/main.js is missing: run `npm run build` first (`npm run soak` does)');
  const secret = randomBytes(32).toString('hex');
  const metrics_token = randomBytes(16).toString('hex');
  const temp_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-soak-'));
  let database: FreshDatabase | null = null;
  const database_url = options.database_url === undefined
    ? `sqlite:${path.join(temp_dir, 'soak.db')}`
    : (database = await freshDatabase(options.database_url, 'soak')).url;
  const service = await startService(options.root, {
    NODE_ENV: 'production', DATABASE_URL: database_url, JWT_SECRET: secret, METRICS_TOKEN: metrics_token, RATE_LIMIT_MAX: '10000000', LOG_LEVEL: 'warn',
    CHECKPOINT_SIGNING_KEY: randomBytes(32).toString('base64'),
  });
  const load = startLoadGenerator(options.root);
  try {
    const results = await soak(options, service, load, secret, metrics_token, options.database_url === undefined ? 'SQLite' : 'PostgreSQL');
    writeResults(options.out_dir, results);
    process.stdout.write(soakMarkdown(results));
    const growing = results.trends.filter((trend) => trend.grows);
    if (growing.length > 0 || results.lost > 0) {
      throw new BenchError(`the soak run found ${growing.map((trend) => trend.metric).join(', ') || 'no growth'}${results.lost > 0 ? ` and ${results.lost} lost submissions` : ''}`);
    }
  } finally {
    load.stop();
    await service.stop();
    await database?.drop();
    fs.rmSync(temp_dir, { recursive: true, force: true });
  }
}

async function soak(options: SoakOptions, service: ServiceProcess, load: LoadGenerator, secret: string, metrics_token: string, store: string): Promise<SoakResults> {
  const started_at = new Date().toISOString();
  const load_average = os.loadavg().map((value) => value.toFixed(2)).join(' ');
  const admin = await signToken(secret, 'soak-treasury', true);
  const senders = Array.from({ length: SENDERS }, (_, index) => `soak-${index}`);
  const funded = await loadTransactions(service.url, admin, senders.length, (index) => mint(senders[index] as string), { batch_size: 100, concurrency: 2, sample_every: 1 });
  await waitUntilSealed(service.url, metrics_token);
  const tokens = await Promise.all(senders.map((sender) => signToken(secret, sender)));
  const pool = mixedPool(senders, tokens, funded.sampled_hashes);
  const samples: SoakSample[] = [];
  let acknowledged = 0;
  const slices = Math.ceil((options.minutes * 60) / SLICE_S);
  for (let slice = 1; slice <= slices; slice += 1) {
    const result = await load.run({ url: service.url, connections: STEADY_CONNECTIONS, duration_s: SLICE_S, warmup_s: 0, requests: pool, count_batch_items: false });
    acknowledged += result.acknowledged;
    samples.push(await sample(service, metrics_token, slice * SLICE_S, result));
    log(`${slice * SLICE_S} s: ${samples.at(-1)?.rss_mib.toFixed(1)} MiB, ${result.requests_per_s.toFixed(0)} req/s, p99 ${result.latency_ms.p99.toFixed(1)} ms`);
  }
  const flood = options.flood_s === 0 ? null : await floodRun(options.flood_s, service, load, senders, tokens);
  const overload = options.overload_s === 0 ? null : await overloadRun(options.overload_s, service, load, senders, tokens);
  acknowledged += overload?.accepted ?? 0;
  await waitUntilSealed(service.url, metrics_token);
  const stats = await getJson<{ total_transactions: number }>(`${service.url}/api/stats`, admin);
  const lost = Math.max(0, funded.accepted + acknowledged - stats.total_transactions);
  return { started_at, minutes: options.minutes, store, load_average, samples, trends: TRENDED.map((metric) => trendOf(samples, metric)), acknowledged, lost, overload, flood };
}

/** Three reads to one transfer, spread over the funded accounts; each transfer moves one base unit's worth. */
function mixedPool(senders: readonly string[], tokens: readonly string[], hashes: readonly string[]): PooledRequest[] {
  const pool: PooledRequest[] = [];
  senders.forEach((sender, index) => {
    const token = tokens[index] as string;
    const receiver = senders[(index + 1) % senders.length] as string;
    pool.push(submit(token, { from: sender, to: receiver, amount: '0.000001', token: 'TAB', type: 'transfer' }));
    pool.push(get(token, `/api/balance/${sender}`));
    pool.push(get(token, index % 2 === 0 ? `/api/transactions/${hashes[index % hashes.length]}` : '/api/blocks?limit=20'));
    pool.push(get(token, index % 5 === 0 ? '/api/stats' : `/api/accounts/${sender}/transactions?limit=20`));
  });
  return pool;
}

async function sample(service: ServiceProcess, metrics_token: string, elapsed_s: number, result: LoadResult): Promise<SoakSample> {
  const metrics = await scrapeMetrics(service.url, metrics_token);
  return {
    elapsed_s,
    rss_mib: rssBytes(service.pid) / MIB,
    heap_used_mib: metricValue(metrics, 'nodejs_heap_size_used_bytes') / MIB,
    event_loop_delay_p99_ms: metricValue(metrics, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    active_handles: metricValue(metrics, 'nodejs_active_handles_total'),
    open_fds: metricValue(metrics, 'process_open_fds'),
    pending_transactions: metricValue(metrics, 'tabula_pending_transactions'),
    requests_per_s: result.requests_per_s,
    latency_p50_ms: result.latency_ms.p50,
    latency_p99_ms: result.latency_ms.p99,
    errors: result.errors,
  };
}

/** Measures what the service sustains (submissions only, closed loop), then offers five times that. */
async function overloadRun(duration_s: number, service: ServiceProcess, load: LoadGenerator, senders: readonly string[], tokens: readonly string[]): Promise<OverloadResult> {
  const pool = senders.map((sender, index) =>
    submit(tokens[index] as string, { from: sender, to: senders[(index + 7) % senders.length] as string, amount: '0.000001', token: 'TAB', type: 'transfer' }));
  const sustainable = await load.run({ url: service.url, connections: SUSTAINABLE_CONNECTIONS, duration_s: SLICE_S, warmup_s: 2, requests: pool, count_batch_items: false });
  const offered_per_s = sustainable.requests_per_s * OVERLOAD_FACTOR;
  const rss_mib_before = rssBytes(service.pid) / MIB;
  let rss_mib_max = rss_mib_before;
  const watch = setInterval(() => { rss_mib_max = Math.max(rss_mib_max, rssBytes(service.pid) / MIB); }, 250);
  try {
    const result = await load.run({
      url: service.url, connections: OVERLOAD_CONNECTIONS, duration_s, warmup_s: 0, requests: pool, count_batch_items: false, rate_per_s: offered_per_s,
    });
    const refused_503 = result.status_counts[503] ?? 0;
    return {
      sustainable_per_s: sustainable.requests_per_s, offered_per_s, duration_s, accepted: result.acknowledged + sustainable.acknowledged,
      refused_503, other_errors: result.errors - refused_503, rss_mib_before, rss_mib_max, latency_p99_ms: result.latency_ms.p99,
    };
  } finally {
    clearInterval(watch);
  }
}

/** Reads only (no writes to compete with), alone and then under a flood of forged tokens from 127.0.0.2. */
async function floodRun(duration_s: number, service: ServiceProcess, load: LoadGenerator, senders: readonly string[], tokens: readonly string[]): Promise<FloodResult> {
  const reads = senders.map((sender, index) => get(tokens[index] as string, `/api/balance/${sender}`));
  const spec = { url: service.url, connections: STEADY_CONNECTIONS, duration_s, warmup_s: 2, requests: reads, count_batch_items: false };
  const idle = await load.run(spec);
  const forged = `Bearer ${await signToken(randomBytes(32).toString('hex'), 'mallory')}`;
  const flood = startFlood(service.url, forged);
  try {
    const flooded = await load.run(spec);
    return {
      duration_s, idle_p99_ms: idle.latency_ms.p99, flooded_p99_ms: flooded.latency_ms.p99, idle_per_s: idle.requests_per_s,
      flooded_per_s: flooded.requests_per_s, forged_sent: flood.sent, forged_refused_early: flood.refused_early,
    };
  } finally {
    await flood.stop();
  }
}

/** FLOOD_CONNECTIONS loops sending GET /api/stats with a forged token, from 127.0.0.2, as fast as answered. */
function startFlood(url: string, authorization: string): { readonly sent: number; readonly refused_early: number; stop(): Promise<void> } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: FLOOD_CONNECTIONS, localAddress: FLOOD_ADDRESS });
  const counts = { sent: 0, refused_early: 0 };
  let running = true;
  const loop = async () => {
    while (running) {
      const status = await new Promise<number>((resolve) => {
        const request = http.get(`${url}/api/stats`, { agent, headers: { authorization } }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        request.on('error', () => resolve(0));
      });
      counts.sent += 1;
      if (status === 429) counts.refused_early += 1;
    }
  };
  const loops = Array.from({ length: FLOOD_CONNECTIONS }, loop);
  return {
    get sent() { return counts.sent; },
    get refused_early() { return counts.refused_early; },
    async stop() {
      running = false;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

function mint(user: string): TransferBody {
  return { from: 'soak-treasury', to: user, amount: FUNDING_AMOUNT, token: 'TAB', type: 'mint' };
}

function submit(token: string, body: TransferBody): PooledRequest {
  return { method: 'POST', path: '/api/transactions/submit', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

function get(token: string, request_path: string): PooledRequest {
  return { method: 'GET', path: request_path, headers: { authorization: `Bearer ${token}` } };
}

function writeResults(out_dir: string, results: SoakResults): void {
  fs.mkdirSync(out_dir, { recursive: true });
  fs.writeFileSync(path.join(out_dir, 'latest.soak.json'), `${JSON.stringify(results, null, 2)}\n`);
  fs.writeFileSync(path.join(out_dir, 'latest.soak.md'), soakMarkdown(results));
  fs.writeFileSync(path.join(out_dir, 'latest.soak.svg'), soakChart(results));
  log(`results in ${path.join(out_dir, 'latest.soak.{json,md,svg}')}`);
}

function log(message: string): void {
  process.stderr.write(`[soak] ${message}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof BenchError ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
