/**
 * `npm run bench`: builds the service if needed, starts it (`node dist/main.js`, SQLite in a temp
 * folder, or PostgreSQL with BENCH_DATABASE_URL) and a bare Fastify ceiling, loads both from a
 * separate autocannon process over loopback, and reports every scenario against the ceiling and the
 * targets; the events scenario holds SSE streams from a subscriber process of its own
 * (bench/events-scenario.ts). `--scenario` picks parts of the run. Writes
 * bench/results/<timestamp>.json (and latest.json), draws the chart, prints the table.
 * Options: see bench/options.ts.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { drawChart } from './chart.js';
import { PENDING_MAX_DEFAULT, PENDING_MAX_LIMIT } from '../src/backpressure/pending-backlog.js';
import { databaseBytes, freshDatabase, settleDatabase, type FreshDatabase } from './databases.js';
import { eventsScenario } from './events-scenario.js';
import { DEFAULT_DATABASE_URL, describeSwapSealing, measureSwapSealing } from './swap-sealing.js';
import { getJson, loadTransactions, metricValue, sampleHeapPeaks, scrapeMetrics, signToken, waitUntilSealed, waitUntilSealedTotal, type Stats, type TransferBody } from './ledger-client.js';
import type { LoadSpec, PooledRequest } from './load-types.js';
import { BENCH_PARTS, BENCH_USAGE, formatSize, readOptions, type BenchOptions } from './options.js';
import { batchPool, mint, readPools as readPoolsOf, SAMPLE_POOL_SIZE, submitHotPool, submitKeyedPool, submitManyPool, SUBMIT_AMOUNT, type ReadPool } from './scenario-requests.js';
import { BenchError, profileFlags, sleep, startBareServer, startLoadGenerator, startService, type LoadGenerator, type ServiceProcess } from './processes.js';
import { eventsMarkdown, judgeTargets, markdownReport, medianOfRuns, medianReadPoint, printReport, type BenchResults, type MainRun, type ReadPoint, type ScaleLevel, type ScenarioResult } from './report.js';

/** Transactions per block of the scale curve's ledger: 10k transactions make at least 40 blocks, two pages. */
const SCALE_BLOCK_TXS_MAX = 250;
/**
 * Past 1M transactions (the opt-in 10M point) the scale ledger's blocks hold up to 10,000: in blocks of
 * 250 the sealer makes about 4,000 transactions a second on 2 cores (its cost per block, not per
 * transaction), and 9M more would take 40 minutes of sealing.
 */
const SCALE_LARGE_BLOCKS_PAST = 1_000_000;
const SCALE_LARGE_BLOCK_TXS_MAX = 10_000;
const LOAD_BATCH_SIZE = 1000;
const LOAD_CONCURRENCY = 4;
/** How long the burst runs whose middle a profiled run's durability check kills the service in. */
const DURABILITY_BURST_S = 4;

type Run = {
  options: BenchOptions;
  secret: string;
  metrics_token: string;
  admin: string;
  bare_url: string;
  load: LoadGenerator;
  temp_dir: string;
  databases: FreshDatabase[];
  /** Base64 of a 32-byte Ed25519 seed: CHECKPOINT_SIGNING_KEY of every service this run starts. */
  checkpoint_key: string;
};

