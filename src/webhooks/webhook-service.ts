/**
 * Managing webhook endpoints (admins only; the HTTP edge checks the caller): create with a signing
 * secret shown once, list, read, change, delete, rotate the secret (the old one keeps signing for a
 * day), read the attempts, retry one event now, and replay from a sequence. Throws the domain's typed
 * errors; the edge turns them into problems.
 */
import { randomBytes } from 'node:crypto';
import { ConflictError, InvalidRequestError, NotFoundError } from '../domain/shared/errors.js';
import { holdsControlCharacters } from '../domain/control-characters.js';
import { parseUserId } from '../domain/user-id.js';
import { sequenceOfEventId, type EncodedEvent, type EventFeed, type EventType } from '../events/event.js';
import type { Clock } from '../service/clock.js';
import { RefusedAddressError, type AddressGuard } from './address-guard.js';
import { attemptOf, webhookRequest } from './webhook-deliverer.js';
import type { WebhookSender } from './webhook-sender.js';
import { generateSecret } from './webhook-signature.js';
import type { DeliveryAttempt, EndpointChanges, WebhookEndpoint, WebhookStore } from './webhook-store.js';

/** Endpoints a ledger may have at the most. */
export const ENDPOINTS_MAX = 100;
export const ENDPOINT_PAGE_LIMIT_MAX = 100;
export const ATTEMPT_PAGE_LIMIT_MAX = 100;
/** How long the secret before a rotation keeps signing. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 3600 * 1000;

export type EndpointInput = { url: string; types?: EventType[] | null; accounts?: string[] | null; description?: string };
export type EndpointPatch = Partial<EndpointInput> & { status?: 'active' | 'disabled' };

export type WebhookServiceDependencies = {
  store: WebhookStore;
  feed: EventFeed;
  guard: AddressGuard;
  sender: WebhookSender;
  clock: Clock;
  /** The store's event head (this instance's feed may lag it by a moment). */
  store_head(): Promise<number>;
  /** Told when an endpoint may have become due (the deliverer looks at once). */
  on_change(): void;
};

export class WebhookService {
  private readonly deps: WebhookServiceDependencies;

  constructor(deps: WebhookServiceDependencies) {
    this.deps = deps;
  }

  /** A new endpoint, delivered events from the current head on; its secret is returned here only. */
  async create(input: EndpointInput): Promise<WebhookEndpoint> {
    const now = this.deps.clock.now_ms();
    const endpoint: WebhookEndpoint = {
      id: newEndpointId(now),
      url: this.checkUrl(input.url),
      description: checkDescription(input.description ?? ''),
      types: distinct(input.types ?? null),
      accounts: parseAccounts(input.accounts ?? null),
      secret: generateSecret(),
      previous_secret: null,
      previous_secret_expires_at_ms: null,
      status: 'active',
      disabled_reason: null,
      last_sequence: await this.deps.store_head(),
      failing_since_ms: null,
      failed_attempts: 0,
      next_attempt_at_ms: now,
      lease_owner: null,
      lease_expires_at_ms: null,
      created_at_ms: now,
      updated_at_ms: now,
    };
    if (!(await this.deps.store.createEndpoint(endpoint, ENDPOINTS_MAX))) {
      throw new ConflictError('too_many_webhooks', `a ledger has at most ${ENDPOINTS_MAX} webhook endpoints; delete one first`);
    }
    return endpoint;
  }

  list(after_id: string | null, limit: number): Promise<WebhookEndpoint[]> {
    if (after_id !== null && !isEndpointId(after_id)) {
      throw new InvalidRequestError('invalid_pagination', 'after must be the next_after of a previous page (an endpoint id)', 'after');
    }
    return this.deps.store.listEndpoints(after_id, Math.min(limit, ENDPOINT_PAGE_LIMIT_MAX));
  }

  async get(id: string): Promise<WebhookEndpoint> {
    if (!isEndpointId(id)) throw notFound(id);
    const endpoint = await this.deps.store.getEndpoint(id);
    if (endpoint === null) throw notFound(id);
    return endpoint;
  }

  async update(id: string, patch: EndpointPatch): Promise<WebhookEndpoint> {
    const changes: EndpointChanges = {};
    if (patch.url !== undefined) changes.url = this.checkUrl(patch.url);
    if (patch.description !== undefined) changes.description = checkDescription(patch.description);
    if (patch.types !== undefined) changes.types = distinct(patch.types);
    if (patch.accounts !== undefined) changes.accounts = parseAccounts(patch.accounts);
    if (patch.status === 'disabled') Object.assign(changes, { status: 'disabled', disabled_reason: 'disabled_by_admin' });
    if (patch.status === 'active') Object.assign(changes, this.reenabled());
    return this.changed(id, changes);
  }

  async remove(id: string): Promise<void> {
    if (!isEndpointId(id) || !(await this.deps.store.deleteEndpoint(id))) throw notFound(id);
  }

