/**
 * The sealer lease on PostgreSQL: a session-level advisory lock held on a connection of its own.
 * PostgreSQL releases it the moment that session ends, so when the holder dies (even by SIGKILL, when
 * the kernel closes its socket) another instance's next `pg_try_advisory_lock` — one a second — wins.
 * The holder proves its session is alive at every `acquire` and by a heartbeat five times per lease
 * timeout (SEALER_LEASE_TIMEOUT_MS); a broken connection, or one silent for half the lease timeout,
 * counts as lost and is discarded. The server ends a lease session idle for the whole lease timeout
 * (`idle_session_timeout`), so a holder cut off by a partition — whose connection neither closes nor
 * answers — loses the lock within that bound, after it has itself stopped sealing. The lock is per
 * schema, so ledgers in different schemas of one database do not contend. The same lease, on a lock class of its own, elects the one instance that publishes events
 * to NATS (`LOCK_CLASS.publisher`).
 */
import pg from 'pg';
import type { Logger } from 'pino';
import type { SealerLease } from '../../service/sealer-lease.js';
import { connectionSettings, discardClient, POSTGRES_TIMEOUTS_DEFAULT, type PostgresConnection } from './connection.js';
import { LOCK_CLASS } from './schema.js';

/** Heartbeats per lease timeout. */
const HEARTBEATS_PER_TIMEOUT = 5;

export class PostgresSealerLease implements SealerLease {
  private readonly connection: PostgresConnection;
  private readonly logger: Logger | undefined;
  private client: pg.Client | null = null;
  private holding = false;
  private readonly lock_class: number;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly lease_timeout_ms: number;

  constructor(connection: PostgresConnection, logger?: Logger, lock_class: number = LOCK_CLASS.sealer) {
    this.connection = connection;
    this.logger = logger;
    this.lock_class = lock_class;
    this.lease_timeout_ms = (connection.timeouts ?? POSTGRES_TIMEOUTS_DEFAULT).lease_timeout_ms;
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
        [this.lock_class, this.connection.schema],
      );
      this.holding = result.rows[0]?.acquired === true;
      if (this.holding) this.startHeartbeat(client);
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
    const client = new pg.Client({ ...connectionSettings(this.connection, 'lease'), query_timeout: Math.floor(this.lease_timeout_ms / 2) });
    client.on('error', (error) => {
      this.logger?.warn({ err: error, lock_class: this.lock_class }, 'a lease connection failed');
      if (this.client === client) void this.drop();
    });
    client.on('end', () => {
      if (this.client === client) {
        this.client = null;
        this.holding = false;
        this.stopHeartbeat();
      }
    });
    await client.connect();
    this.client = client;
    return client;
  }

  /** While holding, pings the session so that the server keeps it and a silent network is noticed. */
  private startHeartbeat(client: pg.Client): void {
    this.stopHeartbeat();
    let in_flight = false;
    this.heartbeat = setInterval(() => {
      if (in_flight || this.client !== client) return;
      in_flight = true;
      client.query('SELECT 1').then(
        () => {
          in_flight = false;
        },
        (error: unknown) => {
          in_flight = false;
          if (this.client !== client) return;
          this.logger?.warn({ err: error, lock_class: this.lock_class }, 'a lease connection stopped answering: the lease counts as lost');
          void this.drop();
        },
      );
    }, Math.floor(this.lease_timeout_ms / HEARTBEATS_PER_TIMEOUT));
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** Forgets the session at once; closing it never waits on a silent network (see discardClient). */
  private async drop(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.holding = false;
    this.stopHeartbeat();
    if (client !== null) await discardClient(client);
  }
}
