/**
 * PostgreSQL runs (BENCH_DATABASE_URL=postgres://…): every ledger the benchmark starts gets a new,
 * empty database on that server (so the service's own migrations create its tables), dropped at the
 * end even when the run fails. The URL's user must be allowed to CREATE DATABASE; a `?schema=` on it is
 * kept, and the service then works in that schema of each new database.
 */
import pg from 'pg';

export type FreshDatabase = { url: string; drop(): Promise<void> };

export async function freshDatabase(server_url: string, name: string): Promise<FreshDatabase> {
  const database = `tabula_bench_${name}_${Date.now()}_${process.pid}`;
  const admin = new pg.Client({ connectionString: server_url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const url = new URL(server_url);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: server_url });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
