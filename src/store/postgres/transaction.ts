/**
 * One PostgreSQL transaction on a connection of the pool, shared by the stores on it (the ledger's and
 * the webhooks'): a connection that broke, whose rollback failed, or whose query timed out (it may
 * still be running behind a silent network) is discarded rather than returned to the pool.
 */
import type pg from 'pg';
import { isQueryTimeout } from './connection.js';

/** Calls `on_break` if the checked-out connection fails; returns the function that stops watching. */
export function watchCheckedOut(client: pg.PoolClient, on_break: () => void): () => void {
  const listener = () => on_break();
  client.on('error', listener);
  return () => client.off('error', listener);
}

export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  const unwatch = watchCheckedOut(client, () => {
    broken = true;
  });
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    // A query that timed out may still be running behind a silent network: the connection is discarded, not rolled back.
    if (isQueryTimeout(error)) broken = true;
    else {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
    }
    throw error;
  } finally {
    unwatch();
    client.release(broken);
  }
}
