/**
 * Start-up of the built service as an operator meets it: bad configuration stops it with a message
 * naming the variable, production refuses to run without an identity provider, the ledger's native
 * symbol cannot change under an existing database, and development mode works with the documented
 * token command and the secret it keeps in the data folder.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { ApiClient, serverErrors } from './support/http.js';
import { ROOT, runUntilExit, ServiceProcess } from '../support/service-process.js';

describe('e2e: start-up and configuration', () => {
  const services: ServiceProcess[] = [];

  afterAll(async () => {
    await Promise.all(services.map((service) => service.close()));
    expect(serverErrors()).toEqual([]);
  });

  it.each([
    ['PORT', 'not-a-port'],
    ['BLOCK_INTERVAL_MS', '0'],
    ['BLOCK_TXS_MAX', '-5'],
    ['RATE_LIMIT_MAX', '1.5'],
    ['JWT_ISSUER', 'ftp://idp.example'],
    ['JWT_SECRET', 'too-short'],
    ['API_KEYS', 'short'],
    ['LOG_LEVEL', 'verbose'],
    ['DATABASE_URL', 'mysql://db'],
    ['NATIVE_PRICE_USD', '-1'],
  ])('refuses %s=%s, naming the variable', async (variable, value) => {
    const result = await runUntilExit({ JWT_SECRET: 'e2e-secret-that-is-at-least-32-bytes!!', [variable]: value });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain(variable);
  });

  it('ends start-up on an operator\'s problem with one line naming the setting, no stack: a port taken, a host, NODE_ENV', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = String((taken.address() as AddressInfo).port);
      const cases: Array<[Record<string, string>, RegExp]> = [
        [{ PORT: port }, new RegExp(`^failed to start: PORT: port ${port} on 127.0.0.1 is in use`, 'm')],
        [{ HOST: 'listen-here.invalid' }, /^failed to start: HOST: listen-here.invalid does not resolve/m],
        [{ NODE_ENV: 'prod' }, /^invalid configuration: NODE_ENV: must be production, development or test/m],
      ];
      for (const [env, expected] of cases) {
        const result = await runUntilExit({ JWT_SECRET: 'e2e-secret-that-is-at-least-32-bytes!!', ...env });
        expect(result.code, result.stdout + result.stderr).toBe(1);
        expect(result.stderr).toMatch(expected);
        expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
      }
    } finally {
      taken.close();
    }
  });

  it('refuses a database that is not a ledger, leaving it as it was found', async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-foreign-'));
    try {
      // Another application's SQLite file (it had the ledger's tables added beside its own, and was switched to WAL).
      const foreign = path.join(folder, 'app.db');
      const db = new Database(foreign);
      db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ann'), ('bo'); PRAGMA user_version = 7;");
      db.close();
      // A file that is not SQLite at all.
      const noise = path.join(folder, 'noise.db');
      fs.writeFileSync(noise, crypto.randomBytes(65_536));
      for (const [file, expected] of [[foreign, /DATABASE_URL: .*app\.db is not a Tabula ledger: it holds another application's tables \(users\)/], [noise, /DATABASE_URL: cannot open the SQLite ledger .*noise\.db/]] as const) {
        const before = fs.readFileSync(file);
        const result = await runUntilExit({ JWT_SECRET: 'e2e-secret-that-is-at-least-32-bytes!!', DATABASE_URL: `sqlite:${file}` });
        expect(result.code, result.stdout + result.stderr).toBe(1);
        expect(result.stderr).toMatch(expected);
        expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
        expect(fs.readFileSync(file).equals(before), `${file} unchanged`).toBe(true);
        expect(fs.existsSync(`${file}-wal`), `${file} has no WAL`).toBe(false);
      }
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('refuses to start in production without an identity provider', async () => {
    const result = await runUntilExit({ NODE_ENV: 'production' });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toMatch(/JWT_ISSUER/);
  });

  it('runs in development with the secret in its data folder and the documented token command', { timeout: 30_000 }, async () => {
    const service = await ServiceProcess.start({ env: { BLOCK_INTERVAL_MS: '50' } });
    services.push(service);
    expect(fs.existsSync(path.join(service.data_dir, 'dev-jwt-secret'))).toBe(true);
    const mint = (args: string[]): string => {
      // `npm run token -- <user> [--admin]` runs `tsx src/cli/token.ts`; call it the same way.
      const result = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsx'), [path.join(ROOT, 'src', 'cli', 'token.ts'), ...args], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: `sqlite:${service.database_path}` },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(result.status, result.stderr).toBe(0);
      return result.stdout.trim();
    };
    const admin = new ApiClient(() => service.url, { token: mint(['issuer', '--admin']) });
    const user = new ApiClient(() => service.url, { token: mint(['dev-user']) });
    const submitted = await admin.submit({ from: 'issuer', to: 'dev-user', amount: 1, token: 'TAB', type: 'mint' });
    expect(submitted.status, submitted.text).toBe(202);
    expect((await user.submit({ from: 'issuer', to: 'dev-user', amount: 1, token: 'TAB', type: 'mint' })).status).toBe(403);
    expect((await user.balance('dev-user')).status).toBe(200);
  });

  it('keeps the native symbol the ledger was created with', { timeout: 30_000 }, async () => {
    const service = await ServiceProcess.start({ env: { NATIVE_SYMBOL: 'GLD', JWT_SECRET: 'e2e-secret-that-is-at-least-32-bytes!!' } });
    services.push(service);
    expect((await service.stop()).code).toBe(0);
    const result = await runUntilExit({ NATIVE_SYMBOL: 'SLV', JWT_SECRET: 'e2e-secret-that-is-at-least-32-bytes!!' }, { data_dir: service.data_dir });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain('NATIVE_SYMBOL');
    await service.restart();
    expect(service.running).toBe(true);
  });
});
