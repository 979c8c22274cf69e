/** The results of a run, the targets they are judged against, and the table printed and written to docs. */
import type { Summary, SubscriberReport } from './event-measures.js';
import type { LoadResult } from './load-types.js';
import type { HeapPeaks } from './ledger-client.js';
import { formatSize } from './options.js';
import type { SwapSealingResult } from './swap-sealing.js';

export type ScenarioResult = {
  name: string;
  title: string;
  kind: 'submit' | 'batch' | 'read';
  connections: number;
  request_bytes: number;
  response_bytes: number;
  service: LoadResult;
  /** 1-minute load average of the machine when the scenario started: above the core count, other work competed. */
  load_average: number;
  /** The same requests against the bare Fastify route answering the same number of bytes. */
  bare: LoadResult;
  /** service requests/s ÷ bare requests/s. */
  ratio: number;
  /** Transactions accepted per second (submit: one per 202; batch: accepted items). */
  transactions_per_s: number | null;
  /** With `--runs N` (N > 1): every run's figures, in the order they ran; the fields above are the median run's. */
  runs?: ScenarioRun[];
};

/** One run's figures of a scenario, as the targets judge them. */
export type ScenarioRun = { ratio: number; p99_vs_bare: number; transactions_per_s: number | null; load_average: number };

/** One run of the main scenarios (submit, batch, durability, reads, sealer) on a new ledger. */
export type MainRun = Pick<BenchResults, 'scenarios' | 'durability' | 'sealer' | 'main_ledger'> & { started_at: string; load_average_at_start: number };

export type ReadPoint = {
  requests_per_s: number;
  latency_ms: LoadResult['latency_ms'];
  errors: number;
  requests: number;
  /** With `--runs N` (N > 1): every round's p50 in ms, in the order they ran; the fields above are the median round's (absent before 2026-12-02). */
  rounds_p50_ms?: number[];
};

export type ScaleLevel = {
  transactions: number;
  users: number;
  blocks: number;
  /** BLOCK_TXS_MAX the level was loaded with (absent in results written before the 10M point). */
  block_txs_max?: number;
  load_s: number;
  load_transactions_per_s: number;
  /** VmHWM of the service process so far. */
  peak_rss_bytes: number;
  /** Peaks of the service's V8 heap (used, committed) and external memory while the level loaded and was read (absent before 2026-11-26). */
  heap_peaks?: HeapPeaks;
  /** The database on disk after loading (absent in results written before the 10M point). */
  database_bytes?: number;
  /** Seconds the database took to settle after loading, before the reads (absent before 2026-11-27; 0 on SQLite). */
  settle_s?: number;
  reads: Record<string, ReadPoint>;
};

/** One measured run of the events scenario: subscribers on one instance, submissions to one (the same, or another). */
export type EventsPlacement = {
  name: 'same_instance' | 'across_instances';
  title: string;
  load_average: number;
  /** Events the log grew by while the streams were open (warm-up included). */
  events: number;
  /** Seconds from the first submission until every stream had every event. */
  elapsed_s: number;
  submitter: { submitted: number; acknowledged: number; measured: number; errors: number; error_samples: string[]; late_starts: number; latency_ms: Summary };
  streams: SubscriberReport;
  /** Events received by all streams together per second. */
  delivered_events_per_s: number;
  /**
   * The instance holding the streams: VmRSS before they opened and the most sampled while open, the most
   * heap in use and external memory (socket write buffers) its /metrics showed, its CPU meanwhile (% of one core)
   * and the time its threads were runnable but waited for a CPU held by another process (% of the elapsed time, all threads).
   */
  service: { rss_before_bytes: number; rss_peak_bytes: number; heap_used_peak_bytes: number; external_peak_bytes: number; cpu_percent: number; cpu_wait_percent: number };
  /** Submissions refused, streams not complete (ended early, gap, not opened), events out of sequence, transactions some stream missed. */
  errors: number;
};

export type EventsResult = { subscribers: number; rate_per_s: number; duration_s: number; warmup_s: number; placements: EventsPlacement[] };

export type Target = { name: string; goal: string; value: string; met: boolean | null };

