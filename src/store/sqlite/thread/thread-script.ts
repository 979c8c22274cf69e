/**
 * The script the SQLite store's thread runs (store-thread.ts). Built, it is the JavaScript beside this
 * file in dist. From source (the tests, tsx, the benchmark's own processes) the thread's modules are
 * TypeScript, which a worker thread cannot load by itself: they are bundled with esbuild (a development
 * dependency) into node_modules/.cache, where the bundle's own imports (better-sqlite3, pino) resolve
 * as they do from src. Registering tsx in each thread instead took 190 ms a thread, which made every test
 * that starts a service about 0.3 s slower; a bundle takes about 100 ms once a process.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The cache folder, from this file's place in src/store/sqlite/thread. */
const CACHE_DIR = new URL('../../../../node_modules/.cache/tabula/', import.meta.url);

/**
 * One bundle per process, made on first use: a cache of a build artefact (the sources do not change
 * while a process runs), not state of the service.
 */
let bundled: Promise<ThreadScript> | null = null;

/**
 * The script, and the runtime options the thread starts with: from dist, the process's own (a worker
 * inherits them); from source, none, since the process's are tsx's loader or the test runner's, which
 * the bundle does not need (tsx's alone took 190 ms of each thread's start).
 */
export type ThreadScript = { url: URL; exec_argv: string[] | undefined };

export function storeThreadScript(): Promise<ThreadScript> {
  if (!import.meta.url.endsWith('.ts')) return Promise.resolve({ url: new URL('./store-thread.js', import.meta.url), exec_argv: undefined });
  bundled ??= bundle().then((url) => ({ url, exec_argv: [] }), (error: unknown) => {
    bundled = null;
    throw error;
  });
  return bundled;
}

async function bundle(): Promise<URL> {
  const { build } = await import('esbuild');
  fs.mkdirSync(CACHE_DIR, { recursive: true });
  const target = new URL('store-thread.mjs', CACHE_DIR);
  // Written under a name of its own, then renamed: test processes bundle at the same time.
  const written = new URL(`store-thread.${process.pid}.${Date.now()}.mjs`, CACHE_DIR);
  await build({
    entryPoints: [fileURLToPath(new URL('./store-thread.ts', import.meta.url))],
    outfile: fileURLToPath(written),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  fs.renameSync(written, target);
  return target;
}
