/**
 * Where a request's time goes, step by step, from CPU profiles (issue 10):
 *
 *   npx tsx bench/cost-breakdown.ts [--scenario submit_many,tx_lookup,…] [--duration-s 8] [--connections 64]
 *                                   [--out FILE.json] [--keep-profiles DIR] [--root CHECKOUT]
 *   (PostgreSQL with BENCH_DATABASE_URL, as `npm run bench`)
 *
 * Seeds one ledger (the benchmark's 1,000 funded senders and a hot sender, then SEED_TRANSFERS transfers
 * sealed into blocks), then, for each scenario alone, starts the built service on it with `--cpu-prof`,
 * loads it with that scenario's requests (bench/scenario-requests.ts, the same as `npm run bench`),
 * stops it with SIGTERM so that V8 writes the profile, and keeps only the samples taken while the load
 * ran (V8's sample clock and `process.hrtime` are both the monotonic clock). Each sample is charged to
 * one step: the deepest frame of its stack that a step claims (STEPS, by file and function), except that
 * everything under the block producer is "sealing" (the submit path pays for sealing what it accepted).
 * Prints, per scenario, the microseconds of one core per request (per transaction for batches) in each
 * step, and the busy total; writes the same as JSON. `--root` profiles another checkout's build
 * (its `dist/main.js`, built beforehand) with this script's requests: a before/after on one machine.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freshDatabase, type FreshDatabase } from './databases.js';
import { getJson, loadTransactions, signToken, waitUntilSealed, type Stats, type TransferBody } from './ledger-client.js';
import type { PooledRequest } from './load-types.js';
import { BenchError, profileFlags, scheduleSeconds, startLoadGenerator, startService, type LoadGenerator } from './processes.js';
import { batchPool, mint, readPools, submitHotPool, submitKeyedPool, submitManyPool, SUBMIT_AMOUNT } from './scenario-requests.js';

const SENDERS = 1000;
const SEED_TRANSFERS = 20_000;
const BATCH_SIZE = 1000;
const BATCH_CONNECTIONS = 8;
const SCENARIOS = ['submit_many', 'submit_hot', 'submit_keyed', 'batch', 'tx_lookup', 'balance', 'account_history', 'blocks_first', 'blocks_deep', 'stats'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

type ProfileNode = { id: number; callFrame: { functionName: string; url: string }; children?: number[] };
type Profile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number };

/** A step of the request path and the frames it claims; the first step whose rule matches a frame claims it. */
type Step = { step: string; claims: (name: string, url: string) => boolean };

const SEALING = 'sealing (block producer, its store calls included)';
const UNCLAIMED = 'other JS (promises, timers, streams)';
const SOCKET_WRITE = 'reply: socket write';
const STORE = 'store (SQL and driver)';
const STORE_FRAME = /\/(src|dist)\/store\/|node_modules\/(better-sqlite3|pg|pg-protocol|pg-pool)\//;
const file = (pattern: RegExp) => (_name: string, url: string) => pattern.test(url);

