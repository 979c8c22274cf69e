/**
 * The SQLite driver each runtime loads (src/store/sqlite/sqlite-driver.ts): better-sqlite3 13 on Node 22
 * and later, 12 on Node 20, the same one in the service's worker threads; and a process that makes and
 * drops statements by the thousand under a busy collector exits 0 (12 aborts it on Node 24.19.0).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import Database, { SQLITE_DRIVER_PACKAGE, SQLITE_DRIVER_PATH } from '../../src/store/sqlite/sqlite-driver.js';
import { ROOT } from '../support/service-process.js';

const run = promisify(execFile);
const node_major = Number(process.versions.node.split('.')[0]);

/**
 * Makes and drops 40,000 statements between allocations that keep the collector busy, as a loaded
 * service does. With better-sqlite3 12 on Node 24.19.0 this aborts within about 130 ms (seen: a
 * statement freed by a collection, `Assertion failed: (env) != nullptr`, exit 134); 24.22.3 no longer
 * aborts with 12, and 13 never did.
 */
const COLLECTED_STATEMENTS = `
const { default: Database, SQLITE_DRIVER_PACKAGE } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'store', 'sqlite', 'sqlite-driver.js'))});
const db = new Database(':memory:');
let garbage = [];
for (let round = 0; round < 20; round += 1) {
  for (let index = 0; index < 2000; index += 1) db.prepare('SELECT ? + ' + index).get(round);
  for (let index = 0; index < 20000; index += 1) garbage.push({ index, text: 'x' + index });
  if (garbage.length > 200000) garbage = [];
  await new Promise((resolve) => setTimeout(resolve, 5));
}
garbage = null;
await new Promise((resolve) => setTimeout(resolve, 100));
db.close();
console.log(SQLITE_DRIVER_PACKAGE, db.constructor.name);
`;

describe('the SQLite driver', () => {
  it('is better-sqlite3 13 (Node-API) from Node 22 on, and 12 on Node 20', () => {
    expect(SQLITE_DRIVER_PACKAGE).toBe(node_major >= 22 ? 'better-sqlite3-node-api' : 'better-sqlite3');
    expect(SQLITE_DRIVER_PATH).toContain(`${path.sep}node_modules${path.sep}${SQLITE_DRIVER_PACKAGE}${path.sep}`);
    const db = new Database(':memory:');
    try {
      expect(db.prepare('SELECT 6 * 7 AS answer').get()).toEqual({ answer: 42 });
    } finally {
      db.close();
    }
  });

  it('is the only module that loads either package (types aside): one copy of SQLite a process', () => {
    const loads = /(?<!import type [\w{}, ]*)from '(better-sqlite3|better-sqlite3-node-api)'|require\(['"](better-sqlite3|better-sqlite3-node-api)['"]\)/;
    const offenders = ['src', 'test', 'bench', 'scripts']
      .flatMap((folder) => fs.readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' }).map((file) => path.join(folder, file)))
      .filter((file) => /\.(ts|mts|js|mjs)$/.test(file) && file !== path.join('src', 'store', 'sqlite', 'sqlite-driver.ts'))
      .filter((file) => loads.test(fs.readFileSync(path.join(ROOT, file), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('survives the collection of statements it has dropped, and exits 0', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', COLLECTED_STATEMENTS], { cwd: ROOT, timeout: 60_000 });
    expect(stdout.trim()).toBe(`${SQLITE_DRIVER_PACKAGE} Database`);
  });
});
