/**
 * The sealer lease on PostgreSQL: a session-level advisory lock held on a connection of its own.
 * PostgreSQL releases it the moment that session ends, so when the holder dies (even by SIGKILL, when
 * the kernel closes its socket) another instance's next `pg_try_advisory_lock` — one a second — wins.
 * The holder proves its session is alive at every `acquire`; a broken or silent connection counts as
 * lost and is closed. The lock is per schema, so ledgers in different schemas of one database do not
 * contend.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import type { SealerLease } from '../../service/sealer-lease.js';
import { connectionSettings, type PostgresConnection } from './connection.js';
import { LOCK_CLASS } from './schema.js';

/** A lease query that takes longer than this counts as a lost connection. */
const LEASE_QUERY_TIMEOUT_MS = 3000;

export class PostgresSealerLease implements SealerLease {
  private readonly connection: PostgresConnection;
  private readonly logger: Logger | undefined;
  private client: pg.Client | null = null;
  private holding = false;

  constructor(connection: PostgresConnection, logger?: Logger) {
    this.connection = connection;
    this.logger = logger;
  }

  async acquire(): Promise<boolean> {
    try {
      const client = this.client ?? (await this.connect());
      if (this.holding) {
        // The lock lives exactly as long as this session: a session that answers still holds it.
        await client.query('SELECT 1');
        return true;
      }
      const result = await client.query<{ acquired: boolean }>(
        'SELECT pg_try_advisory_lock($1, hashtext(COALESCE($2, current_schema()))) AS acquired',
        [LOCK_CLASS.sealer, this.connection.schema],
      );
      this.holding = result.rows[0]?.acquired === true;
      return this.holding;
    } catch (error) {
      await this.drop();
      throw error;
    }
  }

  held(): boolean {
    return this.holding;
  }

  /** Ends the lease's session, which releases the lock. */
  async release(): Promise<void> {
    await this.drop();
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({ ...connectionSettings(this.connection), query_timeout: LEASE_QUERY_TIMEOUT_MS });
    client.on('error', (error) => {
      this.logger?.warn({ err: error }, 'the sealer lease connection failed');
      if (this.client === client) void this.drop();
    });
    client.on('end', () => {
      if (this.client === client) {
        this.client = null;
        this.holding = false;
      }
    });
    await client.connect();
    this.client = client;
    return client;
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.holding = false;
    if (client !== null) await client.end().catch(() => undefined);
  }
}
