/**
 * `npm pack ./packages/client` makes a self-contained SDK: no dependencies, the shared src/domain
 * encoder compiled in, installable into a new project from the tarball alone (npm offline).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ROOT, ServiceProcess } from '../support/service-process.js';

type Run = { status: number; stdout: string; stderr: string };

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

const NPM_OFFLINE = { npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

describe('the @tabula/client package', () => {
  let server: ServiceProcess;
  let project: string;
  const env: NodeJS.ProcessEnv = { ...process.env, ...NPM_OFFLINE };

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-sdk-pack-'));
  });
  afterAll(async () => {
    await server?.close();
    fs.rmSync(project, { recursive: true, force: true });
  });

  it('declares no dependencies', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'packages/client/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.peerDependencies).toBeUndefined();
  });

  it('packs to a tarball that installs and runs on its own, the shared encoder compiled in', async () => {
    const packed = await run('npm', ['pack', './packages/client', '--pack-destination', project, '--json'], ROOT, env);
    expect(packed.status, packed.stderr).toBe(0);
    const [manifest] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    const files = manifest?.files.map((file) => file.path) ?? [];
    expect(files).toEqual(expect.arrayContaining(['package.json', 'dist/packages/client/src/index.js', 'dist/packages/client/src/index.d.ts', 'dist/src/domain/shared/canonical-json.js', 'dist/src/domain/shared/merkle.js']));
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    const consumer = fs.mkdtempSync(path.join(project, 'tarball-'));
    fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'tarball-user', version: '1.0.0', private: true }));
    const installed = await run('npm', ['install', path.join(project, manifest?.filename ?? '')], consumer, env);
    expect(installed.status, installed.stderr).toBe(0);
    expect(fs.lstatSync(path.join(consumer, 'node_modules/@tabula/client')).isSymbolicLink()).toBe(false);
    expect(fs.readdirSync(path.join(consumer, 'node_modules'))).toEqual(expect.arrayContaining(['@tabula']));
    const check = "import { TabulaClient, canonicalJson } from '@tabula/client'; const c = new TabulaClient({ baseUrl: process.env.TABULA_URL }); console.log(canonicalJson({ b: 1, a: [true] }), (await c.health()).status);";
    fs.writeFileSync(path.join(consumer, 'check.mjs'), check);
    const result = await run(process.execPath, ['check.mjs'], consumer, { ...env, TABULA_URL: server.url });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe('{"a":[true],"b":1} ok\n');
  });
});
