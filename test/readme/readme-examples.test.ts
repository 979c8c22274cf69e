/**
 * The README's curl examples, run as printed (only the URL line is pointed at this test's port)
 * against the real process started like `npm start` does, with the development token command — on
 * SQLite and on PostgreSQL (the project's store kind).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

function readmeBlock(marker: string): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = readme.split(`<!-- ${marker}:start -->`)[1]?.split(`<!-- ${marker}:end -->`)[0] ?? '';
  const script = /```bash\n([\s\S]*?)```/.exec(block)?.[1];
  if (script === undefined) throw new Error(`README has no ${marker} block`);
  return script;
}

function readmeExamples(): string {
  return readmeBlock('readme-examples');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

describe('README examples', () => {
  let child: ChildProcess;
  let url: string;
  let env: NodeJS.ProcessEnv;
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: database.url, LOG_LEVEL: 'warn' };
    delete env.JWT_SECRET; delete env.JWT_ISSUER; delete env.JWT_JWKS_URL; delete env.API_KEYS;
    child = spawn(process.execPath, ['dist/main.js'], { cwd: ROOT, env, stdio: 'ignore' });
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const ready = await fetch(`${url}/readyz`).then((response) => response.ok, () => false);
      if (ready) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the service did not become ready');
  });

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    await database?.drop();
  });

  it('work as printed', () => {
    const script = readmeExamples().replace(/^URL=.*$/m, `URL=${url}`);
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const answers = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const [mint, transaction, proof, balance, history, page, block, stats, problem, health, ready, webhook] = answers;
    expect(answers).toHaveLength(12);
    expect(mint).toMatchObject({ status: 'pending' });
    expect(transaction).toMatchObject({ from: 'alice', to: 'bob', amount: 12.5, status: 'confirmed', metadata: { memo: 'rent' } });
    expect(proof).toMatchObject({ tx_hash: transaction?.tx_hash, block_number: transaction?.block_number });
    expect(balance).toEqual({ user_id: 'alice', native: 87.5, usdg: 0, total_usd: 87.5 });
    expect(history).toEqual({ user_id: 'alice', transactions: [transaction, expect.objectContaining({ tx_hash: mint?.tx_hash, type: 'mint', status: 'confirmed' })], next_cursor: null });
    // The mint and the transfer share block 1 unless a seal (every second) falls between the two curls.
    expect(stats).toMatchObject({ total_transactions: 2, latest_block_number: transaction?.block_number, trading_volume_24h: 0 });
    expect([1, 2]).toContain(stats?.latest_block_number);
    expect(page).toMatchObject({ total: Number(stats?.latest_block_number) + 1, limit: 5, offset: 0 });
    expect(block).toMatchObject({ number: 1, transactions: expect.arrayContaining([mint?.tx_hash]) });
    expect(problem).toMatchObject({ status: 400, code: 'amount_too_precise' });
    expect(health).toEqual({ status: 'ok' });
    expect(ready).toEqual({ status: 'ready' });
    expect(webhook).toMatchObject({ url: 'https://hooks.example.com/tabula', types: ['transaction.confirmed'], accounts: ['carol'], status: 'active' });
    expect(webhook?.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  });

  it('trade on the market as printed, after the walkthrough', () => {
    const script = `${readmeExamples()}\n${readmeBlock('readme-market')}`.replace(/^URL=.*$/m, `URL=${url}`);
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const answers = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(answers).toHaveLength(12 + 6);
    const [liquidity_tab, liquidity_usdg, quote, swap, history, stats] = answers.slice(12);
    expect(liquidity_tab).toMatchObject({ status: 'pending' });
    expect(liquidity_usdg).toMatchObject({ status: 'pending' });
    // 1000 TAB : 1000 USDG, fee 30 bps: floor(1000e6 × 10e8 × 9970 ÷ (1000e8 × 10000 + 10e8 × 9970)) micro-USDG.
    expect(quote).toEqual({ amount_out: 9.87158, token_out: 'USDG', price: 1, price_after: 0.980325168316, fee: 0.03 });
    expect(swap).toMatchObject({ status: 'pending' });
    const candles = history?.candles as Array<Record<string, unknown>>;
    expect(history).toMatchObject({ interval: '1m' });
    expect(candles.at(-1)).toMatchObject({ volume_usd: 9.87158 });
    expect(stats).toMatchObject({ native_price: 0.980325168316, trading_volume_24h: 9.87158 });
  });
});