export type BenchResults = {
  started_at: string;
  finished_at: string;
  smoke: boolean;
  store: 'sqlite' | 'postgres';
  settings: Record<string, unknown>;
  machine: { cpus: number; cpu_model: string; memory_bytes: number; node: string; platform: string; fsync_ms_p50: number; load_average_at_start: number };
  /** The parts this run made (see BENCH_PARTS); the others' fields are empty or null. */
  parts: string[];
  main_ledger: { transactions: number; blocks: number; users: number } | null;
  scenarios: ScenarioResult[];
  durability: { acknowledged: number; found_after_kill: number; lost: number } | null;
  sealer: {
    pending: number; transactions: number; blocks: number; seal_s: number; transactions_per_s: number; wall_s: number; wall_transactions_per_s: number;
    /** With `--runs N` (N > 1): every run's rate; the fields above are the median run's. */
    runs_transactions_per_s?: number[];
  } | null;
  /** With `--runs N` (N > 1): when each run of the main scenarios started, and the load average then (absent before 2026-11-27). */
  main_runs?: Array<{ started_at: string; load_average_at_start: number }>;
  scale: { levels: ScaleLevel[] } | null;
  events: EventsResult | null;
  /** Swap-heavy sealing (issue 16); absent in results written before it existed. */
  swaps?: SwapSealingResult | null;
  targets: Target[];
};

/**
 * Issue 10's targets, per store: throughput and p99 against the bare route measured in the same run, and
 * the batch and sealer rates. (Version 1's were one set for both stores: submit ≥ 50 % and p99 ≤ 25 ms,
 * reads ≥ 70 %, the sealer ≥ 50k tx/s on SQLite and 15k on PostgreSQL, batches ≥ 100k tx/s on SQLite.)
 */
export const STORE_TARGETS = {
  sqlite: { submit_ratio_min: 0.5, submit_p99_vs_bare_max: 3, read_ratio_min: 0.7, batch_tx_per_s_min: 100_000, sealer_tx_per_s_min: 100_000 },
  postgres: { submit_ratio_min: 0.35, submit_p99_vs_bare_max: 4, read_ratio_min: 0.5, batch_tx_per_s_min: 50_000, sealer_tx_per_s_min: 50_000 },
} as const;
/** The share of the bare route a scenario of this kind is asked for on this store (none for batches: they are judged in tx/s). */
export function ratioGoal(store: BenchResults['store'], kind: ScenarioResult['kind']): number | null {
  if (kind === 'batch') return null;
  return kind === 'submit' ? STORE_TARGETS[store].submit_ratio_min : STORE_TARGETS[store].read_ratio_min;
}
/**
 * Scenarios measured and reported but judged against no target: the submit targets (issue 10) name the
 * 1,000 senders and the hot sender; the keyed submissions show what an `Idempotency-Key` adds to them.
 */
export const MEASURED_ONLY_SCENARIOS: ReadonlySet<string> = new Set(['submit_keyed']);
const SUBMIT_P99_CONNECTIONS = 64;
const SCALE_LATENCY_RATIO_MAX = 1.5;
const PEAK_RSS_BYTES_MAX = 300 * 1024 * 1024;
const EVENTS_LAG_P99_MS_MAX = { same_instance: 100, across_instances: 250 } as const;
const EVENTS_RSS_BYTES_MAX = 400 * 1024 * 1024;
/** Issue 16: sealing swaps takes at most this many times as long as sealing as many transfers. */
const SWAP_SLOWDOWN_MAX = 2;

/** A scenario's runs: each run's figures when the main scenarios ran more than once (`--runs`), else the scenario's own. */
function runsOf(scenario: ScenarioResult): ScenarioRun[] {
  return scenario.runs ?? [scenarioRun(scenario)];
}

export function scenarioRun(scenario: ScenarioResult): ScenarioRun {
  return {
    ratio: scenario.ratio, p99_vs_bare: scenario.service.latency_ms.p99 / Math.max(1e-9, scenario.bare.latency_ms.p99),
    transactions_per_s: scenario.transactions_per_s, load_average: scenario.load_average,
  };
}

function medianRatio(scenario: ScenarioResult): number {
  return median(runsOf(scenario).map((run) => run.ratio));
}