  /** A new secret (returned here only); the one it replaces keeps signing, next to it, for 24 hours. */
  async rotateSecret(id: string): Promise<WebhookEndpoint> {
    const current = await this.get(id);
    return this.changed(id, {
      secret: generateSecret(),
      previous_secret: current.secret,
      previous_secret_expires_at_ms: this.deps.clock.now_ms() + PREVIOUS_SECRET_VALID_MS,
    });
  }

  async attempts(id: string, before_id: number | null, limit: number): Promise<DeliveryAttempt[]> {
    await this.get(id);
    return this.deps.store.listAttempts(id, before_id, Math.min(limit, ATTEMPT_PAGE_LIMIT_MAX));
  }

  /**
   * Sends one event to the endpoint again, now, whatever its filters and cursor, and records the
   * attempt (the cursor does not move). An active endpoint waiting out a backoff is tried at once too.
   */
  async retry(id: string, event_id: string): Promise<DeliveryAttempt> {
    const endpoint = await this.get(id);
    const event = await this.findEvent(event_id);
    const now = this.deps.clock.now_ms();
    const result = await this.deps.sender.send(webhookRequest(endpoint, event, now));
    const attempt = attemptOf(endpoint, event, result, now, null, 'manual');
    await this.deps.store.recordAttempt(attempt);
    if (endpoint.status === 'active' && endpoint.next_attempt_at_ms > now) await this.deps.store.updateEndpoint(id, { next_attempt_at_ms: now });
    this.deps.on_change();
    return { id: 0, ...attempt };
  }

  /** Moves the cursor to `after` (events after it are sent again, in order) and re-enables the endpoint. */
  async replay(id: string, after: number): Promise<WebhookEndpoint> {
    await this.get(id);
    if (after > this.deps.feed.head() && after > (await this.deps.store_head())) {
      throw new InvalidRequestError('invalid_event_cursor', `no event has sequence ${after} yet`, 'after');
    }
    // Refuses (410) a sequence whose next event is past the retention.
    await this.deps.feed.read(after, 1);
    return this.changed(id, { ...this.reenabled(), last_sequence: after });
  }

  private reenabled(): EndpointChanges {
    return { status: 'active', disabled_reason: null, failed_attempts: 0, failing_since_ms: null, next_attempt_at_ms: this.deps.clock.now_ms() };
  }

  private async changed(id: string, changes: EndpointChanges): Promise<WebhookEndpoint> {
    if (!isEndpointId(id)) throw notFound(id);
    const endpoint = await this.deps.store.updateEndpoint(id, changes);
    if (endpoint === null) throw notFound(id);
    this.deps.on_change();
    return endpoint;
  }

  private checkUrl(url: string): string {
    try {
      return this.deps.guard.checkUrl(url).toString();
    } catch (error) {
      if (error instanceof RefusedAddressError) throw new InvalidRequestError('webhook_url_refused', error.message, 'url');
      throw error;
    }
  }

  private async findEvent(event_id: string): Promise<EncodedEvent> {
    const sequence = sequenceOfEventId(event_id);
    if (sequence === null) throw new InvalidRequestError('invalid_event_cursor', 'event_id is not an event id of this service', 'event_id');
    const [event] = await this.deps.feed.read(sequence - 1, 1);
    if (event === undefined || event.id !== event_id) throw new NotFoundError('event_not_found', `no event has the id ${event_id}`);
    return event;
  }
}

/** `wh_` + the creation time (12 hex digits of ms, so ids sort by creation) + 8 random hex digits. */
function newEndpointId(now_ms: number): string {
  return `wh_${now_ms.toString(16).padStart(12, '0')}${randomBytes(4).toString('hex')}`;
}

/** The form `newEndpointId` gives (the time takes 12 hex digits until the year 10889, at most 16 after). */
const ENDPOINT_ID = /^wh_[0-9a-f]{20,24}$/;

/**
 * Whether `id` can name an endpoint. Anything else names none, and is not sent to the store: a NUL
 * in it, say, is refused by PostgreSQL as an encoding error, not answered as "no such endpoint".
 */
function isEndpointId(id: string): boolean {
  return ENDPOINT_ID.test(id);
}

/** A description is stored and shown as given: it may not hold control characters or lone surrogates. */
function checkDescription(description: string): string {
  if (holdsControlCharacters(description)) {
    throw new InvalidRequestError('validation_failed', 'description may not hold control characters or lone UTF-16 surrogates', 'description');
  }
  return description;
}

function notFound(id: string): NotFoundError {
  return new NotFoundError('webhook_not_found', `no webhook endpoint has the id ${id}`);
}

function distinct<T>(values: T[] | null): T[] | null {
  return values === null ? null : [...new Set(values)];
}

function parseAccounts(accounts: string[] | null): string[] | null {
  if (accounts === null) return null;
  return distinct(accounts.map((account, index) => parseUserId(account, `accounts/${index}`)));
}
