/**
 * The benchmark's judgement (bench/report.ts): issue 10's targets per store, the median of several runs
 * of the main scenarios (`--runs`) and of the scale curve's rounds of reads, from made-up results (no
 * timing is measured here).
 */
import { describe, expect, it } from 'vitest';
import type { LoadResult } from '../../bench/load-types.js';
import { judgeTargets, markdownReport, median, medianOfRuns, medianReadPoint, type BenchResults, type MainRun, type ReadPoint, type ScaleLevel, type ScenarioResult } from '../../bench/report.js';

const latency = (p99: number) => ({ p50: p99 / 4, p90: p99 / 2, p99, max: p99 * 2, mean: p99 / 4 });

function scenario(name: string, kind: ScenarioResult['kind'], ratio: number, options: { p99_ms?: number; bare_p99_ms?: number; tx_per_s?: number } = {}): ScenarioResult {
  const bare_rps = 40_000;
  const service: LoadResult = {
    requests: 1000, duration_s: 8, requests_per_s: bare_rps * ratio, latency_ms: latency(options.p99_ms ?? 10), status_counts: { 200: 1000 }, errors: 0, batch_items: null, acknowledged: 1000,
  };
  return {
    name, title: name, kind, connections: kind === 'batch' ? 8 : 64, request_bytes: 100, response_bytes: 100,
    service,
    load_average: 1.5,
    bare: { ...service, requests_per_s: bare_rps, latency_ms: latency(options.bare_p99_ms ?? 2) },
    ratio,
    transactions_per_s: kind === 'read' ? null : options.tx_per_s ?? bare_rps * ratio,
  };
}

function sealer(transactions_per_s: number): NonNullable<BenchResults['sealer']> {
  return { pending: 200_000, transactions: 200_000, blocks: 2, seal_s: 200_000 / transactions_per_s, transactions_per_s, wall_s: 3, wall_transactions_per_s: 60_000 };
}

function mainRun(started_at: string, submit_ratio: number, batch_tx_per_s: number, read_ratio: number, sealer_tx_per_s: number, lost = 0): MainRun {
  return {
    started_at, load_average_at_start: 1.2,
    scenarios: [
      scenario('submit_many', 'submit', submit_ratio, { p99_ms: 9, bare_p99_ms: 3 }),
      scenario('batch', 'batch', 0.01, { tx_per_s: batch_tx_per_s }),
      scenario('tx_lookup', 'read', read_ratio),
    ],
    durability: { acknowledged: 1000, found_after_kill: 1000 - lost, lost },
    sealer: sealer(sealer_tx_per_s),
    main_ledger: { transactions: 1000, blocks: 3, users: 10 },
  };
}

function results(store: BenchResults['store'], main: ReturnType<typeof medianOfRuns>): BenchResults {
  return {
    started_at: '2026-11-27T10:00:00.000Z', finished_at: '2026-11-27T10:30:00.000Z', smoke: false, store,
    settings: { duration_s: 8, warmup_s: 2, connections: 64 }, parts: ['main'],
    machine: { cpus: 2, cpu_model: 'test', memory_bytes: 2 ** 34, node: 'v24', platform: 'linux', fsync_ms_p50: 0.1, load_average_at_start: 1 },
    ...main, scale: null, events: null, swaps: null, targets: [],
  };
}

const target = (all: ReturnType<typeof judgeTargets>, prefix: string) => all.find((item) => item.name.startsWith(prefix));

describe('median of several runs of the main scenarios', () => {
  it('takes each scenario\'s median run, keeps every run\'s figures, and sums durability', () => {
    const runs = [mainRun('2026-11-27T10:00:00Z', 0.17, 14_000, 0.8, 90_000), mainRun('2026-11-27T10:05:00Z', 0.35, 12_000, 0.7, 110_000), mainRun('2026-11-27T10:10:00Z', 0.15, 16_000, 0.9, 100_000, 1)];
    const main = medianOfRuns(runs);
    expect(main.scenarios.map((item) => item.name)).toEqual(['submit_many', 'batch', 'tx_lookup']);
    expect(main.scenarios[0]?.ratio).toBe(0.17);
    expect(main.scenarios[0]?.runs?.map((run) => run.ratio)).toEqual([0.17, 0.35, 0.15]);
    expect(main.scenarios[1]?.transactions_per_s).toBe(14_000);
    expect(main.scenarios[2]?.ratio).toBe(0.8);
    expect(main.sealer?.transactions_per_s).toBe(100_000);
    expect(main.sealer?.runs_transactions_per_s).toEqual([90_000, 110_000, 100_000]);
    expect(main.durability).toEqual({ acknowledged: 3000, found_after_kill: 2999, lost: 1 });
    expect(main.main_runs?.map((run) => run.started_at)).toEqual(runs.map((run) => run.started_at));
    const report = markdownReport(results('sqlite', main));
    expect(report).toContain('median of 3 runs');
    expect(report).toContain('| 17 / 35 / 15 % |');
    expect(report).toContain('the median of 90,000, 110,000, 100,000 tx/s');
  });

  it('is the run itself when there is one', () => {
    const run = mainRun('2026-11-27T10:00:00Z', 0.2, 14_000, 0.8, 90_000);
    const main = medianOfRuns([run]);
    expect(main.scenarios).toBe(run.scenarios);
    expect(main.main_runs).toBeUndefined();
    expect(main.sealer?.runs_transactions_per_s).toBeUndefined();
  });

  it('takes a measured value of an even count (the lower middle)', () => {
    expect(median([4, 1, 3, 2])).toBe(2);
    expect(median([5])).toBe(5);
  });
});