/** "17 %", or "17 % (median of 16, 17, 35 %)" over several runs. */
function measuredRatio(scenario: ScenarioResult): string {
  const runs = runsOf(scenario);
  const percent = (ratio: number) => (ratio * 100).toFixed(0);
  return `${percent(medianRatio(scenario))} %${runs.length > 1 ? ` (median of ${runs.map((run) => percent(run.ratio)).join(', ')} %)` : ''}`;
}

/** The middle value (the lower middle of an even count, so that it is always a measured one). */
export function median(values: readonly number[]): number {
  return medianItem(values, (value) => value);
}

/** The item whose `key` is the median of `items` (the lower middle of an even count). */
function medianItem<T>(items: readonly T[], key: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => key(a) - key(b));
  const middle = sorted[Math.floor((sorted.length - 1) / 2)];
  if (middle === undefined) throw new Error('no runs to take a median of');
  return middle;
}

/**
 * Several rounds of one read as one point: the median round by p50, carrying every round's p50 and the
 * errors of all rounds (one round is itself).
 */
export function medianReadPoint(rounds: readonly ReadPoint[]): ReadPoint {
  const middle = medianItem(rounds, (round) => round.latency_ms.p50);
  if (rounds.length < 2) return middle;
  const errors = rounds.reduce((sum, round) => sum + round.errors, 0);
  return { ...middle, errors, rounds_p50_ms: rounds.map((round) => round.latency_ms.p50) };
}

/**
 * Several runs of the main scenarios as one result: each scenario is its median run (by accepted tx/s for
 * batches, by the share of the bare route otherwise) carrying every run's figures, the sealer its median
 * run carrying every run's rate, and durability what every run acknowledged, found and lost together.
 */
export function medianOfRuns(runs: readonly MainRun[]): Pick<BenchResults, 'scenarios' | 'durability' | 'sealer' | 'main_ledger' | 'main_runs'> {
  const last = runs[runs.length - 1];
  if (last === undefined) throw new Error('no runs to take a median of');
  if (runs.length === 1) return { scenarios: last.scenarios, durability: last.durability, sealer: last.sealer, main_ledger: last.main_ledger };
  const scenarios = last.scenarios.map((scenario) => {
    const each = runs.map((run) => run.scenarios.find((item) => item.name === scenario.name)).filter((item): item is ScenarioResult => item !== undefined);
    const middle = medianItem(each, (item) => (item.kind === 'batch' ? item.transactions_per_s ?? 0 : item.ratio));
    return { ...middle, runs: each.map(scenarioRun) };
  });
  const sealers = runs.map((run) => run.sealer).filter((sealer): sealer is NonNullable<BenchResults['sealer']> => sealer !== null);
  const sealer = sealers.length === 0 ? null : { ...medianItem(sealers, (item) => item.transactions_per_s), runs_transactions_per_s: sealers.map((item) => item.transactions_per_s) };
  const durabilities = runs.map((run) => run.durability).filter((item): item is NonNullable<BenchResults['durability']> => item !== null);
  const durability = durabilities.length === 0 ? null : durabilities.reduce((sum, item) => ({
    acknowledged: sum.acknowledged + item.acknowledged, found_after_kill: sum.found_after_kill + item.found_after_kill, lost: sum.lost + item.lost,
  }));
  return {
    scenarios, durability, sealer, main_ledger: last.main_ledger,
    main_runs: runs.map((run) => ({ started_at: run.started_at, load_average_at_start: run.load_average_at_start })),
  };
}

