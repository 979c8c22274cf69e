/**
 * The benchmark's options, from flags and the environment (the only place in bench/ that reads
 * either). Flags win over the environment. `npm run bench -- --help` prints BENCH_USAGE.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BenchError } from './processes.js';

/**
 * The parts of a run: the main scenarios (submit, batch, durability, reads, sealer), the scale curve, the
 * events scenario, and swap-heavy sealing (issue 16: swaps vs transfers through the block producer).
 */
export const BENCH_PARTS = ['main', 'scale', 'events', 'swaps'] as const;
export type BenchPart = (typeof BENCH_PARTS)[number];

export type BenchOptions = {
  /** `--help`: print BENCH_USAGE and run nothing. */
  help: boolean;
  smoke: boolean;
  /** The parts this run makes (all of them unless `--scenario` names some). */
  parts: BenchPart[];
  /** Measured seconds per scenario (each also gets a short warm-up). */
  duration_s: number;
  warmup_s: number;
  /** Connections for the single-request scenarios (the submit target is stated at 64). */
  connections: number;
  /** Connections for the batch scenario: each carries up to `batch_size` transactions. */
  batch_connections: number;
  batch_size: number;
  /** Distinct senders of the "many senders" scenario (each with its own token). */
  senders: number;
  /** Pending transactions preloaded for the sealer scenario. */
  sealer_transactions: number;
  /** Swap-heavy sealing: pending swaps preloaded (and as many transfers, to compare), each sealed at `swap_block_txs_max`. */
  swap_transactions: number;
  swap_accounts: number;
  swap_block_txs_max: number;
  /** Ledger sizes (transactions) of the scale curve; empty skips it. */
  scale_levels: number[];
  /** Users the scale curve's ledger grows to (its first levels are mints to new users). */
  scale_users: number;
  /** Seconds per read scenario at each scale level. */
  scale_duration_s: number;
  /** Events scenario: SSE subscribers held open by the subscriber process. */
  events_subscribers: number;
  /** Events scenario: submissions per second (open loop) while the subscribers listen. */
  events_rate_per_s: number;
  /** Events scenario: measured seconds (after `warmup_s`). */
  events_duration_s: number;
  /** A postgres:// URL: benchmark the PostgreSQL store on that server instead of SQLite. */
  database_url: string | undefined;
  results_dir: string;
  chart_file: string;
  /** Rewrite this store's generated block of docs/performance.md with this run's tables. */
  update_docs: boolean;
  /** How many times the main scenarios run, each on a new ledger, and the scale curve's reads at each level; the results are their medians (`--runs`, BENCH_RUNS). */
  runs: number;
  /** Write a V8 CPU profile of every service process that exits cleanly into this folder (node --cpu-prof). */
  profile_dir: string | undefined;
  /** Node's flags the service's processes start with (BENCH_SERVICE_NODE_FLAGS, split on spaces). */
  service_node_flags: string[];
  root: string;
};

const ROOT = path.resolve(import.meta.dirname, '..');
/** Runs of the main scenarios in one invocation at most (each takes a few minutes). */
const RUNS_MAX = 9;
const SIZE_PATTERN = /^([0-9]+(?:\.[0-9]+)?)([kKmM]?)$/;

export function parseSize(text: string): number {
  const match = SIZE_PATTERN.exec(text.trim());
  if (match === null) throw new BenchError(`not a size: "${text}" (use e.g. 10k, 100k, 1M, 2500)`);
  const multiplier = match[2] === '' ? 1 : match[2]?.toLowerCase() === 'k' ? 1000 : 1_000_000;
  return Math.round(Number(match[1]) * multiplier);
}

export function formatSize(count: number): string {
  if (count >= 1_000_000 && count % 100_000 === 0) return `${count / 1_000_000}M`;
  if (count >= 1000 && count % 100 === 0) return `${count / 1000}k`;
  return String(count);
}

/** What `npm run bench -- --help` prints: every flag (test/bench/options.test.ts keeps it complete) and the environment. */
export const BENCH_USAGE = `npm run bench [-- FLAGS]
  --smoke                         a short run with small sizes (CI's smoke test)
  --duration-s 8                  measured seconds per scenario
  --connections 64                connections of the single-request scenarios
  --runs 1                        main scenarios this many times (at most 9), each on a new ledger, and the
                                  scale curve's reads this many rounds at each level: medians
  --scale 10k,100k,1M | --no-scale   the scale curve's levels (add 10M for the opt-in point), or none
  --scenario main,scale,events,swaps only these parts (default: all)
  --sealer-txs 200000             pending transfers preloaded for the sealer scenario
  --swap-txs 50000                swap-heavy sealing: pending swaps, and as many transfers
  --events-subscribers 1000  --events-rate 100  --events-duration-s 20
  --results-dir DIR  --chart FILE  --update-docs (rewrite this store's block of docs/performance.md)
  --profile-dir DIR               CPU profiles of the service processes (chrome://inspect, speedscope)
  --help                          this text
Environment: BENCH_DATABASE_URL=postgres://… (PostgreSQL instead of SQLite), BENCH_SMOKE=1,
  BENCH_DURATION_S, BENCH_CONNECTIONS, BENCH_RUNS, BENCH_SCALE, BENCH_SCENARIO, BENCH_SEALER_TXS,
  BENCH_SWAP_TXS, BENCH_RESULTS_DIR, BENCH_SERVICE_NODE_FLAGS='--max-semi-space-size=8' (the service's Node flags)
`;

