/**
 * The benchmark's smoke run (`npm run bench -- --smoke`): every scenario, a few seconds in all, so the
 * benchmark cannot rot. No timing is asserted (speed is judged by full runs, not by tests): only that
 * every scenario ran, answered without errors (the events scenario: every stream saw every event, in
 * sequence, to the end), and that the results and the chart were written.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchResults } from '../../bench/report.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SMOKE_TIMEOUT_MS = 240_000;

describe('benchmark smoke run', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-bench-smoke-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('runs every scenario with zero errors and writes its results and chart', () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BENCH_')));
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke', '--results-dir', dir], {
      cwd: ROOT, env, encoding: 'utf8', timeout: SMOKE_TIMEOUT_MS,
    });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const files = fs.readdirSync(dir);
    expect(files).toEqual(expect.arrayContaining(['latest.json', 'latest.md', 'chart.svg']));
    expect(files.filter((file) => /^\d{4}-\d\d-\d\dT.*\.json$/.test(file))).toHaveLength(1);

    const results = JSON.parse(fs.readFileSync(path.join(dir, 'latest.json'), 'utf8')) as BenchResults;
    expect(results.smoke).toBe(true);
    expect(results.scenarios.map((scenario) => scenario.name)).toEqual(
      ['submit_many', 'submit_hot', 'submit_keyed', 'batch', 'tx_lookup', 'balance', 'account_history', 'blocks_first', 'blocks_deep', 'stats'],
    );
    for (const scenario of results.scenarios) {
      expect(scenario.service.requests, scenario.name).toBeGreaterThan(0);
      expect(scenario.service.errors, scenario.name).toBe(0);
      expect(scenario.bare.requests, `${scenario.name} (bare)`).toBeGreaterThan(0);
      expect(scenario.bare.errors, `${scenario.name} (bare)`).toBe(0);
      expect(scenario.ratio, scenario.name).toBeGreaterThan(0);
    }
    const batch = results.scenarios.find((scenario) => scenario.name === 'batch');
    expect(batch?.service.batch_items?.rejected).toBe(0);
    expect(batch?.service.batch_items?.accepted).toBeGreaterThan(0);

    expect(results.durability?.lost).toBe(0);
    expect(results.durability?.found_after_kill).toBeGreaterThanOrEqual(results.durability?.acknowledged ?? Infinity);
    expect(results.sealer?.pending).toBe(2000);
    expect(results.sealer?.transactions).toBe(2000);
    expect(results.sealer?.transactions_per_s).toBeGreaterThan(0);

    // The events scenario (SQLite: the streams on the instance that takes the submissions).
    expect(results.events?.placements.map((placement) => placement.name)).toEqual(['same_instance']);
    for (const placement of results.events?.placements ?? []) {
      expect(placement.errors, JSON.stringify(placement.streams.end_reasons)).toBe(0);
      expect(placement.submitter.errors, placement.submitter.error_samples.join('; ')).toBe(0);
      expect(placement.streams.opened).toBe(results.events?.subscribers);
      expect(placement.streams.complete).toBe(results.events?.subscribers);
      expect(placement.streams.ended_early).toBe(0);
      expect(placement.streams.out_of_sequence).toBe(0);
      expect(placement.streams.missing_accepted).toBe(0);
      expect(placement.streams.lag_from_ack_ms.count).toBe(placement.submitter.measured * placement.streams.subscribers);
      expect(placement.submitter.measured).toBeGreaterThan(0);
      expect(placement.service.rss_peak_bytes).toBeGreaterThan(0);
    }

    // 500 then 2k of 1,000 users: the second level mixes new users' mints with transfers that spend them.
    expect(results.scale?.levels.map((level) => level.transactions)).toEqual([500, 2000]);
    for (const level of results.scale?.levels ?? []) {
      expect(level.peak_rss_bytes).toBeGreaterThan(0);
      expect(Object.keys(level.reads)).toEqual(['tx_lookup', 'balance', 'account_history', 'blocks_first', 'blocks_deep', 'stats']);
      for (const [name, read] of Object.entries(level.reads)) {
        expect(read.requests, name).toBeGreaterThan(0);
        expect(read.errors, name).toBe(0);
      }
    }
    // Swap-heavy sealing (issue 16): every preloaded swap and transfer confirmed, both rates and their ratio reported.
    expect(results.swaps?.store).toBe('sqlite');
    for (const workload of [results.swaps?.transfer, results.swaps?.swap]) {
      expect(workload?.transactions).toBe(2000);
      expect(workload?.confirmed).toBe(2000);
      expect(workload?.transactions_per_s).toBeGreaterThan(0);
    }
    expect(results.swaps?.slowdown).toBeGreaterThan(0);
    expect(results.targets.map((target) => target.name)).toContain('swap-heavy sealing vs transfers (SQLite)');
    expect(results.targets.length).toBeGreaterThan(10);
    expect(fs.readFileSync(path.join(dir, 'chart.svg'), 'utf8')).toMatch(/^<svg [^>]*>[\s\S]*<\/svg>\n$/);
    expect(run.stdout).toContain('| scenario |');
  }, SMOKE_TIMEOUT_MS);
});