export function judgeTargets(results: BenchResults): Target[] {
  const goals = STORE_TARGETS[results.store];
  const targets: Target[] = [];
  const percent = (ratio: number) => `${(ratio * 100).toFixed(0)} %`;
  for (const scenario of results.scenarios.filter((item) => item.kind === 'submit' && !MEASURED_ONLY_SCENARIOS.has(item.name))) {
    targets.push({ name: `${scenario.title}: vs bare route`, goal: `≥ ${percent(goals.submit_ratio_min)}`, value: measuredRatio(scenario), met: medianRatio(scenario) >= goals.submit_ratio_min });
    const judged = scenario.connections === SUBMIT_P99_CONNECTIONS;
    const multiples = runsOf(scenario).map((run) => run.p99_vs_bare);
    const p99_vs_bare = median(multiples);
    const shown = multiples.length > 1
      ? `median of ${multiples.map((multiple) => `${multiple.toFixed(1)}×`).join(', ')}`
      : `${scenario.service.latency_ms.p99.toFixed(1)} against ${scenario.bare.latency_ms.p99.toFixed(2)} ms`;
    targets.push({
      name: `${scenario.title}: p99 against the bare route's p99 at ${SUBMIT_P99_CONNECTIONS} connections`,
      goal: `≤ ${goals.submit_p99_vs_bare_max}×`,
      value: `${p99_vs_bare.toFixed(1)}× (${shown})${judged ? '' : ` (at ${scenario.connections})`}`,
      met: judged ? p99_vs_bare <= goals.submit_p99_vs_bare_max : null,
    });
  }
  if (results.durability !== null) {
    targets.push({
      name: 'every acknowledged submission durable (kill -9, restart)',
      goal: '0 lost',
      value: `${results.durability.lost} lost of ${results.durability.acknowledged}`,
      met: results.durability.lost === 0,
    });
  }
  for (const scenario of results.scenarios.filter((item) => item.kind === 'read')) {
    targets.push({ name: `${scenario.title}: vs bare route`, goal: `≥ ${percent(goals.read_ratio_min)}`, value: measuredRatio(scenario), met: medianRatio(scenario) >= goals.read_ratio_min });
  }
  if (results.sealer !== null) {
    const sealer = results.sealer;
    const runs = sealer.runs_transactions_per_s ?? [sealer.transactions_per_s];
    targets.push({
      name: `sealer (${results.store === 'sqlite' ? 'SQLite' : 'PostgreSQL'})`,
      goal: `≥ ${formatSize(goals.sealer_tx_per_s_min)} tx/s`,
      value: `${rate(sealer.transactions_per_s)} tx/s${runs.length > 1 ? ` (median of ${runs.map(rate).join(', ')})` : ''}`,
      met: sealer.transactions_per_s >= goals.sealer_tx_per_s_min,
    });
  }
  const batch = results.scenarios.find((item) => item.kind === 'batch');
  if (batch !== undefined) {
    const runs = runsOf(batch).map((run) => run.transactions_per_s ?? 0);
    const accepted = median(runs);
    targets.push({
      name: 'batch submission, accepted',
      goal: `≥ ${formatSize(goals.batch_tx_per_s_min)} tx/s`,
      value: `${rate(accepted)} tx/s${runs.length > 1 ? ` (median of ${runs.map(rate).join(', ')})` : ''}`,
      met: accepted >= goals.batch_tx_per_s_min,
    });
  }
  targets.push(...scaleTargets(results));
  targets.push(...eventsTargets(results));
  if (results.swaps != null) {
    const swaps = results.swaps;
    targets.push({
      name: `swap-heavy sealing vs transfers (${swaps.store === 'sqlite' ? 'SQLite' : 'PostgreSQL'})`,
      goal: `≤ ${SWAP_SLOWDOWN_MAX}× as long`,
      value: `${swaps.slowdown.toFixed(2)}× (${rate(swaps.swap.transactions_per_s)} vs ${rate(swaps.transfer.transactions_per_s)} tx/s)`,
      met: swaps.slowdown <= SWAP_SLOWDOWN_MAX,
    });
  }
  return targets;
}

export function eventsTargets(results: BenchResults): Target[] {
  const events = results.events;
  if (events === null) return [];
  const targets: Target[] = [];
  for (const placement of events.placements) {
    const lag = placement.streams.lag_from_ack_ms;
    const lag_max = EVENTS_LAG_P99_MS_MAX[placement.name];
    targets.push({ name: `event lag p99, ${placement.title} (202 → delivery, ${events.subscribers} streams)`, goal: `≤ ${lag_max} ms`, value: `${ms(lag.p99)} ms (p50 ${ms(lag.p50)})`, met: lag.count > 0 && lag.p99 <= lag_max });
    targets.push({
      name: `service RSS with ${events.subscribers} streams, ${placement.title}`,
      goal: `≤ ${EVENTS_RSS_BYTES_MAX / 2 ** 20} MiB`,
      value: `${mib(placement.service.rss_peak_bytes)} MiB`,
      met: placement.service.rss_peak_bytes <= EVENTS_RSS_BYTES_MAX,
    });
    targets.push({ name: `every stream complete, no gap, ${placement.title}`, goal: '0 errors', value: `${placement.errors} errors`, met: placement.errors === 0 });
  }
  return targets;
}

