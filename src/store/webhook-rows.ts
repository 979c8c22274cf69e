/**
 * Rows of the webhook tables and back, shared by the SQLite and PostgreSQL webhook stores: the
 * column lists, filters as JSON text, and integers that PostgreSQL returns as text.
 */
import type { EventType } from '../events/event.js';
import type { DeliveryAttempt, EndpointChanges, NewAttempt, WebhookEndpoint } from '../webhooks/webhook-store.js';

export const ENDPOINT_COLUMNS = [
  'id', 'url', 'description', 'types', 'accounts', 'secret', 'previous_secret', 'previous_secret_expires_at_ms', 'status', 'disabled_reason',
  'last_sequence', 'failing_since_ms', 'failed_attempts', 'next_attempt_at_ms', 'lease_owner', 'lease_expires_at_ms', 'created_at_ms', 'updated_at_ms',
] as const;

export const ATTEMPT_COLUMNS = [
  'endpoint_id', 'event_id', 'sequence', 'outcome', 'response_status', 'latency_ms', 'error', 'attempted_at_ms', 'next_attempt_at_ms', 'origin',
] as const;

/** Columns an update may set (never the id or the creation time; the lease only through its own statements). */
const CHANGEABLE = new Set<string>(ENDPOINT_COLUMNS.filter((column) => !['id', 'created_at_ms', 'lease_owner', 'lease_expires_at_ms'].includes(column)));

type Row = Record<string, unknown>;

function integerOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function textOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function listOrNull<T>(value: unknown): T[] | null {
  return value === null || value === undefined ? null : (JSON.parse(String(value)) as T[]);
}

export function toEndpoint(row: Row): WebhookEndpoint {
  return {
    id: String(row.id),
    url: String(row.url),
    description: String(row.description),
    types: listOrNull<EventType>(row.types),
    accounts: listOrNull<string>(row.accounts),
    secret: String(row.secret),
    previous_secret: textOrNull(row.previous_secret),
    previous_secret_expires_at_ms: integerOrNull(row.previous_secret_expires_at_ms),
    status: row.status === 'disabled' ? 'disabled' : 'active',
    disabled_reason: textOrNull(row.disabled_reason),
    last_sequence: Number(row.last_sequence),
    failing_since_ms: integerOrNull(row.failing_since_ms),
    failed_attempts: Number(row.failed_attempts),
    next_attempt_at_ms: Number(row.next_attempt_at_ms),
    lease_owner: textOrNull(row.lease_owner),
    lease_expires_at_ms: integerOrNull(row.lease_expires_at_ms),
    created_at_ms: Number(row.created_at_ms),
    updated_at_ms: Number(row.updated_at_ms),
  };
}

export function toAttempt(row: Row): DeliveryAttempt {
  return {
    id: Number(row.id),
    endpoint_id: String(row.endpoint_id),
    event_id: String(row.event_id),
    sequence: Number(row.sequence),
    outcome: row.outcome as DeliveryAttempt['outcome'],
    response_status: integerOrNull(row.response_status),
    latency_ms: Number(row.latency_ms),
    error: textOrNull(row.error),
    attempted_at_ms: Number(row.attempted_at_ms),
    next_attempt_at_ms: integerOrNull(row.next_attempt_at_ms),
    origin: row.origin === 'manual' ? 'manual' : 'scheduled',
  };
}

function columnValue(column: string, value: unknown): unknown {
  if (column === 'types' || column === 'accounts') return value === null || value === undefined ? null : JSON.stringify(value);
  return value;
}

/** An endpoint's values in ENDPOINT_COLUMNS order. */
export function endpointValues(endpoint: WebhookEndpoint): unknown[] {
  return ENDPOINT_COLUMNS.map((column) => columnValue(column, endpoint[column]));
}

export function attemptValues(attempt: NewAttempt): unknown[] {
  return ATTEMPT_COLUMNS.map((column) => attempt[column]);
}

/** The columns and values of `changes` (only changeable columns; undefined fields are left out). */
export function changeColumns(changes: EndpointChanges): Array<[string, unknown]> {
  return Object.entries(changes)
    .filter(([column, value]) => CHANGEABLE.has(column) && value !== undefined)
    .map(([column, value]) => [column, columnValue(column, value)]);
}
