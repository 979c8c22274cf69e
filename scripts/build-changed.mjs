/**
 * The build: the SDK (packages/client), the server (dist/, incremental `tsc -b`) and the explorer
 * (explorer/dist, Vite). `npm start` builds only what is out of date, so a restart with nothing changed
 * costs one no-op `tsc -b`; `--all` (what `npm run build`, hence `npm test`, runs) rebuilds everything.
 * Plain JavaScript on purpose: it runs before anything is compiled.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
/** Every build reads the installed dependencies: a new lock file makes everything out of date. */
const SHARED_INPUTS = ['package-lock.json', 'package.json', 'tsconfig.json'];
const FILES_WALKED_MAX = 20_000;

/** The newest modification time (ms) among `paths` (files, or folders walked recursively); 0 if none exist. */
function newestInput(paths) {
  let newest = 0;
  let walked = 0;
  for (const relative of paths) {
    const full = path.join(ROOT, relative);
    if (!fs.existsSync(full)) continue;
    const stat = fs.statSync(full);
    if (!stat.isDirectory()) {
      newest = Math.max(newest, stat.mtimeMs);
      continue;
    }
    for (const entry of fs.readdirSync(full, { recursive: true, withFileTypes: true })) {
      if (++walked > FILES_WALKED_MAX) return Number.POSITIVE_INFINITY; // too much to judge: build
      if (entry.isFile()) newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

/** Out of date: the output is missing or older than the newest input. */
function outOfDate(output, inputs) {
  const full = path.join(ROOT, output);
  return !fs.existsSync(full) || fs.statSync(full).mtimeMs < newestInput([...SHARED_INPUTS, ...inputs]);
}

/** Runs a build step; on failure, `forget` (e.g. build info that would let a retry skip the step) goes first. */
function run(command, args, label, forget = null) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) {
    if (forget !== null) fs.rmSync(path.join(ROOT, forget), { force: true });
    console.error(`build: ${label} failed`);
    process.exit(result.status ?? 1);
  }
}

const all = process.argv.includes('--all');

// The SDK: compiled from packages/client/src and the shared src/domain files it imports.
const client_output = 'packages/client/dist/packages/client/src/index.js';
if (all || outOfDate(client_output, ['packages/client/src', 'packages/client/tsconfig.json', 'packages/client/package.json', 'src/domain'])) {
  run(process.execPath, [TSC, '-p', 'packages/client/tsconfig.json'], 'the SDK (packages/client)');
}

// The server: `tsc -b` recompiles only the files that changed since dist/.tsbuildinfo (and is not even
// loaded when no source is newer); forced when an output is missing or the dependencies changed, which
// `tsc -b` alone does not notice. A failed build forgets its build info, so the next start fails again.
const force = all || outOfDate('dist/main.js', []) || outOfDate('dist/cli/tabula.js', []);
if (force || outOfDate('dist/.tsbuildinfo', ['src', 'tsconfig.build.json'])) {
  run(process.execPath, [TSC, '-b', 'tsconfig.build.json', ...(force ? ['--force'] : [])], 'the server (dist/)', 'dist/.tsbuildinfo');
  fs.chmodSync(path.join(ROOT, 'dist/cli/tabula.js'), 0o755);
}

// The explorer: Vite, when its sources, its build settings or the SDK it bundles changed.
const explorer_inputs = ['explorer/src', 'explorer/public', 'explorer/index.html', 'explorer/vite.config.ts', 'explorer/package.json', 'explorer/tsconfig.json', client_output];
if (all || outOfDate('explorer/dist/index.html', explorer_inputs)) {
  run('npm', ['run', '-s', 'build', '-w', '@tabula/explorer'], 'the explorer (explorer/dist)');
}
