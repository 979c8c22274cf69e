/** How every PostgreSQL connection of the service is opened: one place for the schema and the time limits. */
import { createHash } from 'node:crypto';
import type pg from 'pg';

export type PostgresConnection = {
  /** A postgres:// URL. */
  url: string;
  /** The schema that holds the ledger's tables (created when missing); null: the server's default search_path. */
  schema: string | null;
  /** Deadlines on a database that stops answering (DATABASE_QUERY_TIMEOUT_MS, SEALER_LEASE_TIMEOUT_MS); default: POSTGRES_TIMEOUTS_DEFAULT. */
  timeouts?: PostgresTimeouts;
};

/**
 * How long the service waits on a PostgreSQL server (or a network) that stops answering, so that a
 * partition costs seconds, not the operating system's TCP timeouts of minutes to hours.
 */
export type PostgresTimeouts = {
  /** A query unanswered this long fails (the caller gets 503 storage_unavailable) and its connection is discarded. */
  query_timeout_ms: number;
  /**
   * A session that stays silent this long loses what it holds: the server ends the sealer lease's
   * session (`idle_session_timeout`, so another instance takes over) and any transaction left open
   * (`idle_in_transaction_session_timeout`). The holder pings its lease five times in this period.
   */
  lease_timeout_ms: number;
};

export const POSTGRES_TIMEOUTS_DEFAULT: PostgresTimeouts = { query_timeout_ms: 10_000, lease_timeout_ms: 5_000 };

/** Schema names the service accepts: plain lower-case identifiers, safe to write into SQL unquoted. */
export const SCHEMA_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Time limits, so that no call waits forever on a database that stopped answering. */
const CONNECT_TIMEOUT_MS = 10_000;
/** The server cancels a statement running longer than this (the sealer's statements on a 100,000-transaction block take seconds). */
export const STATEMENT_TIMEOUT_MS = 60_000;
const KEEPALIVE_INITIAL_DELAY_MS = 5_000;
/** The server's TCP keepalive on our sessions: a peer silent for idle + interval × count seconds is dropped. */
const SERVER_KEEPALIVE = { idle_s: 5, interval_s: 2, count: 3 };

/**
 * Settings of every connection. `session: 'lease'` is the sealer lease's own connection, which the
 * server ends when it stays idle past the lease timeout (see PostgresTimeouts).
 */
export function connectionSettings(connection: PostgresConnection, session: 'pool' | 'lease' = 'pool'): pg.ClientConfig {
  if (connection.schema !== null && !SCHEMA_NAME_PATTERN.test(connection.schema)) {
    throw new Error(`"${connection.schema}" is not a schema name the service accepts (${SCHEMA_NAME_PATTERN.source})`);
  }
  const timeouts = connection.timeouts ?? POSTGRES_TIMEOUTS_DEFAULT;
  const options = [
    ...(connection.schema === null ? [] : [`-c search_path=${connection.schema}`]),
    `-c tcp_keepalives_idle=${SERVER_KEEPALIVE.idle_s}`,
    `-c tcp_keepalives_interval=${SERVER_KEEPALIVE.interval_s}`,
    `-c tcp_keepalives_count=${SERVER_KEEPALIVE.count}`,
    ...(session === 'lease' ? [`-c idle_session_timeout=${timeouts.lease_timeout_ms}`] : []),
  ];
  return {
    connectionString: connection.url,
    application_name: 'tabula',
    options: options.join(' '),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: timeouts.query_timeout_ms,
    idle_in_transaction_session_timeout: timeouts.lease_timeout_ms,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
  };
}

/**
 * Closes a client without waiting on the network: `end()` waits for the server's goodbye, which a
 * partitioned connection never sends, so the socket is destroyed after a short grace.
 */
export function discardClient(client: pg.Client, grace_ms = 1000): Promise<void> {
  client.on('error', () => undefined);
  const socket = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket?.destroy();
      resolve();
    }, grace_ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    client.end().then(done, done);
  });
}

/**
 * The LISTEN/NOTIFY channel on which writers announce new events: one per schema (each schema holds
 * a ledger of its own), named by a digest so that it stays a short identifier for any schema name.
 */
export function eventChannel(schema: string | null): string {
  const digest = createHash('sha256').update(schema ?? '').digest('hex').slice(0, 16);
  return `tabula_events_${digest}`;
}

/** Whether node-postgres gave up waiting for an answer (the `query_timeout` deadline). */
export function isQueryTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Query read timeout';
}