async function main(): Promise<void> {
  const options = readOptions();
  if (options.help) {
    process.stdout.write(BENCH_USAGE);
    return;
  }
  buildIfNeeded(options.root);
  const started_at = new Date();
  const temp_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-bench-'));
  const secret = randomBytes(32).toString('hex');
  const run: Run = {
    options, secret, metrics_token: randomBytes(16).toString('hex'), admin: await signToken(secret, 'bench-treasury', true),
    bare_url: '', load: startLoadGenerator(options.root), temp_dir, databases: [], checkpoint_key: randomBytes(32).toString('base64'),
  };
  const bare = await startBareServer(options.root);
  run.bare_url = bare.url;
  try {
    if (LOAD_AVERAGE_AT_START > os.cpus().length) log(`warning: the load average is ${LOAD_AVERAGE_AT_START.toFixed(1)} on ${os.cpus().length} cores: other work will distort the numbers`);
    log(`tabula benchmark: ${options.smoke ? 'smoke run' : 'full run'}, store ${options.database_url === undefined ? 'SQLite' : 'PostgreSQL'}, ${options.parts.join(', ')}, ${options.duration_s} s per scenario, ${options.connections} connections`);
    const main_run = options.parts.includes('main') ? medianOfRuns(await repeatMainScenarios(run)) : { scenarios: [], durability: null, sealer: null, main_ledger: null };
    const events = options.parts.includes('events') ? await eventsScenario(eventsContext(run)) : null;
    const scale = options.scale_levels.length === 0 || !options.parts.includes('scale') ? null : await scaleCurve(run);
    const swaps = options.parts.includes('swaps') ? await swapSealing(run) : null;
    const results: BenchResults = {
      started_at: started_at.toISOString(),
      finished_at: new Date().toISOString(),
      smoke: options.smoke,
      store: options.database_url === undefined ? 'sqlite' : 'postgres',
      settings: {
        duration_s: options.duration_s, warmup_s: options.warmup_s, connections: options.connections, batch_connections: options.batch_connections,
        batch_size: options.batch_size, senders: options.senders, sealer_transactions: options.sealer_transactions, runs: options.runs,
        scale_levels: options.scale_levels, scale_users: options.scale_users, scale_duration_s: options.scale_duration_s,
        events_subscribers: options.events_subscribers, events_rate_per_s: options.events_rate_per_s, events_duration_s: options.events_duration_s,
        swap_transactions: options.swap_transactions, swap_accounts: options.swap_accounts, swap_block_txs_max: options.swap_block_txs_max,
      },
      parts: options.parts,
      machine: describeMachine(temp_dir),
      ...main_run,
      scale,
      events,
      swaps,
      targets: [],
    };
    results.targets = judgeTargets(results);
    writeResults(options, results);
    printReport(results);
    if (results.scenarios.some((scenario) => scenario.service.errors > 0 || scenario.service.requests === 0)) process.exitCode = 1;
    if (events !== null && events.placements.some((placement) => placement.errors > 0 || placement.streams.lag_from_ack_ms.count === 0)) process.exitCode = 1;
  } finally {
    bare.stop();
    run.load.stop();
    for (const database of run.databases) await database.drop().catch(() => undefined);
    fs.rmSync(temp_dir, { recursive: true, force: true });
  }
}

function buildIfNeeded(root: string): void {
  const main_file = path.join(root, 'dist', 'main.js');
  const built_ms = fs.existsSync(main_file) ? fs.statSync(main_file).mtimeMs : 0;
  const newest_source_ms = Math.max(...listFiles(path.join(root, 'src')).map((file) => fs.statSync(file).mtimeMs));
  if (built_ms >= newest_source_ms) return;
  log('building the service (npm run build)');
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
}

function listFiles(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(path.join(directory, entry.name)) : [path.join(directory, entry.name)]);
}

/** A service on a new, empty ledger (a new SQLite file, or a new PostgreSQL database). */
async function newLedger(run: Run, name: string): Promise<string> {
  if (run.options.database_url === undefined) return `sqlite:${path.join(run.temp_dir, `${name}.db`)}`;
  const database = await freshDatabase(run.options.database_url, name);
  run.databases.push(database);
  return database.url;
}

function serviceEnv(run: Run, database_url: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'production',
    DATABASE_URL: database_url,
    JWT_SECRET: run.secret,
    METRICS_TOKEN: run.metrics_token,
    RATE_LIMIT_MAX: '10000000',
    // The throughput scenarios measure what is accepted (and the sealer preloads 200,000): no backlog
    // bound there. The sustained scenario runs with the default PENDING_MAX.
    PENDING_MAX: String(PENDING_MAX_LIMIT),
    // Production needs a key to sign checkpoints with: a fresh one per run.
    CHECKPOINT_SIGNING_KEY: run.checkpoint_key,
    LOG_LEVEL: 'warn',
    ...overrides,
  };
}

async function startOrExplain(run: Run, env: Record<string, string>): Promise<ServiceProcess> {
  try {
    return await startService(run.options.root, env, [...run.options.service_node_flags, ...profileFlags(run.options.profile_dir)]);
  } catch (error) {
    if (run.options.database_url !== undefined && error instanceof BenchError && /DATABASE_URL/.test(error.message)) {
      throw new BenchError(`this build of the service cannot use BENCH_DATABASE_URL (PostgreSQL); it says:\n${error.message}\nUnset BENCH_DATABASE_URL to benchmark SQLite.`);
    }
    throw error;
  }
}

