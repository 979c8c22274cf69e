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
  'test/http/event-stream.test.ts',
  'test/service/competing-sealers.test.ts',
  'test/readme/**/*.test.ts',
];
const CLUSTER_SUITES = ['test/cluster/**/*.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end suites start real processes; two cores, so run files two at a time.
    maxWorkers: 2,
    reporters: ['default'],
    // PostgreSQL must answer (or the run fails); each project's schemas get a prefix and are dropped at the end.
    globalSetup: ['test/support/postgres-global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'sqlite', include: CONTRACT_SUITES, env: { TEST_STORE: 'sqlite' } } },
      { extends: true, test: { name: 'postgres', include: CONTRACT_SUITES, env: { TEST_STORE: 'postgres' } } },
      { extends: true, test: { name: 'cluster', include: CLUSTER_SUITES } },
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts', 'src/**/*.test.ts'], exclude: [...CONTRACT_SUITES, ...CLUSTER_SUITES] },
      },
    ],
  },
});
