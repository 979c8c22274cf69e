/**
 * The README's SDK and CLI walkthroughs, run as printed against the real process in development mode
 * (no JWT_SECRET: the service creates its secret, `tabula token` finds it): the SDK installed into a
 * fresh project from this repository's folder, the CLI with npx. Each walkthrough must stay under ten
 * lines. Like the curl examples, it runs once per store (vitest projects sqlite and postgres). The
 * market's SDK and CLI examples ("Trading on the market") run last, on a pool given liquidity as the
 * curl walkthrough before them does, as alice.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { amountUnits } from '@tabula/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

function between(text: string, name: string): string {
  const block = text.split(`<!-- ${name}:start -->`)[1]?.split(`<!-- ${name}:end -->`)[0];
  if (block === undefined) throw new Error(`README has no ${name} block`);
  return block;
}

function fenced(block: string, language: string): string {
  const code = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(block)?.[1];
  if (code === undefined) throw new Error(`no ${language} code in the block`);
  return code;
}

function codeLines(code: string): number {
  return code.split('\n').filter((line) => line.trim() !== '').length;
}

type Run = { status: number; stdout: string; stderr: string };

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
// npm must not reach a registry: everything installed here comes from this repository.
const NPM_OFFLINE = { npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

describe('README SDK and CLI walkthroughs', () => {
  let database: TestDatabase;
  let server: ServiceProcess;
  let env: NodeJS.ProcessEnv;
  let project: string;
  let sdk_installed: Promise<Run> | null = null;
  let market_ready: Promise<void> | null = null;

  /** `npm install` of the README's SDK block into the fresh project, once. */
  function installSdk(): Promise<Run> {
    sdk_installed ??= (async () => {
      const install = fenced(between(README, 'readme-sdk'), 'bash').replace('/path/to/tabula', ROOT);
      fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'sdk-user', version: '1.0.0', private: true }));
      return run('bash', ['-euo', 'pipefail', '-c', install], project, env);
    })();
    return sdk_installed;
  }

  async function cliToken(user: string, ...flags: string[]): Promise<string> {
    const token = await run(process.execPath, ['dist/cli/tabula.js', 'token', user, ...flags], ROOT, env);
    expect(token.status, token.stderr).toBe(0);
    return token.stdout.trim();
  }

  /** The README market walkthrough's liquidity (1000 TAB and 1000 USDG in the pool) and alice's 100 TAB, once. */
  function provideLiquidity(): Promise<void> {
    market_ready ??= (async () => {
      const admin_env = { ...env, TABULA_URL: server.url, TABULA_TOKEN: await cliToken('treasury', '--admin') };
      for (const [to, amount, token] of [['@pool', '1000', 'TAB'], ['@pool', '1000', 'USDG'], ['alice', '100', 'TAB']] as const) {
        const minted = await run(process.execPath, ['dist/cli/tabula.js', 'submit', '--from', 'treasury', '--to', to, '--amount', amount, '--token', token, '--type', 'mint', '--wait'], ROOT, admin_env);
        expect(minted.stdout, minted.stderr).toMatch(/^status +confirmed$/m);
      }
    })();
    return market_ready;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    server = await ServiceProcess.start({ env: { DATABASE_URL: database.url } });
    env = { ...process.env, ...NPM_OFFLINE, DATABASE_URL: server.env.DATABASE_URL, LOG_LEVEL: 'warn' };
    delete env.JWT_SECRET; delete env.JWT_ISSUER; delete env.JWT_JWKS_URL; delete env.API_KEYS; delete env.TABULA_API_KEY;
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-sdk-user-'));
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
    fs.rmSync(project, { recursive: true, force: true });
  });

  it('the CLI walkthrough works as printed', async () => {
    const script = fenced(between(README, 'readme-cli'), 'bash');
    expect(codeLines(script)).toBeLessThan(10);
    const pointed = script.replace('http://localhost:8080', server.url);
    expect(pointed).not.toBe(script);
    const result = await run('bash', ['-euo', 'pipefail', '-c', pointed], ROOT, env);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^status +confirmed$/m);
    expect(result.stdout).toMatch(/^amount +100 TAB$/m);
    expect(result.stdout).toMatch(/^verified transaction 0x[0-9a-f]{64} \(confirmed\)$/m);
    expect(result.stdout).toMatch(/^verified blocks 0\.\.\d+ /m);
    expect(result.stdout).toMatch(/^audited .+: blocks 0\.\.\d+ \(\d+ blocks\), \d+ transactions replayed from genesis/m);
    // `tabula watch --after 0 --limit 4`: the log from its start, genesis first, then ends by itself.
    expect(result.stdout.split('\n').slice(-5).join('\n')).toMatch(/^ +1 {2}block\.sealed +block 0 {2}0x[0-9a-f]{64} {2}0 transactions\n +2 {2}transaction\.accepted +0x[0-9a-f]{64} .*\n +3 {2}transaction\.confirmed +.*\n +4 {2}block\.sealed +block 1 .*\n$/);
  }, 120_000); // six npx runs: slow on a loaded machine

  it('the SDK walkthrough works as printed in a new project that installs the SDK from this repository', async () => {
    const code = fenced(between(README, 'readme-sdk'), 'js');
    expect(codeLines(code)).toBeLessThan(10);
    const installed = await installSdk();
    expect(installed.status, installed.stderr).toBe(0);
    fs.writeFileSync(path.join(project, 'quickstart.mjs'), code);
    const token = await run(process.execPath, ['dist/cli/tabula.js', 'token', 'treasury', '--admin'], ROOT, env);
    expect(token.status, token.stderr).toBe(0);
    const result = await run(process.execPath, ['quickstart.mjs'], project, { ...env, TABULA_URL: server.url, TABULA_TOKEN: token.stdout.trim() });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^confirmed in block \d+; inclusion proof verified\n$/);
  });

  it("the market's SDK example works as printed: quote, swap with slippage, price history", async () => {
    const code = fenced(between(README, 'readme-market-sdk'), 'js');
    expect(codeLines(code)).toBeLessThan(10);
    const installed = await installSdk();
    expect(installed.status, installed.stderr).toBe(0);
    await provideLiquidity();
    fs.writeFileSync(path.join(project, 'market.mjs'), code);
    const result = await run(process.execPath, ['market.mjs'], project, { ...env, TABULA_URL: server.url, TABULA_TOKEN: await cliToken('alice') });
    expect(result.status, result.stderr).toBe(0);
    const printed = /^quoted ([0-9.]+) USDG, min ([0-9.]+): confirmed, got ([0-9.]+); close ([0-9.]+)\n$/.exec(result.stdout);
    expect(printed, result.stdout).not.toBeNull();
    const [quoted, minimum, got] = (printed as RegExpExecArray).slice(1, 4).map((text) => amountUnits(text as string, 'USDG'));
    expect(minimum).toBe(((quoted as bigint) * 995n) / 1000n); // floor(quote × 99.5 %), in USDG base units
    expect(got).toBe(quoted); // nothing else traded in between
  }, 120_000);

  it("the market's CLI example works as printed: price, swap --slippage 0.5% --wait, price --history", async () => {
    const script = fenced(between(README, 'readme-market-cli'), 'bash');
    expect(codeLines(script)).toBeLessThan(10);
    const pointed = script.replace('http://localhost:8080', server.url);
    expect(pointed).not.toBe(script);
    await provideLiquidity();
    const result = await run('bash', ['-euo', 'pipefail', '-c', pointed], ROOT, env);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^price +[0-9.]+ USD per native token$/m);
    expect(result.stdout).toMatch(/^quote +[0-9.]+ USDG$/m);
    expect(result.stdout).toMatch(/^min_receive +[0-9.]+ USDG \(slippage 0\.5%\)$/m);
    expect(result.stdout).toMatch(/^status +confirmed$/m);
    expect(result.stdout).toMatch(/^from +alice$/m);
    expect(result.stdout).toMatch(/^start +open +high +low +close +volume_usd$/m);
    expect(result.stdout).toMatch(/^\d+ 1h candles?, oldest first$/m);
  }, 120_000);
});