function eventsContext(run: Run) {
  return {
    options: run.options, secret: run.secret, metrics_token: run.metrics_token, admin: run.admin, log,
    newLedger: (name: string) => newLedger(run, name),
    startService: (database_url: string, overrides: Record<string, string>) => startOrExplain(run, serviceEnv(run, database_url, overrides)),
  };
}

// ---------------------------------------------------------------------------------------------
// The main scenarios: submit, batch, durability, reads, sealer.

/** The main scenarios `--runs` times, each on a new ledger (their medians are taken by medianOfRuns). */
async function repeatMainScenarios(run: Run): Promise<MainRun[]> {
  const runs: MainRun[] = [];
  for (let index = 0; index < run.options.runs; index += 1) {
    if (run.options.runs > 1) log(`main scenarios: run ${index + 1} of ${run.options.runs}`);
    const started_at = new Date().toISOString();
    const load_average_at_start = os.loadavg()[0] ?? 0;
    runs.push({ started_at, load_average_at_start, ...await mainScenarios(run, `main_${index + 1}`) });
  }
  return runs;
}

async function mainScenarios(run: Run, ledger_name: string): Promise<Pick<BenchResults, 'scenarios' | 'durability' | 'sealer' | 'main_ledger'>> {
  const { options } = run;
  const database_url = await newLedger(run, ledger_name);
  const env = serviceEnv(run, database_url);
  let service = await startOrExplain(run, env);
  const senders = Array.from({ length: options.senders }, (_, index) => `sender-${index}`);
  const sender_tokens = await Promise.all(senders.map((sender) => signToken(run.secret, sender)));
  log(`seeding: funding ${senders.length} senders and a hot sender`);
  const funded = [...senders, 'hot-sender'];
  const seed = await loadTransactions(service.url, run.admin, funded.length, (index) => mint(funded[index] as string), loadOptions(1));
  await waitUntilSealed(service.url, run.metrics_token);
  let acknowledged = seed.accepted;

  const scenarios: ScenarioResult[] = [];
  const submit_many = submitManyPool(senders, sender_tokens);
  scenarios.push(await measure(run, service, 'submit_many', `submit, ${senders.length} senders`, 'submit', submit_many, options.connections));
  const submit_hot = submitHotPool(await signToken(run.secret, 'hot-sender'), senders);
  scenarios.push(await measure(run, service, 'submit_hot', 'submit, one hot sender', 'submit', submit_hot, options.connections));
  const submit_keyed = submitKeyedPool(senders, sender_tokens);
  scenarios.push(await measure(run, service, 'submit_keyed', `submit, ${senders.length} senders, a new Idempotency-Key each`, 'submit', submit_keyed, options.connections));
  const batches = batchPool(run.admin, senders, options.batch_size);
  scenarios.push(await measure(run, service, 'batch', `batch of ${options.batch_size}`, 'batch', batches, options.batch_connections));
  acknowledged += scenarios.reduce((sum, scenario) => sum + scenario.service.acknowledged, 0);

  if (options.profile_dir !== undefined) {
    // --cpu-prof writes a profile only when the process exits by itself: kill -9 would lose the submit
    // path's profile. So a profiled run stops the service cleanly here, starts it again, and kills that
    // one during a short burst of submissions instead (whose acknowledgements must survive too).
    log('profiling: SIGTERM to keep the submit profile; durability is checked on a new start, killed during a burst');
    await service.stop();
    service = await startOrExplain(run, env);
    const burst = run.load.run({ url: service.url, connections: options.connections, duration_s: DURABILITY_BURST_S, warmup_s: 0, requests: submit_many, count_batch_items: false });
    await sleep((DURABILITY_BURST_S * 1000) / 2);
    await service.kill();
    acknowledged += (await burst).acknowledged;
  } else {
    log('durability: kill -9 after the submit scenarios, restart, count what was stored');
    await service.kill();
  }
  service = await startOrExplain(run, env);
  await waitUntilSealed(service.url, run.metrics_token);
  const after_kill = await getJson<Stats>(`${service.url}/api/stats`, run.admin);
  const durability = { acknowledged, found_after_kill: after_kill.total_transactions, lost: Math.max(0, acknowledged - after_kill.total_transactions) };
  log(`  acknowledged ${acknowledged}, found ${after_kill.total_transactions} after kill -9: ${durability.lost} lost`);

  const reads = await readPools(run, service, senders, seed.sampled_hashes);
  for (const read of reads) scenarios.push(await measure(run, service, read.name, read.title, 'read', read.pool, options.connections));
  const main_ledger = { transactions: after_kill.total_transactions, blocks: after_kill.latest_block_number + 1, users: after_kill.total_users };
  await service.stop();

  const sealer = await measureSealer(run, database_url, senders);
  return { scenarios, durability, sealer, main_ledger };
}

