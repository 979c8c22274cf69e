/**
 * `bench/writer-thread-cost.ts` on a small ledger: it appends what it was asked both on the event loop and
 * through a worker thread, checks the rows' numbers each way, and reports both; it refuses a size that is not
 * a positive integer. No timing is asserted (speed is judged by full runs), only that the measurement is made.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RUN_TIMEOUT_MS = 120_000;

function writerThreadCost(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['--import', 'tsx', 'bench/writer-thread-cost.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: RUN_TIMEOUT_MS });
}

describe('writer-thread-cost', () => {
  it('appends on the loop and on a worker, in groups of --group, and reports the loop\'s busy time for each', () => {
    const run = writerThreadCost(['500', '--group', '50', '--rounds', '1']);
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.way)).toEqual(['on the loop', 'on a worker']);
    for (const line of lines) {
      expect(line).toMatchObject({ round: 1, group: 50, transactions: 500 });
      expect(line.busy_us_per_tx).toBeGreaterThan(0);
      expect(line.main_thread_cpu_us_per_tx).toBeGreaterThanOrEqual(0);
      expect(line.tx_per_s).toBeGreaterThan(0);
    }
  }, RUN_TIMEOUT_MS);

  it('refuses a group that is not a positive integer', () => {
    const run = writerThreadCost(['500', '--group', '0']);
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('--group must be a positive integer');
  }, RUN_TIMEOUT_MS);
});