/** The scale targets are set at 1M transactions: a larger level (the opt-in 10M) is reported, not judged. */
const SCALE_TARGET_TRANSACTIONS = 1_000_000;
/** A level's transactions include the genesis and market set-up's few: "1M" is up to this. */
const SCALE_LEVEL_SLACK = 1.01;

function scaleTargets(results: BenchResults): Target[] {
  const levels = results.scale?.levels ?? [];
  const first = levels[0];
  const judged = levels.filter((level) => level.transactions <= SCALE_TARGET_TRANSACTIONS * SCALE_LEVEL_SLACK);
  const last = judged[judged.length - 1];
  if (first === undefined || last === undefined || last === first) return [];
  const targets: Target[] = [];
  for (const [name, read] of Object.entries(last.reads)) {
    const base = first.reads[name];
    if (base === undefined) continue;
    const ratio = read.latency_ms.p50 / base.latency_ms.p50;
    targets.push({
      name: `${name} p50 latency, ${formatSize(last.transactions)} vs ${formatSize(first.transactions)} transactions`,
      goal: `≤ ${SCALE_LATENCY_RATIO_MAX}×`,
      value: `${ratio.toFixed(2)}× (p99 ${(read.latency_ms.p99 / base.latency_ms.p99).toFixed(2)}×${roundsNote(first, base, last, read)})`,
      met: ratio <= SCALE_LATENCY_RATIO_MAX,
    });
  }
  targets.push({
    name: `peak RSS at ${formatSize(last.transactions)} transactions`,
    goal: `≤ ${PEAK_RSS_BYTES_MAX / 2 ** 20} MiB`,
    value: `${(last.peak_rss_bytes / 2 ** 20).toFixed(0)} MiB`,
    met: last.peak_rss_bytes <= PEAK_RSS_BYTES_MAX,
  });
  return targets;
}

/** "; p50 by round 1.20, 1.31, 1.18 ms at 10k, 1.25, 1.22, 1.40 ms at 1M" when the levels' reads were measured in rounds. */
function roundsNote(first: ScaleLevel, base: ReadPoint, last: ScaleLevel, read: ReadPoint): string {
  if (base.rounds_p50_ms === undefined || read.rounds_p50_ms === undefined) return '';
  const list = (rounds: readonly number[], level: ScaleLevel) => `${rounds.map((p50) => p50.toFixed(2)).join(', ')} ms at ${formatSize(level.transactions)}`;
  return `; p50 by round ${list(base.rounds_p50_ms, first)}, ${list(read.rounds_p50_ms, last)}`;
}

function rate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

/** Every run's share of the bare route ("14 / 16 / 17 %"), or for a batch every run's accepted tx/s. */
function runsCell(scenario: ScenarioResult): string {
  const runs = runsOf(scenario);
  if (scenario.kind === 'batch') return runs.map((run) => rate(run.transactions_per_s ?? 0)).join(' / ');
  return `${runs.map((run) => (run.ratio * 100).toFixed(0)).join(' / ')} %`;
}

