/** How every PostgreSQL connection of the service is opened: one place for the schema and the time limits. */
import { createHash } from 'node:crypto';
import type pg from 'pg';

export type PostgresConnection = {
  /** A postgres:// URL. */
  url: string;
  /** The schema that holds the ledger's tables (created when missing); null: the server's default search_path. */
  schema: string | null;
};

/** Schema names the service accepts: plain lower-case identifiers, safe to write into SQL unquoted. */
export const SCHEMA_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Time limits, so that no call waits forever on a database that stopped answering. */
const CONNECT_TIMEOUT_MS = 10_000;
const STATEMENT_TIMEOUT_MS = 60_000;
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

export function connectionSettings(connection: PostgresConnection): pg.ClientConfig {
  if (connection.schema !== null && !SCHEMA_NAME_PATTERN.test(connection.schema)) {
    throw new Error(`"${connection.schema}" is not a schema name the service accepts (${SCHEMA_NAME_PATTERN.source})`);
  }
  return {
    connectionString: connection.url,
    application_name: 'tabula',
    ...(connection.schema === null ? {} : { options: `-c search_path=${connection.schema}` }),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
  };
}

/**
 * The LISTEN/NOTIFY channel on which writers announce new events: one per schema (each schema holds
 * a ledger of its own), named by a digest so that it stays a short identifier for any schema name.
 */
export function eventChannel(schema: string | null): string {
  const digest = createHash('sha256').update(schema ?? '').digest('hex').slice(0, 16);
  return `tabula_events_${digest}`;
}
