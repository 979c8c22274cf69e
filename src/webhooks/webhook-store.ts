/**
 * What webhooks keep in the database (the interface is owned here; src/store/{sqlite,postgres}
 * implement it on the ledger's own database). The outbox is the event log itself, which is durable
 * and gap-free: each endpoint keeps a cursor (`last_sequence`, the last event it has been sent or
 * skipped by its filters), and each attempt is recorded. An endpoint is delivered by one deliverer at
 * a time: the one holding its lease (`lease_owner` until `lease_expires_at_ms`). A lease is a token
 * of its own per claim (`<deliverer>/<n>`), and every write of a deliverer names its token, so one
 * whose lease expired and was taken over — or was ended by an admin's change — writes nothing.
 */
import type { EventType } from '../events/event.js';

export type EndpointStatus = 'active' | 'disabled';

export type WebhookEndpoint = {
  id: string;
  url: string;
  description: string;
  /** Only these event types (null: all). */
  types: EventType[] | null;
  /** Only events touching one of these accounts (null: all). */
  accounts: string[] | null;
  secret: string;
  /** The secret before the last rotation, still signing until `previous_secret_expires_at_ms`. */
  previous_secret: string | null;
  previous_secret_expires_at_ms: number | null;
  status: EndpointStatus;
  /** Why it is disabled (`retries_exhausted`, `cursor_expired`, `disabled_by_admin`); null while active. */
  disabled_reason: string | null;
  /** The sequence of the last event delivered to it or passed over by its filters. */
  last_sequence: number;
  /** When the current run of failures began (null: the last attempt succeeded). */
  failing_since_ms: number | null;
  /** Consecutive failed attempts of the event it is on. */
  failed_attempts: number;
  /** Not attempted before this time (the backoff). */
  next_attempt_at_ms: number;
  lease_owner: string | null;
  lease_expires_at_ms: number | null;
  created_at_ms: number;
  updated_at_ms: number;
};

/** What an admin or a deliverer may change of an endpoint. */
export type EndpointChanges = Partial<Omit<WebhookEndpoint, 'id' | 'created_at_ms' | 'lease_owner' | 'lease_expires_at_ms'>>;

export type AttemptOutcome = 'delivered' | 'failed' | 'refused';

export type DeliveryAttempt = {
  id: number;
  endpoint_id: string;
  event_id: string;
  sequence: number;
  outcome: AttemptOutcome;
  /** The receiver's HTTP status (null: no answer — refused, unreachable or timed out). */
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  attempted_at_ms: number;
  /** When the event is tried again after this failure (null: delivered, or not retried). */
  next_attempt_at_ms: number | null;
  /** `scheduled` by the deliverer, `manual` by an admin's retry. */
  origin: 'scheduled' | 'manual';
};

export type NewAttempt = Omit<DeliveryAttempt, 'id'>;

/** Attempts kept per endpoint: older ones are deleted as new ones are recorded. */
export const ATTEMPTS_KEPT_PER_ENDPOINT = 1000;

export interface WebhookStore {
  /** Inserts `endpoint` unless `endpoints_max` exist already; false when the limit refused it. */
  createEndpoint(endpoint: WebhookEndpoint, endpoints_max: number): Promise<boolean>;
  getEndpoint(id: string): Promise<WebhookEndpoint | null>;
  /** In id order (ids grow with creation time), after `after_id`. */
  listEndpoints(after_id: string | null, limit: number): Promise<WebhookEndpoint[]>;
  /**
   * Applies `changes` (and `updated_at_ms`) and ends any lease, so that a deliverer working on the
   * endpoint stops at its next write and the endpoint is claimed afresh, as changed; null when there
   * is no such endpoint.
   */
  updateEndpoint(id: string, changes: EndpointChanges): Promise<WebhookEndpoint | null>;
  /** Deletes the endpoint and its attempts; false when there was none. */
  deleteEndpoint(id: string): Promise<boolean>;
  /**
   * Leases up to `limit` active endpoints that are due (next attempt ≤ now), behind `head`, and not
   * leased (or whose lease expired), to `token` until `lease_until_ms`: first those whose last attempt
   * did not fail, then at most `failing_limit` that are failing (`failed_attempts > 0`), each group by
   * its next attempt.
   */
  claimDue(token: string, now_ms: number, lease_until_ms: number, head: number, limit: number, failing_limit: number): Promise<WebhookEndpoint[]>;
  /** Whether any endpoint is active: while none is, the deliverer does not look for due ones at every new event. */
  hasActiveEndpoints(): Promise<boolean>;
  /**
   * As the lease holder: extends the lease to `lease_until_ms`, applies `changes`, records `attempt`
   * (if any) in one transaction. False (and nothing written) when `token` is no longer the lease.
   */
  updateLeased(id: string, token: string, lease_until_ms: number, changes: EndpointChanges, attempt?: NewAttempt): Promise<boolean>;
  /** Gives the lease up (if `token` is still the lease). */
  releaseLease(id: string, token: string): Promise<void>;
  /** Ends every lease whose token starts with `prefix` (a deliverer's leases from before its restart). */
  releaseLeasesOf(prefix: string): Promise<void>;
  /** Records an attempt made outside the lease (an admin's retry). */
  recordAttempt(attempt: NewAttempt): Promise<void>;
  /** Newest first, with `id` below `before_id`. */
  listAttempts(endpoint_id: string, before_id: number | null, limit: number): Promise<DeliveryAttempt[]>;
}