function ms(value: number): string {
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

function runLine(results: BenchResults): string {
  const m = results.machine;
  return `Run of ${results.started_at.slice(0, 16).replace('T', ' ')} UTC${results.smoke ? ' (smoke: too short to judge)' : ''}: ${results.store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} store, ` +
    `${m.cpus} × ${m.cpu_model}, ${(m.memory_bytes / 2 ** 30).toFixed(0)} GiB, Node ${m.node}, ${m.platform}, fsync ${m.fsync_ms_p50.toFixed(2)} ms (median 4 KiB write + fsync), load average ${m.load_average_at_start.toFixed(1)} at the start.`;
}

/** The tables of a run: its main scenarios, sealer and durability, scale curve and events scenario (those it made), and its targets. */
export function markdownReport(results: BenchResults): string {
  const parts: string[] = [];
  const ledger = results.main_ledger;
  parts.push(`${runLine(results)}${ledger === null ? '' : ` ${results.settings.duration_s} s per scenario after ${results.settings.warmup_s} s of warm-up; the ledger held ${rate(ledger.transactions)} transactions in ${rate(ledger.blocks)} blocks for the reads.`}`);
  const main_runs = results.main_runs ?? [];
  if (main_runs.length > 1) {
    const clock = (iso: string) => iso.slice(11, 16);
    parts.push(`**Main scenarios: median of ${main_runs.length} runs**, each on a new ledger (started ${main_runs.map((run) => clock(run.started_at)).join(', ')} UTC; ` +
      `load average ${main_runs.map((run) => run.load_average_at_start.toFixed(1)).join(', ')} at their starts). Each row is that scenario's median run ` +
      '(by its share of the bare route; batches by tx/s); the last column is every run\'s share (batches: tx/s), in the order they ran.');
  }
  if (results.scenarios.length > 0) {
    const several = main_runs.length > 1;
    parts.push(table(
      ['scenario', 'conn.', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'bare req/s', 'bare p99 ms', 'vs bare', 'tx/s', 'load avg', ...(several ? ['runs'] : [])],
      results.scenarios.map((scenario) => [
        scenario.title, String(scenario.connections), rate(scenario.service.requests_per_s), ms(scenario.service.latency_ms.p50), ms(scenario.service.latency_ms.p99),
        String(scenario.service.errors), rate(scenario.bare.requests_per_s), ms(scenario.bare.latency_ms.p99), `${(scenario.ratio * 100).toFixed(0)} %`,
        scenario.transactions_per_s === null ? '' : rate(scenario.transactions_per_s), scenario.load_average.toFixed(1),
        ...(several ? [runsCell(scenario)] : []),
      ]),
    ));
  }
  const s = results.sealer;
  const durability = results.durability;
  if (s !== null && durability !== null) {
    parts.push(`**Sealer:** ${rate(s.transactions)} preloaded transfers sealed in ${s.blocks} blocks (BLOCK_TXS_MAX=100000) in ${s.seal_s.toFixed(2)} s of sealing: ` +
      `**${rate(s.transactions_per_s)} tx/s** (${rate(s.wall_transactions_per_s)} tx/s counting the restart, ${s.wall_s.toFixed(1)} s)` +
      `${(s.runs_transactions_per_s?.length ?? 0) > 1 ? `, the median of ${s.runs_transactions_per_s?.map(rate).join(', ')} tx/s` : ''}. ` +
      `**Durability:** ${rate(durability.acknowledged)} submissions acknowledged, ${rate(durability.found_after_kill)} in the ledger after \`kill -9\` and a restart, ${durability.lost} lost.`);
  }
  const levels = results.scale?.levels ?? [];
  if (levels.length > 0) {
    const names = Object.keys(levels[0]?.reads ?? {});
    const settled = levels.some((level) => (level.settle_s ?? 0) > 0);
    const rounds = levels[0]?.reads[names[0] ?? '']?.rounds_p50_ms?.length ?? 1;
    const rounds_text = rounds > 1 ? `, each read ${rounds} times in turn and reported by its median round (by p50)` : '';
    parts.push(`**Scale curve** (${results.settings.scale_duration_s} s per read${rounds_text}, ${results.settings.connections} connections; p50 / p99 ms` +
      `${settled ? `; each level's reads start once the database has settled after the load: ${results.store === 'sqlite' ? 'its WAL checkpointed' : 'a `VACUUM (ANALYZE)` and a `CHECKPOINT`'}` : ''}):`);
    parts.push(table(
      ['transactions', 'users', 'blocks', 'loaded at tx/s', ...(settled ? ['settled in s'] : []), 'peak RSS MiB', 'database MiB (bytes/tx)', ...names],
      levels.map((level) => [
        formatSize(level.transactions), rate(level.users), `${rate(level.blocks)}${level.block_txs_max === undefined ? '' : ` (≤ ${rate(level.block_txs_max)} tx)`}`,
        rate(level.load_transactions_per_s), ...(settled ? [(level.settle_s ?? 0).toFixed(1)] : []), (level.peak_rss_bytes / 2 ** 20).toFixed(0),
        level.database_bytes === undefined ? '' : `${(level.database_bytes / 2 ** 20).toFixed(0)} (${rate(level.database_bytes / level.transactions)})`,
        ...names.map((name) => {
          const read = level.reads[name];
          return read === undefined ? '' : `${ms(read.latency_ms.p50)} / ${ms(read.latency_ms.p99)}${read.errors > 0 ? ` (${read.errors} errors)` : ''}`;
        }),
      ]),
    ));
  }
  if (results.events !== null) parts.push(...eventsTables(results.events));
  if (results.swaps != null) parts.push(swapsLine(results.swaps));
  parts.push('**Targets:**');
  parts.push(targetsTable(results.targets));
  return parts.join('\n\n');
}

/** The events scenario alone (for its own block of docs/performance.md): the run, its table and its targets. */
export function eventsMarkdown(results: BenchResults): string {
  if (results.events === null) return '';
  return [runLine(results), ...eventsTables(results.events), '**Targets:**', targetsTable(eventsTargets(results))].join('\n\n');
}

function eventsTables(events: EventsResult): string[] {
  return [
    `**Events** (${rate(events.subscribers)} SSE streams, ${rate(events.rate_per_s)} submissions/s for ${events.duration_s} s after ${events.warmup_s} s of warm-up; ` +
      'lag: from the submitter receiving the 202 to a stream receiving the `transaction.accepted`, every stream and every measured transaction; ' +
      'confirmed: from the 202 to the `transaction.confirmed`, waiting for the block included; RSS: the instance holding the streams, before they opened → the most while open):',
    table(
      ['streams', 'lag p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'confirmed p50 / p99 ms', 'fan-out p99 ms', 'events/s delivered', 'submit p99 ms', 'RSS MiB', 'heap / external MiB', 'service CPU / waiting for CPU', 'subscribers CPU', 'errors', 'load avg'],
      events.placements.map((placement) => {
        const lag = placement.streams.lag_from_ack_ms;
        const confirmed = placement.streams.confirmed_from_ack_ms;
        return [
          placement.title, ms(lag.p50), ms(lag.p90), ms(lag.p99), ms(lag.max), `${ms(confirmed.p50)} / ${ms(confirmed.p99)}`, ms(placement.streams.fanout_spread_ms.p99),
          rate(placement.delivered_events_per_s), ms(placement.submitter.latency_ms.p99),
          `${mib(placement.service.rss_before_bytes)} → ${mib(placement.service.rss_peak_bytes)}`,
          `${mib(placement.service.heap_used_peak_bytes)} / ${mib(placement.service.external_peak_bytes)}`,
          `${placement.service.cpu_percent.toFixed(0)} % / ${placement.service.cpu_wait_percent.toFixed(0)} %`,
          `${placement.streams.cpu_percent.toFixed(0)} %`, String(placement.errors), placement.load_average.toFixed(1),
        ];
      }),
    ),
  ];
}

/** Swap-heavy sealing in one paragraph: both workloads' tx/s and the ratio. */
export function swapsLine(swaps: SwapSealingResult): string {
  return `**Swap-heavy sealing:** ${rate(swaps.transactions)} preloaded swaps against a seeded pool (${rate(swaps.accounts)} accounts, both directions) vs as many transfers, ` +
    `BLOCK_TXS_MAX=${swaps.block_txs_max}, balance commitment kept, faster of two runs each: transfers **${rate(swaps.transfer.transactions_per_s)} tx/s** (${swaps.transfer.blocks} blocks, ${swaps.transfer.ms_per_block} ms each), ` +
    `swaps **${rate(swaps.swap.transactions_per_s)} tx/s** (${swaps.swap.blocks} blocks, ${swaps.swap.ms_per_block} ms each): swaps take **${swaps.slowdown.toFixed(2)}×** as long.`;
}

function targetsTable(targets: Target[]): string {
  return table(['target', 'goal', 'measured', 'met'], targets.map((target) => [target.name, target.goal, target.value, target.met === null ? '—' : target.met ? 'yes' : '**no**']));
}

export function printReport(results: BenchResults): void {
  const lines = ['', markdownReport(results), ''];
  process.stdout.write(lines.join('\n'));
  const missed = results.targets.filter((target) => target.met === false).length;
  process.stdout.write(`\n${results.targets.filter((target) => target.met === true).length} targets met, ${missed} missed${results.smoke ? ' (smoke run: not meaningful)' : ''}\n`);
}