/** The flags `readOptions` accepts. */
export const BENCH_FLAGS = {
  help: { type: 'boolean' },
  smoke: { type: 'boolean' },
  'duration-s': { type: 'string' },
  connections: { type: 'string' },
  scale: { type: 'string' },
  'no-scale': { type: 'boolean' },
  'results-dir': { type: 'string' },
  chart: { type: 'string' },
  'update-docs': { type: 'boolean' },
  runs: { type: 'string' },
  'sealer-txs': { type: 'string' },
  'swap-txs': { type: 'string' },
  'profile-dir': { type: 'string' },
  scenario: { type: 'string' },
  'events-subscribers': { type: 'string' },
  'events-rate': { type: 'string' },
  'events-duration-s': { type: 'string' },
} as const;

function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: BENCH_FLAGS }).values;
  } catch (error) {
    throw new BenchError(`${error instanceof Error ? error.message : String(error)}; npm run bench -- --help lists the options`);
  }
}

export function readOptions(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const values = parseFlags(argv);
  const smoke = values.smoke === true || env.BENCH_SMOKE === '1' || env.BENCH_SMOKE === 'true';
  const duration_s = positive('duration', values['duration-s'] ?? env.BENCH_DURATION_S, smoke ? 1 : 8);
  const scale_text = values['no-scale'] === true ? '' : values.scale ?? env.BENCH_SCALE ?? (smoke ? '500,2k' : '10k,100k,1M');
  const scale_levels = scale_text.split(',').filter((part) => part.trim() !== '').map(parseSize);
  if (scale_levels.some((level, index) => index > 0 && level <= (scale_levels[index - 1] as number))) {
    throw new BenchError(`scale levels must increase: ${scale_text}`);
  }
  const results_dir = path.resolve(values['results-dir'] ?? env.BENCH_RESULTS_DIR ?? path.join(ROOT, 'bench', 'results'));
  const database_url = env.BENCH_DATABASE_URL?.trim() || undefined;
  if (database_url !== undefined && !/^postgres(ql)?:\/\//.test(database_url)) {
    throw new BenchError('BENCH_DATABASE_URL must be a postgres:// URL (leave it unset to benchmark SQLite)');
  }
  const parts = readParts(values.scenario ?? env.BENCH_SCENARIO);
  return {
    help: values.help === true,
    smoke,
    parts,
    duration_s,
    warmup_s: smoke ? 0 : 2,
    connections: positive('connections', values.connections ?? env.BENCH_CONNECTIONS, smoke ? 8 : 64),
    batch_connections: smoke ? 2 : 8,
    batch_size: smoke ? 100 : 1000,
    senders: smoke ? 50 : 1000,
    sealer_transactions: positive('sealer transactions', values['sealer-txs'] ?? env.BENCH_SEALER_TXS, smoke ? 2000 : 200_000),
    swap_transactions: positive('swap transactions', values['swap-txs'] ?? env.BENCH_SWAP_TXS, smoke ? 2000 : 50_000),
    swap_accounts: smoke ? 100 : 1000,
    // The service's default BLOCK_TXS_MAX.
    swap_block_txs_max: 10_000,
    scale_levels,
    scale_users: smoke ? 1000 : 100_000,
    scale_duration_s: smoke ? 1 : 5,
    events_subscribers: positive('events subscribers', values['events-subscribers'], smoke ? 20 : 1000),
    events_rate_per_s: positive('events rate', values['events-rate'], smoke ? 20 : 100),
    events_duration_s: positive('events duration', values['events-duration-s'], smoke ? 2 : 20),
    database_url,
    results_dir,
    // A partial run (--scenario) draws its chart next to its results, never over the docs' chart of a full run.
    chart_file: path.resolve(values.chart ?? (smoke || parts.length < BENCH_PARTS.length ? path.join(results_dir, 'chart.svg') : path.join(ROOT, 'docs', database_url === undefined ? 'performance-chart.svg' : 'performance-chart-postgres.svg'))),
    update_docs: values['update-docs'] === true,
    runs: runsOption(values.runs ?? env.BENCH_RUNS),
    profile_dir: values['profile-dir'] === undefined ? undefined : path.resolve(values['profile-dir']),
    service_node_flags: (env.BENCH_SERVICE_NODE_FLAGS ?? '').split(/\s+/).filter((flag) => flag !== ''),
    root: ROOT,
  };
}

function readParts(text: string | undefined): BenchPart[] {
  if (text === undefined || text.trim() === '') return [...BENCH_PARTS];
  const names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
  const unknown = names.filter((name) => !(BENCH_PARTS as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0) throw new BenchError(`--scenario takes some of ${BENCH_PARTS.join(', ')} (got "${text}")`);
  return BENCH_PARTS.filter((part) => names.includes(part));
}

function runsOption(text: string | undefined): number {
  const runs = positive('runs', text, 1);
  if (runs > RUNS_MAX) throw new BenchError(`--runs takes at most ${RUNS_MAX} (each run of the main scenarios takes a few minutes)`);
  return runs;
}

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text.trim() === '') return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new BenchError(`${name} must be a positive number (got "${text}")`);
  return value;
}