export const STEPS: Step[] = [
  { step: 'idle (waiting: network, fsync, database)', claims: (name) => name === '(idle)' },
  { step: 'garbage collection', claims: (name) => name === '(garbage collector)' },
  { step: 'V8 and native code, unattributed', claims: (name) => name === '(program)' },
  { step: SOCKET_WRITE, claims: (name) => /^(writev|writeGeneric|writevGeneric|handleWriteReq|_writev|_writeGeneric)$/.test(name) },
  { step: 'HTTP: Node parser and response', claims: (name, url) => /^node:(_http_|internal\/http)/.test(url) || name === 'onStreamRead' },
  { step: 'auth (JWT, token cache, request guard)', claims: file(/\/(src|dist)\/auth\/|node_modules\/jose\/|\/(src|dist)\/http\/request-guard/) },
  { step: 'rate limit', claims: file(/\/(src|dist)\/http\/(redis-)?rate-limit/) },
  { step: 'body parse (JSON, exact numbers)', claims: file(/\/(src|dist)\/http\/json-body|node_modules\/(lossless-json|secure-json-parse)\/|fastify\/lib\/content-type-parser/) },
  { step: 'validation (schemas, parameters, ids)', claims: file(/node_modules\/(@sinclair\/typebox|ajv|@fastify\/ajv-compiler)\/|fastify\/lib\/validation|\/(src|dist)\/http\/(schemas|parameters)|\/(src|dist)\/domain\/user-id/) },
  { step: 'amounts (parse, format)', claims: file(/\/(src|dist)\/domain\/amount/) },
  { step: 'building the transaction (nonce, canonical JSON, SHA-256)', claims: file(/\/(src|dist)\/domain\/(transaction|hashing|hash-steps|canonical-json|encoding|hex)\.|\/(src|dist)\/service\/nonce-pool/) },
  { step: STORE, claims: file(STORE_FRAME) },
  { step: 'serialisation', claims: (name, url) => /\/(src|dist)\/http\/(exact-json|views)|node_modules\/(fast-json-stringify|@fastify\/fast-json-stringify-compiler)\//.test(url) || (/fastify\/lib\/reply/.test(url) && /serializ/i.test(name)) },
  { step: 'metrics', claims: file(/node_modules\/prom-client\/|\/(src|dist)\/metrics\//) },
  { step: 'logging', claims: file(/node_modules\/(pino|thread-stream|sonic-boom)\/|\/(src|dist)\/logging\//) },
  { step: 'Fastify (routing, hooks, reply)', claims: file(/node_modules\/(fastify|find-my-way|avvio|@fastify|light-my-request|fast-querystring)\//) },
  { step: 'service and route logic', claims: file(/\/(src|dist)\/(service|http|failure-budget|backpressure|events|market|balance-commitments|checkpoints)\//) },
];

function isSealer(url: string): boolean {
  return /\/(src|dist)\/service\/block-producer\./.test(url);
}

/** The step each sample's stack is charged to, by node id. */
function stepsOf(profile: Profile): Map<number, string> {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const by_id = new Map(profile.nodes.map((node) => [node.id, node]));
  const claimed = (node: ProfileNode) => STEPS.find((step) => step.claims(node.callFrame.functionName, node.callFrame.url))?.step;
  const steps = new Map<number, string>();
  for (const node of profile.nodes) {
    let deepest: string | undefined;
    let sealing = false;
    let in_store = false;
    for (let at: number | undefined = node.id; at !== undefined; at = parent.get(at)) {
      const frame = by_id.get(at) as ProfileNode;
      deepest ??= claimed(frame);
      if (isSealer(frame.callFrame.url)) sealing = true;
      if (STORE_FRAME.test(frame.callFrame.url)) in_store = true;
    }
    // The PostgreSQL driver writes its queries to a socket too: those writes are the store's, not the reply's.
    const step = deepest === SOCKET_WRITE && in_store ? STORE : deepest;
    steps.set(node.id, sealing ? SEALING : step ?? UNCLAIMED);
  }
  return steps;
}

/** Milliseconds per step of the samples taken between `from_us` and `to_us` (monotonic clock, µs). */
/**
 * V8 writes one profile per thread, named `CPU.<date>.<time>.<pid>.<thread id>.<sequence>.cpuprofile`;
 * the main thread's id is 0.
 */
export function profilesByThread(names: readonly string[]): { main: string | null; others: string[] } {
  const main = names.filter((name) => /\.\d+\.0\.\d+\.cpuprofile$/.test(name));
  if (main.length > 1) throw new BenchError(`more than one profile of a main thread: ${main.join(', ')}`);
  return { main: main[0] ?? null, others: names.filter((name) => !main.includes(name)) };
}

function busyMs(steps: Map<string, number>): number {
  return [...steps].filter(([step]) => !step.startsWith('idle')).reduce((sum, [, ms]) => sum + ms, 0);
}

export function stepTimes(profile: Profile, from_us: number, to_us: number): { window_ms: number; steps: Map<string, number> } {
  const steps_of = stepsOf(profile);
  const steps = new Map<string, number>();
  let at_us = profile.startTime;
  let window_ms = 0;
  profile.samples.forEach((id, index) => {
    const delta_us = profile.timeDeltas[index] ?? 0;
    at_us += delta_us;
    if (at_us < from_us || at_us > to_us) return;
    const step = steps_of.get(id) as string;
    steps.set(step, (steps.get(step) ?? 0) + delta_us / 1000);
    window_ms += delta_us / 1000;
  });
  return { window_ms, steps };
}

type Breakdown = {
  scenario: ScenarioName;
  /** Requests answered (for `batch`: transactions accepted) while the profile window was open. */
  units: number;
  unit: 'request' | 'transaction';
  units_per_s: number;
  load_average: number;
  /** Microseconds per unit, per step; idle is listed but not part of `busy_us`. */
  steps: Array<{ step: string; us: number; share: number }>;
  busy_us: number;
  /** Microseconds per unit that worker threads were busy (not idle) beside the event loop: not part of `busy_us`. */
  other_threads_busy_us: number;
  /**
   * The kernel's account of the same window (/proc/<pid>/task/<tid>/schedstat, every thread), microseconds per
   * unit: each process's time on a CPU, and the service's time runnable but waiting for one. V8's sampler
   * charges a sample to the frame on the stack whether or not the thread was running, so a step's figure
   * above includes the waits that fell inside it; these tell the two apart. Zeros without schedstats.
   */
  schedule: { service_running_us: number; service_waiting_us: number; event_loop_running_us: number; event_loop_waiting_us: number; load_generator_running_us: number };
};

async function main(): Promise<void> {
  const { values } = parseArgs({ options: {
    scenario: { type: 'string' }, 'duration-s': { type: 'string' }, connections: { type: 'string' }, out: { type: 'string' }, 'keep-profiles': { type: 'string' },
    root: { type: 'string' },
  } });
  const chosen = (values.scenario?.split(',') ?? [...SCENARIOS]) as ScenarioName[];
  for (const name of chosen) if (!SCENARIOS.includes(name)) throw new BenchError(`unknown scenario "${name}" (one of ${SCENARIOS.join(', ')})`);
  const duration_s = Number(values['duration-s'] ?? 8);
  const connections = Number(values.connections ?? 64);
  const own_root = path.resolve(import.meta.dirname, '..');
  const root = path.resolve(values.root ?? own_root);
  if (!fs.existsSync(path.join(root, 'dist', 'main.js'))) throw new BenchError(`${root} has no dist/main.js: build it first (npm run build)`);
  const database_server = process.env.BENCH_DATABASE_URL;
  const temp_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-cost-'));
  const secret = randomBytes(32).toString('hex');
  const metrics_token = randomBytes(16).toString('hex');
  const admin = await signToken(secret, 'bench-treasury', true);
  const env = (database_url: string): Record<string, string> => ({
    NODE_ENV: 'production', DATABASE_URL: database_url, JWT_SECRET: secret, METRICS_TOKEN: metrics_token, RATE_LIMIT_MAX: '10000000',
    PENDING_MAX: '100000000', CHECKPOINT_SIGNING_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'warn',
  });
  let database: FreshDatabase | null = null;
  const load = startLoadGenerator(own_root);
  try {
    database = database_server === undefined ? null : await freshDatabase(database_server, 'cost');
    const database_url = database?.url ?? `sqlite:${path.join(temp_dir, 'cost.db')}`;
    const seeded = await seed(root, env(database_url), admin, metrics_token);
    const pools = await scenarioPools(secret, admin, seeded);
    const results: Breakdown[] = [];
    for (const name of chosen) {
      const profile_dir = path.join(values['keep-profiles'] ?? temp_dir, name);
      fs.mkdirSync(profile_dir, { recursive: true });
      const result = await profileScenario({ root, env: env(database_url), load, name, pool: pools[name], connections: name === 'batch' ? BATCH_CONNECTIONS : connections, duration_s, profile_dir });
      print(result);
      results.push(result);
    }
    const out = values.out ?? path.join(own_root, 'bench', 'results', `cost-breakdown.${database_server === undefined ? 'sqlite' : 'postgres'}.json`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    const commit = gitCommit(root);
    fs.writeFileSync(out, `${JSON.stringify({ store: database_server === undefined ? 'sqlite' : 'postgres', commit, measured_at: new Date().toISOString(), cpus: os.cpus()[0]?.model, duration_s, connections, results }, null, 2)}\n`);
    console.log(`written: ${path.relative(process.cwd(), out)}`);
  } finally {
    load.stop();
    await database?.drop().catch(() => undefined);
    fs.rmSync(temp_dir, { recursive: true, force: true });
  }
}

function gitCommit(root: string): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

type Seeded = { senders: string[]; hashes: string[]; blocks: number };

/** The benchmark's funded senders, then transfers among them, all sealed; returns what the read pools need. */
async function seed(root: string, env: Record<string, string>, admin: string, metrics_token: string): Promise<Seeded> {
  const service = await startService(root, env);
  try {
    const senders = Array.from({ length: SENDERS }, (_, index) => `sender-${index}`);
    const funded = [...senders, 'hot-sender'];
    const options = { batch_size: BATCH_SIZE, concurrency: 4 };
    await loadTransactions(service.url, admin, funded.length, (index) => mint(funded[index] as string), { ...options, sample_every: 1 });
    await waitUntilSealed(service.url, metrics_token);
    const transfer = (index: number): TransferBody => ({
      from: senders[index % SENDERS] as string, to: senders[(index * 31 + 1) % SENDERS] as string, amount: SUBMIT_AMOUNT, token: 'TAB', type: 'transfer',
    });
    const transfers = await loadTransactions(service.url, admin, SEED_TRANSFERS, transfer, { ...options, sample_every: SEED_TRANSFERS / 1000 });
    await waitUntilSealed(service.url, metrics_token);
    const stats = await getJson<Stats>(`${service.url}/api/stats`, admin);
    return { senders, hashes: transfers.sampled_hashes, blocks: stats.latest_block_number + 1 };
  } finally {
    await service.stop();
  }
}

async function scenarioPools(secret: string, admin: string, seeded: Seeded): Promise<Record<ScenarioName, PooledRequest[]>> {
  const sender_tokens = await Promise.all(seeded.senders.map((sender) => signToken(secret, sender)));
  const readers = [await signToken(secret, 'bench-reader'), await signToken(secret, 'bench-reader-2')];
  const reads = Object.fromEntries(readPools(readers, seeded.senders, seeded.hashes, seeded.blocks).map((read) => [read.name, read.pool]));
  return {
    submit_many: submitManyPool(seeded.senders, sender_tokens),
    submit_hot: submitHotPool(await signToken(secret, 'hot-sender'), seeded.senders),
    submit_keyed: submitKeyedPool(seeded.senders, sender_tokens),
    batch: batchPool(admin, seeded.senders, BATCH_SIZE),
    tx_lookup: reads.tx_lookup as PooledRequest[], balance: reads.balance as PooledRequest[], account_history: reads.account_history as PooledRequest[],
    blocks_first: reads.blocks_first as PooledRequest[],
    blocks_deep: reads.blocks_deep as PooledRequest[], stats: reads.stats as PooledRequest[],
  };
}

type ScenarioRun = {
  root: string; env: Record<string, string>; load: LoadGenerator; name: ScenarioName; pool: PooledRequest[];
  connections: number; duration_s: number; profile_dir: string;
};

async function profileScenario(run: ScenarioRun): Promise<Breakdown> {
  const service = await startService(run.root, run.env, profileFlags(run.profile_dir));
  const load_average = os.loadavg()[0] as number;
  const service_from = scheduleSeconds(service.pid);
  const loop_from = scheduleSeconds(service.pid, true);
  const load_from = scheduleSeconds(run.load.pid);
  const from_us = Number(process.hrtime.bigint() / 1000n);
  const result = await run.load.run({ url: service.url, connections: run.connections, duration_s: run.duration_s, warmup_s: 0, requests: run.pool, count_batch_items: run.name === 'batch' });
  const to_us = Number(process.hrtime.bigint() / 1000n);
  const service_to = scheduleSeconds(service.pid);
  const loop_to = scheduleSeconds(service.pid, true);
  const load_to = scheduleSeconds(run.load.pid);
  await service.stop();
  if (result.errors > 0) throw new BenchError(`${run.name}: ${result.errors} errors (${JSON.stringify(result.status_counts)})`);
  const { main, others } = profilesByThread(fs.readdirSync(run.profile_dir).filter((name) => name.endsWith('.cpuprofile')));
  if (main === null) throw new BenchError(`${run.name}: no profile of the main thread in ${run.profile_dir}`);
  const readProfile = (name: string) => JSON.parse(fs.readFileSync(path.join(run.profile_dir, name), 'utf8')) as Profile;
  const { window_ms, steps } = stepTimes(readProfile(main), from_us, to_us);
  // Worker threads (the SQLite store's WAL checkpoints) work beside the event loop: their busy time is reported apart.
  const other_threads_ms = others.reduce((sum, name) => sum + busyMs(stepTimes(readProfile(name), from_us, to_us).steps), 0);
  const window_s = (to_us - from_us) / 1e6;
  if (window_ms < 0.8 * window_s * 1000) throw new BenchError(`${run.name}: the profile covers ${window_ms.toFixed(0)} ms of the ${(window_s * 1000).toFixed(0)} ms loaded: clocks not aligned?`);
  const units = run.name === 'batch' ? result.batch_items?.accepted ?? 0 : result.requests;
  if (units === 0) throw new BenchError(`${run.name}: nothing was answered`);
  const rows = [...steps].map(([step, ms]) => ({ step, us: (ms * 1000) / units, share: ms / window_ms })).sort((a, b) => b.us - a.us);
  const busy_us = rows.filter((row) => !row.step.startsWith('idle')).reduce((sum, row) => sum + row.us, 0);
  return {
    scenario: run.name, units, unit: run.name === 'batch' ? 'transaction' : 'request', units_per_s: units / result.duration_s, load_average, steps: rows, busy_us,
    other_threads_busy_us: (other_threads_ms * 1000) / units,
    schedule: {
      service_running_us: ((service_to.running_s - service_from.running_s) * 1e6) / units,
      service_waiting_us: ((service_to.waiting_s - service_from.waiting_s) * 1e6) / units,
      event_loop_running_us: ((loop_to.running_s - loop_from.running_s) * 1e6) / units,
      event_loop_waiting_us: ((loop_to.waiting_s - loop_from.waiting_s) * 1e6) / units,
      load_generator_running_us: ((load_to.running_s - load_from.running_s) * 1e6) / units,
    },
  };
}

function print(result: Breakdown): void {
  console.log(`\n${result.scenario}: ${Math.round(result.units_per_s).toLocaleString('en-US')} ${result.unit}s/s, ${result.busy_us.toFixed(1)} µs busy per ${result.unit} (load average ${result.load_average.toFixed(1)})`);
  for (const row of result.steps) console.log(`  ${row.us.toFixed(1).padStart(8)} µs  ${(row.share * 100).toFixed(1).padStart(5)} %  ${row.step}`);
  if (result.other_threads_busy_us > 0) console.log(`  ${result.other_threads_busy_us.toFixed(1).padStart(8)} µs          other threads, beside the event loop (the WAL checkpoint worker)`);
  const { service_running_us, service_waiting_us, event_loop_running_us, event_loop_waiting_us, load_generator_running_us } = result.schedule;
  if (service_running_us > 0) {
    console.log(`  kernel's count per ${result.unit}: event loop's thread on a CPU ${event_loop_running_us.toFixed(1)} µs, runnable and waiting for one ${event_loop_waiting_us.toFixed(1)} µs;`);
    console.log(`    every thread of the service ${service_running_us.toFixed(1)} and ${service_waiting_us.toFixed(1)} µs; load generator on a CPU ${load_generator_running_us.toFixed(1)} µs`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    process.stderr.write(`\ncost breakdown failed: ${error instanceof BenchError ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(error instanceof BenchError ? 2 : 1);
  });
}
