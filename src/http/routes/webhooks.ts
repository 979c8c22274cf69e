/**
 * `/api/webhooks`: admins manage the endpoints the event log is delivered to (src/webhooks/), read
 * their delivery attempts, and recover (retry one event, replay from a sequence). Secrets are shown
 * only when created and when rotated.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { ForbiddenError } from '../../domain/shared/errors.js';
import { EVENT_TYPES } from '../../events/event.js';
import type { DeliveryAttempt, WebhookEndpoint } from '../../webhooks/webhook-store.js';
import { ATTEMPT_PAGE_LIMIT_MAX, ENDPOINT_PAGE_LIMIT_MAX, type WebhookService } from '../../webhooks/webhook-service.js';
import type { ErrorCode } from '../error-catalogue.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, PATH_PARAMETER_ERROR_CODES } from '../openapi.js';
import { HttpProblem } from '../problem.js';
import { principalOf } from '../request-guard.js';

export const URL_LENGTH_MAX = 2048;
export const DESCRIPTION_LENGTH_MAX = 500;
export const FILTER_ACCOUNTS_MAX = 100;
const PAGE_LIMIT_DEFAULT = 50;

const EXAMPLE_ID = 'wh_019ab3c4d5e6a1b2c3d4';
const EXAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3b8Lo6Qs9Ds=';
const EXAMPLE_ENDPOINT = {
  id: EXAMPLE_ID, url: 'https://hooks.example.com/tabula', description: 'settlement', types: ['transaction.confirmed'], accounts: null,
  status: 'active', disabled_reason: null, last_sequence: 41, failed_attempts: 0, failing_since_ms: null, next_attempt_at_ms: 1795547634000,
  previous_secret_expires_at_ms: null, created_at_ms: 1795547600000, updated_at_ms: 1795547634000,
};
const EXAMPLE_ATTEMPT = {
  id: 7, event_id: 'evt_42_0b1f5c3e9a2d', sequence: 42, outcome: 'failed', response_status: 503, latency_ms: 35, error: null,
  attempted_at_ms: 1795547634000, next_attempt_at_ms: 1795547635870, origin: 'scheduled',
};

const EventTypeSchema = Type.Union(EVENT_TYPES.map((type) => Type.Literal(type)));
const Types = Type.Array(EventTypeSchema, { minItems: 1, maxItems: EVENT_TYPES.length, description: 'Only these event types (omitted or null: all)' });
const Accounts = Type.Array(Type.String({ maxLength: 128 }), { minItems: 1, maxItems: FILTER_ACCOUNTS_MAX, description: `Only events touching one of these accounts (omitted or null: all; at most ${FILTER_ACCOUNTS_MAX})` });
const Url = Type.String({ minLength: 1, maxLength: URL_LENGTH_MAX, description: 'Where events are POSTed: http(s), a public address unless WEBHOOK_ALLOWED_HOSTS allows it' });
const Description = Type.String({ maxLength: DESCRIPTION_LENGTH_MAX });

const CreateBodySchema = Type.Object({
  url: Url,
  types: Type.Optional(Type.Union([Types, Type.Null()])),
  accounts: Type.Optional(Type.Union([Accounts, Type.Null()])),
  description: Type.Optional(Description),
}, { additionalProperties: false, examples: [{ url: 'https://hooks.example.com/tabula', types: ['transaction.confirmed'], description: 'settlement' }] });

const PatchBodySchema = Type.Object({
  url: Type.Optional(Url),
  types: Type.Optional(Type.Union([Types, Type.Null()])),
  accounts: Type.Optional(Type.Union([Accounts, Type.Null()])),
  description: Type.Optional(Description),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')], { description: '`active` re-enables a disabled endpoint (from its cursor)' })),
}, { additionalProperties: false, minProperties: 1, examples: [{ status: 'active' }] });

const endpointProperties = {
  id: Type.String(),
  url: Type.String(),
  description: Type.String(),
  types: Type.Union([Type.Array(Type.String()), Type.Null()]),
  accounts: Type.Union([Type.Array(Type.String()), Type.Null()]),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
  disabled_reason: Type.Union([Type.String({ description: 'retries_exhausted, cursor_expired or disabled_by_admin' }), Type.Null()]),
  last_sequence: Type.Integer({ description: 'The last event sequence delivered (or passed over by the filters)' }),
  failed_attempts: Type.Integer({ description: 'Consecutive failed attempts of the next event' }),
  failing_since_ms: Type.Union([Type.Integer(), Type.Null()]),
  next_attempt_at_ms: Type.Integer(),
  previous_secret_expires_at_ms: Type.Union([Type.Integer({ description: 'Until then the secret before the last rotation signs too' }), Type.Null()]),
  created_at_ms: Type.Integer(),
  updated_at_ms: Type.Integer(),
};
const EndpointSchema = Type.Object(endpointProperties, { examples: [EXAMPLE_ENDPOINT] });
const EndpointWithSecretSchema = Type.Object({ ...endpointProperties, secret: Type.String({ description: 'The signing secret: shown only now' }) }, {
  examples: [{ ...EXAMPLE_ENDPOINT, secret: EXAMPLE_SECRET }],
});
const EndpointListSchema = Type.Object({
  webhooks: Type.Array(EndpointSchema),
  next_after: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `after` for the next page; null on the last' }),
}, { examples: [{ webhooks: [EXAMPLE_ENDPOINT], next_after: null }] });
const AttemptSchema = Type.Object({
  id: Type.Integer({ description: '0 for a manual retry answered directly' }),
  event_id: Type.String(),
  sequence: Type.Integer(),
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('failed'), Type.Literal('refused')]),
  response_status: Type.Union([Type.Integer(), Type.Null()]),
  latency_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  attempted_at_ms: Type.Integer(),
  next_attempt_at_ms: Type.Union([Type.Integer(), Type.Null()]),
  origin: Type.Union([Type.Literal('scheduled'), Type.Literal('manual')]),
}, { examples: [EXAMPLE_ATTEMPT] });
const AttemptListSchema = Type.Object({
  deliveries: Type.Array(AttemptSchema),
  next_before: Type.Union([Type.Integer(), Type.Null()], { description: 'Pass as `before` for older attempts; null on the last page' }),
}, { examples: [{ deliveries: [EXAMPLE_ATTEMPT], next_before: null }] });

const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The endpoint id', examples: [EXAMPLE_ID] }) });
const RetryParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'The endpoint id', examples: [EXAMPLE_ID] }),
  eventId: Type.String({ maxLength: 64, description: 'The event id', examples: ['evt_42_0b1f5c3e9a2d'] }),
});
const ListQuery = Type.Object({
  limit: Type.Optional(Type.String({ maxLength: 4, description: `1..${ENDPOINT_PAGE_LIMIT_MAX} (default ${PAGE_LIMIT_DEFAULT})`, examples: ['50'] })),
  after: Type.Optional(Type.String({ maxLength: 64, description: 'The `next_after` of the previous page', examples: [EXAMPLE_ID] })),
});
const AttemptsQuery = Type.Object({
  limit: Type.Optional(Type.String({ maxLength: 4, description: `1..${ATTEMPT_PAGE_LIMIT_MAX} (default ${PAGE_LIMIT_DEFAULT})`, examples: ['50'] })),
  before: Type.Optional(Type.String({ maxLength: 20, description: 'The `next_before` of the previous page', examples: ['7'] })),
});
const ReplayQuery = Type.Object({
  after: Type.String({ maxLength: 20, description: 'Deliver again every event after this sequence (0: from the first)', examples: ['40'] }),
});

function endpointView(endpoint: WebhookEndpoint): Static<typeof EndpointSchema> {
  return {
    id: endpoint.id, url: endpoint.url, description: endpoint.description, types: endpoint.types, accounts: endpoint.accounts,
    status: endpoint.status, disabled_reason: endpoint.disabled_reason, last_sequence: endpoint.last_sequence,
    failed_attempts: endpoint.failed_attempts, failing_since_ms: endpoint.failing_since_ms, next_attempt_at_ms: endpoint.next_attempt_at_ms,
    previous_secret_expires_at_ms: endpoint.previous_secret !== null ? endpoint.previous_secret_expires_at_ms : null,
    created_at_ms: endpoint.created_at_ms, updated_at_ms: endpoint.updated_at_ms,
  };
}

function attemptView(attempt: DeliveryAttempt): Static<typeof AttemptSchema> {
  return {
    id: attempt.id, event_id: attempt.event_id, sequence: attempt.sequence, outcome: attempt.outcome, response_status: attempt.response_status,
    latency_ms: attempt.latency_ms, error: attempt.error, attempted_at_ms: attempt.attempted_at_ms, next_attempt_at_ms: attempt.next_attempt_at_ms,
    origin: attempt.origin,
  };
}

function pageLimit(text: string | undefined, limit_max: number): number {
  if (text === undefined) return PAGE_LIMIT_DEFAULT;
  const limit = /^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= limit_max)) {
    throw new HttpProblem('invalid_pagination', `limit must be an integer from 1 to ${limit_max}`, {}, [{ field: 'limit', message: `must be an integer from 1 to ${limit_max}` }]);
  }
  return limit;
}

function sequenceParameter(text: string | undefined, field: string, code: 'invalid_pagination' | 'invalid_event_cursor'): number | null {
  if (text === undefined) return null;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(text)) throw new HttpProblem(code, `${field} must be an integer ≥ 0`, {}, [{ field, message: 'must be an integer ≥ 0' }]);
  return Number(text);
}

/** Every webhook route: admins only, plus the codes of each route. */
function errors(codes: readonly ErrorCode[], path_parameters = true): Record<number, object> {
  return errorResponses([...codes, 'admin_required', ...(path_parameters ? PATH_PARAMETER_ERROR_CODES : []), ...API_ERROR_CODES]);
}

