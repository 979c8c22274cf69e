/**
 * The Python client's own suite (clients/python, `python3 -m unittest`) against the real service,
 * so `npm test` runs it: the shared hashing vectors, every endpoint, the lying-server cases and the
 * offline install. The service is started here with an HS256 secret (to mint the two tokens the
 * suite needs) and API keys (so the client's `api_key` is exercised); the suite reads them from
 * TABULA_URL, TABULA_TOKEN, TABULA_ADMIN_TOKEN and TABULA_API_KEY. Its exit status decides, and its
 * output is shown when it fails. The README's Python walkthrough runs as printed, from a fresh venv
 * into which `pip install ./clients/python` installed the package with every index switched off.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { freePort, ROOT, ServiceProcess } from '../support/service-process.js';

const PYTHON = process.env.PYTHON ?? 'python3';
const SUITE_TIMEOUT_MS = 240_000;
const API_KEY = 'python-client-test-api-key-0123456789';

type Run = { status: number | null; output: string };

/** Runs a command with only the given environment (and PATH and HOME). */
function run(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<Run & { stdout: string }> {
  const clean = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.homedir(), PYTHONDONTWRITEBYTECODE: '1', PYTHONUTF8: '1', ...env };
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: clean, timeout: SUITE_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ status, stdout, output: `${stdout}${stderr}` });
    });
  });
}

/** The fenced Python code between the README's `readme-python` markers. */
function readmePython(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = readme.split('<!-- readme-python:start -->')[1]?.split('<!-- readme-python:end -->')[0] ?? '';
  const code = /```python\n([\s\S]*?)```/.exec(block)?.[1];
  if (code === undefined) throw new Error('README has no Python example between readme-python markers');
  return code;
}

/** Runs `python3 -m unittest discover -s clients/python -v [...extra]` with only the given environment. */
function runSuite(env: Record<string, string>, extra: string[] = []): Promise<Run> {
  return run(PYTHON, ['-m', 'unittest', 'discover', '-s', 'clients/python', '-v', ...extra], ROOT, env);
}

describe('the Python client (clients/python)', () => {
  let server: ServiceProcess;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, API_KEYS: API_KEY, BLOCK_INTERVAL_MS: '200', RATE_LIMIT_MAX: '20000' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('passes its whole unittest suite against the real service, nothing skipped', async () => {
    const result = await runSuite({
      TABULA_URL: server.url,
      TABULA_TOKEN: await server.token('py-alice'),
      TABULA_ADMIN_TOKEN: await server.token('py-treasury', { admin: true }),
      TABULA_API_KEY: API_KEY,
    });
    expect(result.status, result.output).toBe(0);
    expect(result.output).toMatch(/^Ran [1-9][0-9]* tests? in /m);
    expect(result.output).toMatch(/^OK$/m);
    expect(result.output, 'a test was skipped').not.toMatch(/skipped/);
    for (const suite of ['test_vectors', 'test_live_service', 'test_lying_server', 'test_packaging', 'test_exact_values', 'test_market', 'test_market_verify']) {
      expect(result.output, `${suite} did not run`).toContain(`tests.${suite}.`);
    }
  }, SUITE_TIMEOUT_MS + 10_000);

  it("the README's Python walkthrough works as printed, installed offline into a fresh venv", async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-python-readme-'));
    try {
      const venv = path.join(folder, 'venv');
      const created = await run(PYTHON, ['-m', 'venv', venv], folder, {});
      expect(created.status, created.output).toBe(0);
      const offline = { PIP_NO_INDEX: '1', PIP_CONFIG_FILE: os.devNull, PIP_DISABLE_PIP_VERSION_CHECK: '1' };
      const installed = await run(path.join(venv, 'bin', 'pip'), ['install', './clients/python'], ROOT, offline);
      expect(installed.status, installed.output).toBe(0);
      const code = readmePython();
      expect(code.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('import') && !line.startsWith('from')).length).toBeLessThanOrEqual(6);
      fs.writeFileSync(path.join(folder, 'quickstart.py'), code);
      const result = await run(path.join(venv, 'bin', 'python'), ['quickstart.py'], folder, {
        TABULA_URL: server.url, TABULA_TOKEN: await server.token('treasury', { admin: true }), TABULA_API_KEY: API_KEY,
      });
      expect(result.status, result.output).toBe(0);
      expect(result.stdout).toMatch(/^confirmed: 100 TAB in block \d+; inclusion proof verified\n$/);
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  }, SUITE_TIMEOUT_MS + 10_000);

  it('fails when a Python test fails (here: a service that is not there)', async () => {
    const result = await runSuite({
      TABULA_URL: `http://127.0.0.1:${await freePort()}`,
      TABULA_TOKEN: await server.token('py-alice'),
      TABULA_ADMIN_TOKEN: await server.token('py-treasury', { admin: true }),
    }, ['-k', 'test_health_and_readiness_need_no_token']);
    expect(result.status, result.output).not.toBe(0);
    expect(result.output).toMatch(/FAILED \((errors|failures)=1\)/);
    expect(result.output).toContain('NetworkError');
  }, 60_000);
});
