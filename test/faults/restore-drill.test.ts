/**
 * The restore drill, as an operator would run it: the real service on SQLite under concurrent
 * submissions; `tabula backup` taken while it keeps writing; the backup put in place in a new data
 * folder; `tabula audit` passes on it (and on the live database, still under load); a service started on the restored copy has every transaction
 * acknowledged (202) before the backup began, seals what was pending in it, and the chain still
 * audits, offline and through the API.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ROOT, ServiceProcess } from '../support/service-process.js';

const BIN = path.join(ROOT, 'dist/cli/tabula.js');
const WORKERS = 8;
const ACKNOWLEDGED_BEFORE_BACKUP_MIN = 300;
const SERVICE_ENV = { JWT_SECRET: TEST_SECRET, RATE_LIMIT_MAX: '10000000', FAILURE_BUDGET_PER_HOUR: '1000000', BLOCK_INTERVAL_MS: '50' };

type Run = { status: number; stdout: string; stderr: string };

function tabula(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

type Acknowledged = { tx_hash: string; at_ms: number };

/** Workers submitting mints and transfers until stopped; every 202 is recorded with the time it arrived. */
function startLoad(url: string, token: string): { acknowledged: Acknowledged[]; failures: string[]; stop(): Promise<void> } {
  const acknowledged: Acknowledged[] = [];
  const failures: string[] = [];
  let running = true;
  const submit = async (worker: number, index: number): Promise<void> => {
    const user = `user-${worker}-${index % 20}`;
    const body = index % 3 === 0
      ? { from: user, to: `user-${(worker + 1) % WORKERS}-${index % 20}`, amount: 1, token: 'TAB', type: 'transfer' }
      : { from: 'treasury', to: user, amount: 10 + (index % 7), token: index % 2 === 0 ? 'TAB' : 'USDG', type: 'mint', metadata: { worker, index } };
    const response = await fetch(`${url}/api/transactions/submit`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const answer = (await response.json()) as { tx_hash?: string };
    if (response.status === 202 && answer.tx_hash !== undefined) acknowledged.push({ tx_hash: answer.tx_hash, at_ms: performance.now() });
    else failures.push(`${response.status} ${JSON.stringify(answer)}`);
  };
  const workers = Array.from({ length: WORKERS }, async (_, worker) => {
    for (let index = 0; running; index += 1) await submit(worker, index);
  });
  return {
    acknowledged,
    failures,
    stop: async () => {
      running = false;
      await Promise.all(workers);
    },
  };
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeout_ms = 30_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function getTransaction(url: string, token: string, tx_hash: string): Promise<{ status: number; body: { status?: string } }> {
  const response = await fetch(`${url}/api/transactions/${tx_hash}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as { status?: string } };
}

describe('restore drill on SQLite', () => {
  const restore_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-restore-'));
  const backup_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-backup-'));
  let original: ServiceProcess | null = null;
  let restored: ServiceProcess | null = null;

  afterAll(async () => {
    await original?.close();
    await restored?.close();
    fs.rmSync(restore_dir, { recursive: true, force: true });
    fs.rmSync(backup_dir, { recursive: true, force: true });
  });

  it('backs up under load, restores into a new folder, audits, and keeps everything acknowledged before the backup', { timeout: 180_000 }, async () => {
    original = await ServiceProcess.start({ env: SERVICE_ENV });
    const load = startLoad(original.url, await original.token('treasury', { admin: true }));
    let before: Acknowledged[] = [];
    let backup: Run;
    let live_audit: Run;
    try {
      await waitFor(`${ACKNOWLEDGED_BEFORE_BACKUP_MIN} acknowledged submissions`, () => load.acknowledged.length >= ACKNOWLEDGED_BEFORE_BACKUP_MIN);
      const backup_started_ms = performance.now();
      before = load.acknowledged.filter((item) => item.at_ms < backup_started_ms);
      backup = await tabula(['backup', path.join(backup_dir, 'ledger-backup.db'), '--database-url', original.database_path, '--json']);
      // The service kept taking submissions while the backup ran, and after it.
      const after_backup = load.acknowledged.length;
      await waitFor('submissions acknowledged after the backup', () => load.acknowledged.length > after_backup + WORKERS);
      // The audit reads one snapshot: it passes on the live database too, while blocks are being sealed.
      live_audit = await tabula(['audit', '--database-url', original.database_path]);
    } finally {
      await load.stop();
    }
    expect(load.failures).toEqual([]);
    expect(live_audit.status, live_audit.stderr).toBe(0);
    expect(backup.status, backup.stderr).toBe(0);
    const report = JSON.parse(backup.stdout) as { integrity_check: string; latest_block: { number: number } | null; sealed_transactions: number; pending_transactions: number };
    expect(report.integrity_check).toBe('ok');
    expect(report.latest_block?.number).toBeGreaterThan(0);
    expect(report.sealed_transactions + report.pending_transactions).toBeGreaterThanOrEqual(before.length);
    expect(report.sealed_transactions + report.pending_transactions).toBeLessThan(load.acknowledged.length);
    expect(fs.readdirSync(backup_dir)).toEqual(['ledger-backup.db']);

    // A second backup to the same file is refused: a backup never overwrites.
    const again = await tabula(['backup', path.join(backup_dir, 'ledger-backup.db'), '--database-url', original.database_path]);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('exists: a backup never overwrites a file');

    // Restore: the copy put in place in a new data folder, audited before anything uses it.
    const restored_file = path.join(restore_dir, 'ledger.db');
    fs.copyFileSync(path.join(backup_dir, 'ledger-backup.db'), restored_file);
    const audit = await tabula(['audit', '--json'], { DATABASE_URL: `sqlite:${restored_file}` });
    expect(audit.status, audit.stderr).toBe(0);
    expect(JSON.parse(audit.stdout)).toMatchObject({ audited: true, transactions_replayed: report.sealed_transactions, unsealed_transactions: report.pending_transactions });

    restored = await ServiceProcess.start({ data_dir: restore_dir, env: SERVICE_ENV });
    const token = await restored.token('auditor');
    const missing: string[] = [];
    for (let start = 0; start < before.length; start += 50) {
      const answers = await Promise.all(before.slice(start, start + 50).map((item) => getTransaction(restored!.url, token, item.tx_hash)));
      answers.forEach((answer, offset) => {
        if (answer.status !== 200) missing.push(`${before[start + offset]?.tx_hash}: ${answer.status}`);
      });
    }
    expect(missing).toEqual([]);
    // What was pending in the backup is sealed by the restored service.
    const last = before.at(-1) as Acknowledged;
    await waitFor('the restored service to seal what was pending', async () => (await getTransaction(restored!.url, token, last.tx_hash)).body.status !== 'pending');
    const verify = await tabula(['verify'], { TABULA_URL: restored.url, TABULA_TOKEN: token });
    expect(verify.status, verify.stderr).toBe(0);
    // A graceful stop seals whatever is still pending; then the whole ledger audits offline.
    expect((await restored.stop()).code).toBe(0);
    const final = await tabula(['audit', '--database-url', restored_file, '--json']);
    expect(final.status, final.stderr).toBe(0);
    expect(JSON.parse(final.stdout)).toMatchObject({ audited: true, transactions_replayed: report.sealed_transactions + report.pending_transactions, unsealed_transactions: 0 });
  });
});
