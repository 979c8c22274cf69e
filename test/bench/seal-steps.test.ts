/**
 * `bench/seal-steps.ts`, on a small ledger: it seals what it preloaded, times each store call, and with
 * `--allocation-profile` writes what the seal allocated as a heap profile and names the top allocating
 * functions. No timing is asserted (speed is judged by full runs), only that the measurement is made.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RUN_TIMEOUT_MS = 120_000;

type SealSteps = {
  transactions: number; blocks: number; tx_per_s: number; steps: Record<string, { ms: number }>;
  allocated_mib_sampled?: number; allocating_functions_mib?: Record<string, number>;
};

function sealSteps(args: string[]): SealSteps {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/seal-steps.ts', 'sqlite', '3000', '1000', ...args], {
    cwd: ROOT, encoding: 'utf8', timeout: RUN_TIMEOUT_MS,
  });
  expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout) as SealSteps;
}

describe('seal-steps', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-seal-steps-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('seals the preloaded transfers in blocks of the size asked for and times the store calls', () => {
    const result = sealSteps([]);
    expect(result.transactions).toBe(3000);
    expect(result.blocks).toBe(3);
    expect(Object.keys(result.steps)).toEqual(expect.arrayContaining(['pendingPostings', 'commitBlock']));
    expect(result.allocated_mib_sampled).toBeUndefined();
  }, RUN_TIMEOUT_MS);

  it('with --allocation-profile, writes the seal\'s allocations as a heap profile and names where they were made', () => {
    const file = path.join(dir, 'seal.heapprofile');
    const result = sealSteps(['--allocation-profile', file]);
    expect(result.blocks).toBe(3);
    const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as { head: { children: unknown[] }; samples: unknown[] };
    expect(profile.head.children.length).toBeGreaterThan(0);
    expect(profile.samples.length).toBeGreaterThan(0);
    expect(result.allocated_mib_sampled).toBeGreaterThan(0);
    // The pending rows are read for every block: their reader allocates on every run.
    expect(Object.keys(result.allocating_functions_mib ?? {}).some((site) => site.startsWith('pendingPostings '))).toBe(true);
  }, RUN_TIMEOUT_MS);
});