describe("issue 10's targets, per store", () => {
  const runs = [mainRun('2026-11-27T10:00:00Z', 0.4, 60_000, 0.6, 60_000), mainRun('2026-11-27T10:05:00Z', 0.36, 55_000, 0.55, 55_000), mainRun('2026-11-27T10:10:00Z', 0.3, 40_000, 0.45, 45_000)];

  it('judges SQLite against 50 % / 3× p99, 100k tx/s batches and sealing, 70 % reads', () => {
    const main = medianOfRuns(runs);
    const targets = judgeTargets(results('sqlite', main));
    expect(target(targets, 'submit_many: vs bare')).toMatchObject({ goal: '≥ 50 %', value: '36 % (median of 40, 36, 30 %)', met: false });
    expect(target(targets, 'submit_many: p99')).toMatchObject({ goal: '≤ 3×', met: true });
    expect(target(targets, 'batch submission')).toMatchObject({ goal: '≥ 100k tx/s', met: false });
    expect(target(targets, 'sealer (SQLite)')).toMatchObject({ goal: '≥ 100k tx/s', met: false });
    expect(target(targets, 'tx_lookup: vs bare')).toMatchObject({ goal: '≥ 70 %', met: false });
    expect(target(targets, 'every acknowledged')).toMatchObject({ met: true });
  });

  it('judges PostgreSQL against 35 % / 4× p99, 50k tx/s batches and sealing, 50 % reads', () => {
    const main = medianOfRuns(runs);
    const targets = judgeTargets(results('postgres', main));
    expect(target(targets, 'submit_many: vs bare')).toMatchObject({ goal: '≥ 35 %', met: true });
    expect(target(targets, 'submit_many: p99')).toMatchObject({ goal: '≤ 4×', value: expect.stringMatching(/^3\.0×/), met: true });
    expect(target(targets, 'batch submission')).toMatchObject({ goal: '≥ 50k tx/s', value: '55,000 tx/s (median of 60,000, 55,000, 40,000)', met: true });
    expect(target(targets, 'sealer (PostgreSQL)')).toMatchObject({ goal: '≥ 50k tx/s', met: true });
    expect(target(targets, 'tx_lookup: vs bare')).toMatchObject({ goal: '≥ 50 %', met: true });
  });

  it('judges a submit p99 as a multiple of the bare route\'s, failing past the store\'s factor', () => {
    const slow = mainRun('2026-11-27T10:00:00Z', 0.4, 60_000, 0.6, 60_000);
    slow.scenarios[0] = scenario('submit_many', 'submit', 0.4, { p99_ms: 13, bare_p99_ms: 3 });
    const targets = judgeTargets(results('postgres', medianOfRuns([slow])));
    expect(target(targets, 'submit_many: p99')).toMatchObject({ value: '4.3× (13.0 against 3.00 ms)', met: false });
  });

  it('reports the keyed submissions beside the others without judging them (no target names them)', () => {
    const run = mainRun('2026-11-27T10:00:00Z', 0.4, 60_000, 0.6, 60_000);
    run.scenarios.splice(1, 0, scenario('submit_keyed', 'submit', 0.1, { p99_ms: 30, bare_p99_ms: 3 }));
    const judged = results('sqlite', medianOfRuns([run]));
    const targets = judgeTargets(judged);
    expect(target(targets, 'submit_many: vs bare')).toBeDefined();
    expect(targets.filter((item) => item.name.startsWith('submit_keyed'))).toEqual([]);
    expect(markdownReport({ ...judged, targets })).toContain('| submit_keyed |');
  });
});

const readPoint = (p50: number, errors = 0): ReadPoint => ({ requests_per_s: 1000 / p50, latency_ms: { p50, p90: p50 * 2, p99: p50 * 4, max: p50 * 8, mean: p50 }, errors, requests: 5000 });

function scaleLevel(transactions: number, reads: ScaleLevel['reads']): ScaleLevel {
  return { transactions, users: Math.min(transactions, 10_000), blocks: transactions / 250, load_s: 1, load_transactions_per_s: transactions, peak_rss_bytes: 200 * 2 ** 20, reads };
}

describe("the scale curve's reads in rounds", () => {
  it('reports a read by its median round, with every round\'s p50 and the errors of all rounds', () => {
    const point = medianReadPoint([readPoint(2.5), readPoint(1.1, 3), readPoint(1.3)]);
    expect(point.latency_ms.p50).toBe(1.3);
    expect(point.rounds_p50_ms).toEqual([2.5, 1.1, 1.3]);
    expect(point.errors).toBe(3);
  });

  it('is the round itself when there is one', () => {
    const only = readPoint(1.7, 2);
    expect(medianReadPoint([only])).toBe(only);
  });

  it('judges 1M against 10k by the median rounds, and shows every round', () => {
    const first = scaleLevel(10_000, { balance: medianReadPoint([readPoint(1.0), readPoint(3.0), readPoint(1.2)]) });
    const last = scaleLevel(1_000_000, { balance: medianReadPoint([readPoint(1.5), readPoint(1.6), readPoint(1.4)]) });
    const judged = { ...results('postgres', medianOfRuns([mainRun('2026-11-27T10:00:00Z', 0.4, 60_000, 0.6, 60_000)])), scale: { levels: [first, last] } };
    const targets = judgeTargets(judged);
    // One slow round at 10k (3.0 ms) would make 1M look fast; the medians (1.2 and 1.5 ms) judge 1.25×.
    expect(target(targets, 'balance p50 latency')).toMatchObject({
      value: '1.25× (p99 1.25×; p50 by round 1.00, 3.00, 1.20 ms at 10k, 1.50, 1.60, 1.40 ms at 1M)', met: true,
    });
    expect(markdownReport({ ...judged, targets })).toContain('each read 3 times in turn and reported by its median round (by p50)');
  });
});
