/**
 * The JetStream end of the event publisher: one connection, the stream (created when missing), the
 * sequence of the last event the stream holds, and one publish awaited until its PubAck. It never
 * reconnects by itself: a broken connection fails whatever is in flight, and the publisher opens a new
 * target after its backoff, so that every publishing session starts from what the stream really holds.
 */
import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { sequenceOfEventId, type EncodedEvent } from '../event.js';

/** The event's sequence, as a header, so that resuming never has to parse a body. */
export const SEQUENCE_HEADER = 'Tabula-Sequence';

export type JetStreamSettings = {
  servers: readonly string[];
  stream: string;
  /** Every event goes to `<subject_prefix>.<type>`; a stream created here captures `<subject_prefix>.>`. */
  subject_prefix: string;
  connect_timeout_ms: number;
  /** A publish (or stream request) not answered within this counts as failed. */
  request_timeout_ms: number;
};

export class JetStreamTarget {
  private readonly connection: NatsConnection;
  private readonly manager: JetStreamManager;
  private readonly client: JetStreamClient;
  private readonly stream: string;
  private readonly subject_prefix: string;

  private constructor(connection: NatsConnection, manager: JetStreamManager, settings: JetStreamSettings) {
    this.connection = connection;
    this.manager = manager;
    this.client = jetstream(connection, { timeout: settings.request_timeout_ms });
    this.stream = settings.stream;
    this.subject_prefix = settings.subject_prefix;
  }

  private get subjects(): string {
    return `${this.subject_prefix}.>`;
  }

  /** Connects and makes sure the stream exists; throws when NATS cannot be reached. */
  static async open(settings: JetStreamSettings): Promise<JetStreamTarget> {
    const tls = settings.servers.some((server) => server.startsWith('tls://'));
    const connection = await connect({
      servers: [...settings.servers],
      name: 'tabula-events-publisher',
      reconnect: false,
      timeout: settings.connect_timeout_ms,
      ...(tls ? { tls: {} } : {}),
    });
    try {
      const manager = await jetstreamManager(connection, { timeout: settings.request_timeout_ms });
      const target = new JetStreamTarget(connection, manager, settings);
      await target.ensureStream();
      return target;
    } catch (error) {
      await connection.close().catch(() => undefined);
      throw error;
    }
  }

  /** The sequence of the last event the stream holds (0 when it holds none). */
  async lastSequence(): Promise<number> {
    const last = await this.manager.streams.getMessage(this.stream, { last_by_subj: this.subjects });
    if (last === null) return 0;
    const sequence = Number(last.header?.get(SEQUENCE_HEADER) ?? '') || sequenceOfEventId(last.header?.get('Nats-Msg-Id') ?? '');
    if (sequence === null || !Number.isSafeInteger(sequence) || sequence < 1) {
      throw new Error(`the last message on ${last.subject} in stream ${this.stream} (#${last.seq}) is not a Tabula event: cannot tell where to resume`);
    }
    return sequence;
  }

  /**
   * Publishes one event and waits for its PubAck. `Nats-Msg-Id` (the event id) makes a retry within the
   * stream's duplicate window stored once.
   */
  async publish(event: EncodedEvent): Promise<void> {
    const message_headers = headers();
    message_headers.set(SEQUENCE_HEADER, String(event.sequence));
    const subject = `${this.subject_prefix}.${event.type}`;
    const ack = await this.client.publish(subject, event.json, { msgID: event.id, headers: message_headers });
    if (ack.stream !== this.stream) {
      throw new Error(`${subject} is stored by stream ${ack.stream}, not ${this.stream}: give ${this.subjects} to one stream only`);
    }
  }

  async close(): Promise<void> {
    if (!this.connection.isClosed()) await this.connection.close().catch(() => undefined);
  }

  private async ensureStream(): Promise<void> {
    try {
      await this.manager.streams.info(this.stream);
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
      await this.manager.streams.add({ name: this.stream, subjects: [this.subjects] });
    }
  }
}