const common = { tags: ['webhooks'], security: API_SECURITY };

export const webhookRoutes: FastifyPluginAsyncTypebox<{ service: WebhookService }> = async (app, { service }) => {
  app.addHook('onRequest', async (request) => {
    if (!principalOf(request).admin) throw new ForbiddenError('admin_required', 'only an admin may manage webhooks');
  });

  app.post('/webhooks', {
    schema: {
      ...common,
      summary: 'Create a webhook endpoint',
      description: 'Events from now on are POSTed to `url`, signed (Standard Webhooks). The answer holds the signing `secret`: it is shown only here.',
      operationId: 'createWebhook',
      body: CreateBodySchema,
      response: {
        201: { ...EndpointWithSecretSchema, description: 'The endpoint, with its secret', headers: API_RESPONSE_HEADERS },
        ...errors(['validation_failed', 'malformed_json', 'webhook_url_refused', 'invalid_user_id', 'too_many_webhooks', 'payload_too_large', 'unsupported_media_type'], false),
      },
    },
  }, async (request, reply) => {
    const endpoint = await service.create(request.body);
    return reply.code(201).header('location', `/api/webhooks/${endpoint.id}`).send({ ...endpointView(endpoint), secret: endpoint.secret });
  });

  app.get('/webhooks', {
    schema: {
      ...common,
      summary: 'List webhook endpoints',
      description: 'Oldest first, a page at a time (`after` = the previous page\'s `next_after`).',
      operationId: 'listWebhooks',
      querystring: ListQuery,
      response: { 200: { ...EndpointListSchema, description: 'A page of endpoints', headers: API_RESPONSE_HEADERS }, ...errors(['invalid_pagination'], false) },
    },
  }, async (request) => {
    const limit = pageLimit(request.query.limit, ENDPOINT_PAGE_LIMIT_MAX);
    const endpoints = await service.list(request.query.after ?? null, limit);
    return { webhooks: endpoints.map(endpointView), next_after: endpoints.length === limit ? (endpoints.at(-1)?.id ?? null) : null };
  });

  app.get('/webhooks/:id', {
    schema: {
      ...common,
      summary: 'One webhook endpoint',
      description: 'Its filters, its cursor in the event log, and whether it is failing or disabled.',
      operationId: 'getWebhook',
      params: IdParams,
      response: { 200: { ...EndpointSchema, description: 'The endpoint', headers: API_RESPONSE_HEADERS }, ...errors(['webhook_not_found']) },
    },
  }, async (request) => endpointView(await service.get(request.params.id)));

  app.patch('/webhooks/:id', {
    schema: {
      ...common,
      summary: 'Change a webhook endpoint',
      description: 'Change its url, filters or description, disable it, or re-enable it (`status: "active"`, from its cursor).',
      operationId: 'updateWebhook',
      params: IdParams,
      body: PatchBodySchema,
      response: {
        200: { ...EndpointSchema, description: 'The endpoint as changed', headers: API_RESPONSE_HEADERS },
        ...errors(['validation_failed', 'malformed_json', 'webhook_url_refused', 'invalid_user_id', 'webhook_not_found', 'payload_too_large', 'unsupported_media_type']),
      },
    },
  }, async (request) => endpointView(await service.update(request.params.id, request.body)));

  app.delete('/webhooks/:id', {
    schema: {
      ...common,
      summary: 'Delete a webhook endpoint',
      description: 'Deliveries to it stop, and its attempts are deleted.',
      operationId: 'deleteWebhook',
      params: IdParams,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(['webhook_not_found']) },
    },
  }, async (request, reply) => {
    await service.remove(request.params.id);
    return reply.code(204).send();
  });

  app.post('/webhooks/:id/rotate-secret', {
    schema: {
      ...common,
      summary: 'Rotate the signing secret',
      description: 'Returns the new secret, once. For 24 hours the old secret signs too: each delivery carries both signatures, space-separated.',
      operationId: 'rotateWebhookSecret',
      params: IdParams,
      response: { 200: { ...EndpointWithSecretSchema, description: 'The endpoint, with its new secret', headers: API_RESPONSE_HEADERS }, ...errors(['webhook_not_found']) },
    },
  }, async (request) => {
    const endpoint = await service.rotateSecret(request.params.id);
    return { ...endpointView(endpoint), secret: endpoint.secret };
  });

  app.get('/webhooks/:id/deliveries', {
    schema: {
      ...common,
      summary: 'Delivery attempts of a webhook endpoint',
      description: 'Newest first (`before` = the previous page\'s `next_before`); the newest 1000 attempts per endpoint are kept.',
      operationId: 'listWebhookDeliveries',
      params: IdParams,
      querystring: AttemptsQuery,
      response: { 200: { ...AttemptListSchema, description: 'A page of attempts', headers: API_RESPONSE_HEADERS }, ...errors(['invalid_pagination', 'webhook_not_found']) },
    },
  }, async (request) => {
    const limit = pageLimit(request.query.limit, ATTEMPT_PAGE_LIMIT_MAX);
    const before = sequenceParameter(request.query.before, 'before', 'invalid_pagination');
    const attempts = await service.attempts(request.params.id, before, limit);
    return { deliveries: attempts.map(attemptView), next_before: attempts.length === limit ? (attempts.at(-1)?.id ?? null) : null };
  });

  app.post('/webhooks/:id/deliveries/:eventId/retry', {
    schema: {
      ...common,
      summary: 'Send one event to a webhook endpoint again, now',
      description: 'The attempt is made before answering, recorded, and returned; the cursor does not move. An endpoint waiting out a backoff is tried at once too.',
      operationId: 'retryWebhookDelivery',
      params: RetryParams,
      response: { 200: { ...AttemptSchema, description: 'The attempt', headers: API_RESPONSE_HEADERS }, ...errors(['invalid_event_cursor', 'webhook_not_found', 'event_not_found', 'cursor_expired']) },
    },
  }, async (request) => attemptView(await service.retry(request.params.id, request.params.eventId)));

  app.post('/webhooks/:id/replay', {
    schema: {
      ...common,
      summary: 'Replay events to a webhook endpoint',
      description: 'Moves its cursor to `after` and re-enables it: every event after that sequence is delivered again, in order.',
      operationId: 'replayWebhook',
      params: IdParams,
      querystring: ReplayQuery,
      response: { 200: { ...EndpointSchema, description: 'The endpoint', headers: API_RESPONSE_HEADERS }, ...errors(['validation_failed', 'invalid_event_cursor', 'webhook_not_found', 'cursor_expired']) },
    },
  }, async (request) => endpointView(await service.replay(request.params.id, sequenceParameter(request.query.after, 'after', 'invalid_event_cursor') ?? 0)));
};
