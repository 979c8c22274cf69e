/**
 * Tells the event hub when another instance committed events: a connection of its own LISTENs on the
 * ledger's event channel, on which every write transaction NOTIFYs at commit (see
 * SQL.advanceEventCounter). A lost connection is opened again with backoff; the hub's slow poll covers
 * what is missed meanwhile, so a lost signal delays events, never loses them.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import type { EventSignal } from '../../events/event-hub.js';
import { connectionSettings, discardClient, eventChannel, type PostgresConnection } from './connection.js';

const RECONNECT_DELAY_MS_MIN = 100;
const RECONNECT_DELAY_MS_MAX = 5000;

export class PostgresEventSignal implements EventSignal {
  private readonly connection: PostgresConnection;
  private readonly logger: Logger;
  private client: pg.Client | null = null;
  private on_change: (head: number | null) => void = () => undefined;
  private stopped = false;
  private reconnect_delay_ms = RECONNECT_DELAY_MS_MIN;
  private reconnect: NodeJS.Timeout | null = null;

  constructor(connection: PostgresConnection, logger: Logger) {
    this.connection = connection;
    this.logger = logger;
  }

  async start(on_change: (head: number | null) => void): Promise<void> {
    this.on_change = on_change;
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnect !== null) clearTimeout(this.reconnect);
    const client = this.client;
    this.client = null;
    // A partitioned connection never says goodbye: do not wait on it.
    if (client !== null) await discardClient(client);
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client(connectionSettings(this.connection));
    client.on('notification', (message) => this.on_change(announcedHead(message.payload)));
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, null));
    try {
      await client.connect();
      await client.query(`LISTEN ${eventChannel(this.connection.schema)}`);
    } catch (error) {
      this.lost(client, error);
      return;
    }
    this.client = client;
    this.reconnect_delay_ms = RECONNECT_DELAY_MS_MIN;
    // Events committed while no connection listened are found by this read.
    this.on_change(null);
  }

  private lost(client: pg.Client, error: unknown): void {
    if (this.stopped || this.reconnect !== null) return;
    if (this.client === client) this.client = null;
    client.removeAllListeners('end');
    void discardClient(client);
    this.logger.warn({ err: error, retry_in_ms: this.reconnect_delay_ms }, 'the event notification connection to PostgreSQL was lost; reconnecting');
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      void this.listen();
    }, this.reconnect_delay_ms);
    this.reconnect.unref();
    this.reconnect_delay_ms = Math.min(this.reconnect_delay_ms * 2, RECONNECT_DELAY_MS_MAX);
  }
}

/** The head a writer's NOTIFY carries (its event counter as it committed: `pg_notify(channel, last_sequence::text)`), or null if the payload is not one. */
export function announcedHead(payload: string | undefined): number | null {
  if (payload === undefined || !/^\d{1,15}$/.test(payload)) return null;
  return Number(payload);
}
