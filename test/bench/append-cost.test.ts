/**
 * `bench/append-cost.ts`, on a small ledger of each store: it appends what it was asked in groups of the
 * size asked, measures the groups after the first fifth, and refuses an index it may not drop. No timing
 * is asserted (speed is judged by full runs), only that the measurement is made and reported.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testPostgresUrl } from '../support/test-database.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RUN_TIMEOUT_MS = 120_000;

type AppendCost = {
  store: string; transactions: number; measured: number; batch_size: number; without: string[]; idempotency_keys: boolean;
  us_per_tx: number; tx_per_s: number; written_bytes_per_tx: number | null;
};

function appendCost(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['--import', 'tsx', 'bench/append-cost.ts', ...args], {
    cwd: ROOT, encoding: 'utf8', timeout: RUN_TIMEOUT_MS, env: { ...process.env, TEST_DATABASE_URL: testPostgresUrl() },
  });
}

function measured(args: string[]): AppendCost {
  const run = appendCost(args);
  expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout) as AppendCost;
}

describe('append-cost', () => {
  it.each(['sqlite', 'postgres'])('on %s, appends in groups of --batch and measures those after the first fifth', (store) => {
    const result = measured([store, '500', '--batch', '50', '--idempotency-keys']);
    expect(result).toMatchObject({ store, transactions: 500, measured: 400, batch_size: 50, idempotency_keys: true });
    expect(result.us_per_tx).toBeGreaterThan(0);
    expect(result.tx_per_s).toBeGreaterThan(0);
  }, RUN_TIMEOUT_MS);

  it('drops an index it names with --without, and refuses one it may not drop', () => {
    expect(measured(['sqlite', '200', '--without', 'transactions_by_event']).without).toEqual(['transactions_by_event']);
    const refused = appendCost(['sqlite', '200', '--without', 'transactions_tx_hash']);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('--without takes');
  }, RUN_TIMEOUT_MS);
});