function loadOptions(sample_every: number) {
  return { batch_size: LOAD_BATCH_SIZE, concurrency: LOAD_CONCURRENCY, sample_every };
}

/** The read scenarios (bench/scenario-requests.ts) on this ledger, from two readers. */
async function readPools(run: Run, service: ServiceProcess, users: readonly string[], hashes: readonly string[]): Promise<ReadPool[]> {
  const readers = [await signToken(run.secret, 'bench-reader'), await signToken(run.secret, 'bench-reader-2')];
  const stats = await getJson<Stats>(`${service.url}/api/stats`, readers[0] as string);
  return readPoolsOf(readers, users, hashes, stats.latest_block_number + 1);
}

/** Loads the service with `pool`, then the bare route with the same requests and same-sized answers. */
async function measure(
  run: Run, service: ServiceProcess, name: string, title: string, kind: ScenarioResult['kind'], pool: PooledRequest[], connections: number,
): Promise<ScenarioResult> {
  const { options } = run;
  const sample = pool[0] as PooledRequest;
  const probe_headers = sample.new_idempotency_key === true ? { ...sample.headers, 'idempotency-key': randomUUID() } : sample.headers;
  const probe = await fetch(`${service.url}${sample.path}`, { method: sample.method, headers: probe_headers, ...(sample.body === undefined ? {} : { body: sample.body }) });
  const probe_text = await probe.text();
  const response_bytes = Buffer.byteLength(probe_text);
  // The probe's submissions are acknowledged too: they count towards what must survive kill -9.
  const probe_acknowledged = kind === 'batch' ? (JSON.parse(probe_text) as { accepted: number }).accepted : probe.status === 202 ? 1 : 0;
  const spec = (url: string, requests: PooledRequest[]): LoadSpec => ({
    url, connections, duration_s: options.duration_s, warmup_s: options.warmup_s, requests, count_batch_items: kind === 'batch' && url === service.url,
  });
  const load_average = os.loadavg()[0] as number;
  log(`${title}: ${connections} connections, ${options.duration_s} s (load average ${load_average.toFixed(1)})`);
  const measured = await run.load.run(spec(service.url, pool));
  const bare_pool = pool.map((request) => ({ ...request, path: `/bare/${probe.status}/${response_bytes}` }));
  const bare = await run.load.run(spec(run.bare_url, bare_pool));
  const transactions_per_s = kind === 'batch' ? (measured.batch_items?.accepted ?? 0) / measured.duration_s : kind === 'submit' ? measured.requests_per_s : null;
  const result: ScenarioResult = {
    name, title, kind, connections, response_bytes, request_bytes: Buffer.byteLength(sample.body ?? ''),
    service: { ...measured, acknowledged: measured.acknowledged + probe_acknowledged }, load_average, bare, ratio: measured.requests_per_s / Math.max(1e-9, bare.requests_per_s), transactions_per_s,
  };
  log(`  ${fmt(measured.requests_per_s)} req/s (bare ${fmt(bare.requests_per_s)}, ${(result.ratio * 100).toFixed(0)} %), p50 ${measured.latency_ms.p50.toFixed(2)} ms, p99 ${measured.latency_ms.p99.toFixed(2)} ms, ${measured.errors} errors${transactions_per_s === null ? '' : `, ${fmt(transactions_per_s)} tx/s`}`);
  return result;
}

/**
 * Sealer throughput: preload pending transfers while the producer waits (a one-hour interval), kill
 * the service, restart it with a short interval and BLOCK_TXS_MAX=100000, and read from /metrics
 * how long the seals took (time spent sealing, not waiting) and how many transactions they sealed.
 */
