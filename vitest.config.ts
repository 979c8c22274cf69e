import { defineConfig } from 'vitest/config';

/**
 * The contract suite — the store interface and the HTTP behaviour, including the README's examples
 * against the real process — runs once per store: project `sqlite` and project `postgres`.
 */
const CONTRACT_SUITES = [
  'test/http/**/*.test.ts',
  'test/store/ledger-store-contract.test.ts',
  'test/store/event-log-contract.test.ts',
  'test/store/market-contract.test.ts',
  'test/store/failure-budget-contract.test.ts',
  'test/store/webhook-store-contract.test.ts',
  'test/http/event-stream.test.ts',
  'test/service/competing-sealers.test.ts',
  'test/readme/**/*.test.ts',
];
/** The store contract suites again on SQLite with the store on a thread of its own (src/store/sqlite/thread). */
const STORE_THREAD_SUITES = CONTRACT_SUITES.filter((suite) => suite.startsWith('test/store/'));
const CLUSTER_SUITES = ['test/cluster/**/*.test.ts'];
/** The explorer driven in Chromium: its own project, so CI's second runtime can leave it out (.ci/run). */
const BROWSER_SUITES = ['test/explorer/**/*.e2e.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    // A worker keeps its modules from one file to the next: with a fresh module graph per file, loading
    // Fastify, pino, TypeBox and the service again took 146 s of a 798 s run on two cores (40 s without).
    // Nothing in src or test keeps module-level state (no singletons; spies are on instances, fake
    // timers and patched globals are restored by the file that sets them).
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end suites start real processes and wait on them (blocks, restarts, timeouts): on two cores
    // a third file in flight fills that waiting (whole suite 742 s with two, 694 s with three, 722 s with four).
    maxWorkers: 3,
    reporters: ['default'],
    // PostgreSQL must answer (or the run fails); each project's schemas get a prefix and are dropped at the end.
    globalSetup: ['test/support/postgres-global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'sqlite', include: CONTRACT_SUITES, env: { TEST_STORE: 'sqlite' } } },
      { extends: true, test: { name: 'postgres', include: CONTRACT_SUITES, env: { TEST_STORE: 'postgres' } } },
      { extends: true, test: { name: 'sqlite-thread', include: STORE_THREAD_SUITES, env: { TEST_STORE: 'sqlite', TEST_SQLITE_STORE_THREAD: 'on' } } },
      { extends: true, test: { name: 'cluster', include: CLUSTER_SUITES } },
      { extends: true, test: { name: 'browser', include: BROWSER_SUITES } },
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts', 'src/**/*.test.ts'], exclude: [...CONTRACT_SUITES, ...CLUSTER_SUITES, ...BROWSER_SUITES] },
      },
    ],
  },
});
