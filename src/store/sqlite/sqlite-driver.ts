/**
 * better-sqlite3 for the Node.js that runs us. Two majors are installed, because neither loads on every
 * supported runtime: 13 (`better-sqlite3-node-api`, built on Node-API, prebuilt in its package) needs
 * Node 22 and crashes on load on Node 20; 12 (`better-sqlite3`, built at install against the runtime's
 * headers) loads on Node 20, but on Node 24.19.0 the process aborts (`Assertion failed: (env) !=
 * nullptr` in `RemoveEnvironmentCleanupHook`) when the collector frees a statement of an addon built on
 * `node::ObjectWrap`, as 12 is (24.22.3 no longer does). So Node 22 and later load 13 and Node 20 loads
 * 12; the two have the same API and the same types (@types/better-sqlite3).
 *
 * Everything that opens a database goes through this module, in the service, its worker threads, the
 * tests and the benchmarks: two copies of SQLite in one process do not see each other's POSIX locks on
 * the same file, and closing a connection in one would drop the locks the other holds.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/** The first Node.js major that loads the Node-API build. */
const NODE_API_BUILD_FROM_MAJOR = 22;

/** The package this runtime loads, for `require` and for worker threads (see wal-checkpointer.ts). */
export const SQLITE_DRIVER_PACKAGE =
  Number(process.versions.node.split('.')[0]) >= NODE_API_BUILD_FROM_MAJOR ? 'better-sqlite3-node-api' : 'better-sqlite3';

const require = createRequire(import.meta.url);

/** The resolved path of that package's entry point, which a worker thread `require`s. */
export const SQLITE_DRIVER_PATH = require.resolve(SQLITE_DRIVER_PACKAGE);

const Database = require(SQLITE_DRIVER_PACKAGE) as typeof BetterSqlite3;

// The types of better-sqlite3's namespace, under the same name as the constructor, as its own default
// export offers them (`Database.Database`, `Database.Statement`).
// eslint-disable-next-line @typescript-eslint/no-namespace
declare namespace Database {
  type Database = BetterSqlite3.Database;
  type Statement<BindParameters extends unknown[] | {} = unknown[], Result = unknown> = BetterSqlite3.Statement<BindParameters, Result>;
  type Options = BetterSqlite3.Options;
}

export default Database;