async function measureSealer(run: Run, database_url: string, senders: readonly string[]): Promise<BenchResults['sealer']> {
  const { options } = run;
  log(`sealer: preloading ${formatSize(options.sealer_transactions)} pending transfers`);
  const base = serviceEnv(run, database_url, { BLOCK_TXS_MAX: '100000' });
  const waiting = await startOrExplain(run, { ...base, BLOCK_INTERVAL_MS: '3600000' });
  const make = (index: number): TransferBody => ({
    from: senders[index % senders.length] as string, to: senders[(index * 31 + 1) % senders.length] as string, amount: SUBMIT_AMOUNT, token: 'TAB', type: 'transfer',
  });
  await loadTransactions(waiting.url, run.admin, options.sealer_transactions, make, loadOptions(Number.MAX_SAFE_INTEGER));
  const pending = metricValue(await scrapeMetrics(waiting.url, run.metrics_token), 'tabula_pending_transactions');
  const sealed_before = (await getJson<Stats>(`${waiting.url}/api/stats`, run.admin)).total_transactions;
  await waiting.kill();
  const started_ms = performance.now();
  const sealing = await startOrExplain(run, { ...base, BLOCK_INTERVAL_MS: '10' });
  const text = await waitUntilSealedTotal(sealing.url, run.admin, run.metrics_token, sealed_before + pending);
  const wall_s = (performance.now() - started_ms) / 1000;
  await sealing.stop();
  const sealed = metricValue(text, 'tabula_transactions_sealed_total');
  const seal_s = metricValue(text, 'tabula_block_seal_duration_seconds_sum');
  const blocks = metricValue(text, 'tabula_block_seal_duration_seconds_count');
  const result = { pending, transactions: sealed, blocks, seal_s, transactions_per_s: sealed / Math.max(1e-9, seal_s), wall_s, wall_transactions_per_s: sealed / wall_s };
  log(`  sealed ${sealed} in ${blocks} blocks: ${fmt(result.transactions_per_s)} tx/s sealing (${fmt(result.wall_transactions_per_s)} tx/s from process start)`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Swap-heavy sealing (issue 16): the block producer in this process, on the run's store, sealing
// preloaded swaps and then as many preloaded transfers (bench/swap-sealing.ts).

async function swapSealing(run: Run): Promise<NonNullable<BenchResults['swaps']>> {
  const { options } = run;
  const kind = options.database_url === undefined ? 'sqlite' : 'postgres';
  log(`swaps: sealing ${formatSize(options.swap_transactions)} preloaded transfers, then as many swaps, ${kind}`);
  const result = await measureSwapSealing(kind, {
    transactions: options.swap_transactions, accounts: options.swap_accounts, block_txs_max: options.swap_block_txs_max,
    database_url: options.database_url ?? DEFAULT_DATABASE_URL,
  });
  log(`  ${describeSwapSealing(result)}`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// The scale curve: the read scenarios as one ledger grows.

async function scaleCurve(run: Run): Promise<BenchResults['scale']> {
  const { options } = run;
  const database_url = await newLedger(run, 'scale');
  // Short intervals and small blocks make many blocks: a deep blocks page is really deep, and even the
  // smallest level has more blocks than a page holds, so every level's blocks page answers the same 20 headers.
  // The loads are paced by the sealer: the default PENDING_MAX, and the loader waits out its 503s, so the
  // backlog (and the cost of counting it) stays bounded however large the level.
  const scaleEnv = (block_txs_max: number) => serviceEnv(run, database_url, { BLOCK_INTERVAL_MS: '20', BLOCK_TXS_MAX: String(block_txs_max), PENDING_MAX: String(PENDING_MAX_DEFAULT) });
  let block_txs_max = SCALE_BLOCK_TXS_MAX;
  let service = await startOrExplain(run, scaleEnv(block_txs_max));
  const levels: ScaleLevel[] = [];
  const sampled: string[] = [];
  let loaded = 0;
  let heap: ReturnType<typeof sampleHeapPeaks> | null = null;
  try {
    for (const level of options.scale_levels) {
      const count = level - loaded;
      if (level > SCALE_LARGE_BLOCKS_PAST && block_txs_max !== SCALE_LARGE_BLOCK_TXS_MAX) {
        log(`scale: restarting the service with blocks of up to ${formatSize(SCALE_LARGE_BLOCK_TXS_MAX)} transactions`);
        await service.stop();
        block_txs_max = SCALE_LARGE_BLOCK_TXS_MAX;
        service = await startOrExplain(run, scaleEnv(block_txs_max));
      }
      log(`scale: growing the ledger to ${formatSize(level)} transactions`);
      const started_ms = performance.now();
      heap = sampleHeapPeaks(service.url, run.metrics_token);
      // The mints to new users first, sealed before any transfer spends them: a transfer from an account
      // whose funding is still pending is not covered, and the failure budget (issue 15) refuses such
      // debits past 100 an hour.
      const mints_end = Math.min(level, Math.max(loaded, options.scale_users));
      const ranges = [[loaded, mints_end], [mints_end, level]] as const;
      for (const [first, end] of ranges) {
        if (end === first) continue;
        const answer = await loadTransactions(service.url, run.admin, end - first, (index) => scaleTransaction(first + index, options.scale_users),
          loadOptions(Math.max(1, Math.floor(count / SAMPLE_POOL_SIZE))));
        sampled.push(...answer.sampled_hashes);
        await waitUntilSealed(service.url, run.metrics_token);
      }
      loaded = level;
      const load_s = (performance.now() - started_ms) / 1000;
      const settle_s = await settleDatabase(database_url);
      const stats = await getJson<Stats>(`${service.url}/api/stats`, run.admin);
      const users = Array.from({ length: Math.min(level, options.scale_users) }, (_, index) => `user-${index}`);
      const pools = await readPools(run, service, users, sampled);
      const reads = await measureScaleReads(run, service, pools);
      const database_bytes = await databaseBytes(database_url);
      const heap_peaks = await heap.stop();
      heap = null;
      const entry: ScaleLevel = {
        transactions: stats.total_transactions, users: stats.total_users, blocks: stats.latest_block_number + 1, block_txs_max, load_s,
        load_transactions_per_s: count / load_s, peak_rss_bytes: service.peakRssBytes(), heap_peaks, database_bytes, settle_s, reads,
      };
      levels.push(entry);
      log(`  ${formatSize(level)}: ${entry.users} users, ${entry.blocks} blocks, loaded at ${fmt(entry.load_transactions_per_s)} tx/s, peak RSS ${(entry.peak_rss_bytes / 2 ** 20).toFixed(0)} MiB ` +
        `(V8 heap used ${(heap_peaks.heap_used_bytes / 2 ** 20).toFixed(0)} MiB, committed ${(heap_peaks.heap_total_bytes / 2 ** 20).toFixed(0)} MiB, external ${(heap_peaks.external_bytes / 2 ** 20).toFixed(0)} MiB at most), ` +
        `database ${(database_bytes / 2 ** 20).toFixed(0)} MiB (${Math.round(database_bytes / entry.transactions)} bytes a transaction), settled in ${settle_s.toFixed(1)} s; ` +
        Object.entries(reads).map(([name, read]) => `${name} p50 ${read.latency_ms.p50.toFixed(2)} ms`).join(', '));
    }
  } finally {
    // A level that failed leaves its sampler running: stop it, or it keeps the run's process alive.
    await heap?.stop();
    await service.stop();
  }
  return { levels };
}

/**
 * A level's reads, each measured `--runs` times in turn (every read once, then every read again), so
 * that a slow stretch of the machine falls on one round of each read rather than on every round of one:
 * each read is reported by its median round (by p50) with every round's p50 beside it.
 */
async function measureScaleReads(run: Run, service: ServiceProcess, pools: readonly ReadPool[]): Promise<ScaleLevel['reads']> {
  const { options } = run;
  const rounds = new Map<string, ReadPoint[]>(pools.map((read) => [read.name, []]));
  for (let round = 0; round < options.runs; round += 1) {
    for (const read of pools) {
      const result = await run.load.run({
        url: service.url, connections: options.connections, duration_s: options.scale_duration_s, warmup_s: options.warmup_s / 2, requests: read.pool, count_batch_items: false,
      });
      rounds.get(read.name)?.push({ requests_per_s: result.requests_per_s, latency_ms: result.latency_ms, errors: result.errors, requests: result.requests });
    }
  }
  const reads: ScaleLevel['reads'] = {};
  for (const [name, points] of rounds) reads[name] = medianReadPoint(points);
  return reads;
}

/** Mints to new users until there are `users` of them, then transfers between them. */
function scaleTransaction(index: number, users: number): TransferBody {
  if (index < users) return mint(`user-${index}`);
  const from = (index * 7919) % users;
  const to = (from + 1 + (index % (users - 1))) % users;
  return { from: `user-${from}`, to: `user-${to}`, amount: SUBMIT_AMOUNT, token: 'TAB', type: 'transfer' };
}

// ---------------------------------------------------------------------------------------------

function describeMachine(temp_dir: string): BenchResults['machine'] {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpu_model: cpus[0]?.model ?? 'unknown',
    memory_bytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    fsync_ms_p50: fsyncMilliseconds(temp_dir),
    load_average_at_start: LOAD_AVERAGE_AT_START,
  };
}

/** Median time of a 4 KiB write + fsync in the benchmark's temp folder: what one durable commit costs at least. */
function fsyncMilliseconds(directory: string): number {
  const file = path.join(directory, 'fsync-probe');
  const descriptor = fs.openSync(file, 'w');
  const block = Buffer.alloc(4096, 1);
  const times: number[] = [];
  try {
    for (let index = 0; index < 50; index += 1) {
      const started = performance.now();
      fs.writeSync(descriptor, block);
      fs.fsyncSync(descriptor);
      times.push(performance.now() - started);
    }
  } finally {
    fs.closeSync(descriptor);
    fs.rmSync(file, { force: true });
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

function writeResults(options: BenchOptions, results: BenchResults): void {
  fs.mkdirSync(options.results_dir, { recursive: true });
  const stamp = results.started_at.replace(/[:.]/g, '-');
  const json = `${JSON.stringify(results, null, 2)}\n`;
  const complete = options.parts.length === BENCH_PARTS.length;
  fs.writeFileSync(path.join(options.results_dir, `${stamp}.json`), json);
  const markdown = markdownReport(results);
  // Kept in git: latest.* is the last complete run of either store, latest.<store>.* the last complete run of
  // that store, latest.events.<store>.* the last run of the events scenario on that store (complete or not).
  if (complete) {
    for (const name of ['latest', `latest.${results.store}`]) {
      fs.writeFileSync(path.join(options.results_dir, `${name}.json`), json);
      fs.writeFileSync(path.join(options.results_dir, `${name}.md`), markdown);
    }
  } else {
    fs.writeFileSync(path.join(options.results_dir, `${stamp}.md`), markdown);
  }
  if (results.events !== null) {
    fs.writeFileSync(path.join(options.results_dir, `latest.events.${results.store}.json`), json);
    fs.writeFileSync(path.join(options.results_dir, `latest.events.${results.store}.md`), eventsMarkdown(results));
  }
  fs.mkdirSync(path.dirname(options.chart_file), { recursive: true });
  fs.writeFileSync(options.chart_file, drawChart(results));
  if (options.update_docs) {
    if (options.parts.includes('main')) {
      const without_events = { ...results, events: null };
      updateDocs(options, results.store, markdownReport({ ...without_events, targets: judgeTargets(without_events) }));
    }
    if (results.events !== null) updateDocs(options, `events:${results.store}`, eventsMarkdown(results));
  }
  log(`results: ${path.relative(process.cwd(), path.join(options.results_dir, `${stamp}.json`))}, chart: ${path.relative(process.cwd(), options.chart_file)}`);
}

/** Replaces one generated block of docs/performance.md (`bench:<name>`) with this run's tables (the other blocks are kept). */
function updateDocs(options: BenchOptions, name: string, markdown: string): void {
  const file = path.join(options.root, 'docs', 'performance.md');
  const text = fs.readFileSync(file, 'utf8');
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  if (!text.includes(start) || !text.includes(end)) throw new BenchError(`${file} has no ${start} … ${end} block`);
  const before = text.slice(0, text.indexOf(start) + start.length);
  const after = text.slice(text.indexOf(end));
  fs.writeFileSync(file, `${before}\n${markdown}\n${after}`);
}

function fmt(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

const STARTED_MS = performance.now();
const LOAD_AVERAGE_AT_START = os.loadavg()[0] as number;

function log(message: string): void {
  const elapsed_s = ((performance.now() - STARTED_MS) / 1000).toFixed(0).padStart(4);
  process.stdout.write(`[${elapsed_s} s] ${message}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`\nbenchmark failed: ${error instanceof BenchError ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(error instanceof BenchError ? 2 : 1);
});
