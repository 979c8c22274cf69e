/**
 * The machine-readable API description, generated from the route schemas by @fastify/swagger (never
 * written by hand): OpenAPI 3.1 at `GET /openapi.json` and a browsable reference (Swagger UI, served
 * from the package's own files, no CDN) at `GET /docs`. Both are outside `/api` and need no token.
 *
 * Routes describe their errors with `errorResponses(codes)`, which turns codes of the one error
 * catalogue into problem+json responses with the catalogue's descriptions and an example each.
 */
import { STATUS_CODES } from 'node:http';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { API_MAJOR_VERSION, API_VERSION_HEADER } from './api-version.js';
import { ERROR_CATALOGUE, type ErrorCode } from './error-catalogue.js';
import { PROBLEM_CONTENT_TYPE, problem } from './problem.js';
import { ProblemSchema } from './schemas.js';

export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PREFIX = '/docs';
/**
 * Version of the HTTP interface described (not of the package): its major is the `API-Version` every
 * `/api` answer carries; the minor grows with each addition (1.1: the event stream).
 */
export const API_VERSION = `${API_MAJOR_VERSION}.1.0`;

/**
 * Every `/api` route can answer these: authentication, the rate limit, the store being unreachable
 * (a full disk, a lost database connection), and the service failing.
 */
export const API_ERROR_CODES: readonly ErrorCode[] = [
  'missing_token', 'invalid_token', 'invalid_api_key', 'rate_limited', 'internal_error', 'identity_provider_unavailable',
  'storage_unavailable',
];

/** Routes with path parameters can also answer these (a bad percent-encoding, a parameter too long). */
export const PATH_PARAMETER_ERROR_CODES: readonly ErrorCode[] = ['invalid_url', 'uri_too_long'];

/** Answered for no route in particular (no route matched, or the HTTP request itself was bad): described once, in `info`. */
export const CONNECTION_ERROR_CODES: readonly ErrorCode[] = ['route_not_found', 'malformed_request', 'request_timeout', 'expectation_failed', 'headers_too_large'];

/** `security` of an `/api` operation: a bearer token, plus `X-API-Key` when the service has API keys. */
export const API_SECURITY: { [scheme: string]: string[] }[] = [{ bearer_token: [], api_key: [] }, { bearer_token: [] }];

const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': { type: 'string', description: 'The policy, e.g. `1200;w=60`: a bucket of 1200 requests that refills in 60 seconds', examples: ['1200;w=60'] },
  RateLimit: { type: 'string', description: 'What is left, e.g. `limit=1200, remaining=1187, reset=1`: requests that may be sent at once now, and seconds until the bucket is full again', examples: ['limit=1200, remaining=1187, reset=42'] },
};
const RETRY_AFTER = { 'Retry-After': { type: 'string', description: 'Seconds to wait before retrying', examples: ['42'] } };

const HEADERS_BY_STATUS: Record<number, Record<string, unknown>> = {
  401: { 'WWW-Authenticate': { type: 'string', description: 'The bearer challenge: `Bearer realm="ledger"`, with `error="invalid_token"` for a bad token', examples: ['Bearer realm="ledger", error="invalid_token", error_description="token expired"'] } },
  429: { ...RETRY_AFTER, ...RATE_LIMIT_HEADERS },
  503: RETRY_AFTER,
};

/** Headers every `/api` answer carries. */
export const API_RESPONSE_HEADERS = {
  ...RATE_LIMIT_HEADERS,
  [API_VERSION_HEADER]: { type: 'string', description: 'The major version of the interface that answered (`/api/...` and `/api/v1/...` are version 1)', examples: [String(API_MAJOR_VERSION)] },
};

/** What a sealed record (a confirmed or failed transaction, a block) answers with besides the API's headers: it never changes. */
export const SEALED_RECORD_HEADERS = {
  ...API_RESPONSE_HEADERS,
  etag: { type: 'string', description: 'A strong validator of the answer: send it back in `If-None-Match` to get 304 instead of the body' },
  'cache-control': { type: 'string', description: '`private, max-age=31536000, immutable` for a sealed record (it never changes); `no-store` for a pending transaction', examples: ['private, max-age=31536000, immutable'] },
};

/** The answer to a conditional read of a sealed record whose ETag the client already holds. */
export const NOT_MODIFIED_RESPONSE = {
  304: { type: 'null', description: 'Not Modified: `If-None-Match` named the current ETag (sealed records never change); no body', headers: SEALED_RECORD_HEADERS },
};

/**
 * problem+json responses for `codes`, one per status: the description lists each code with its
 * meaning from the catalogue, and each code has an example body.
 */
export function errorResponses(codes: readonly ErrorCode[]): Record<number, object> {
  const by_status = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CATALOGUE[code].status;
    by_status.set(status, [...(by_status.get(status) ?? []), code]);
  }
  const responses: Record<number, object> = {};
  for (const [status, status_codes] of [...by_status].sort(([a], [b]) => a - b)) {
    const lines = status_codes.map((code) => `- \`${code}\`: ${ERROR_CATALOGUE[code].description}`);
    const examples = Object.fromEntries(status_codes.map((code) => [code, { value: problem(code, exampleDetail(code)) }]));
    responses[status] = {
      description: `${STATUS_CODES[status] ?? 'Error'}; \`code\` is one of:\n${lines.join('\n')}`,
      ...(HEADERS_BY_STATUS[status] === undefined ? {} : { headers: HEADERS_BY_STATUS[status] }),
      content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema, examples } },
    };
  }
  return responses;
}

/**
 * Swagger UI's own Content-Security-Policy (its inline scripts allowed by hash) without the outside
 * sources it allows by default: the reference loads nothing but what this service serves.
 */
export function ownOriginOnly(policy: string): string {
  return policy.replace(/ https:/g, '').replace(' validator.swagger.io', '').replace(/ ?upgrade-insecure-requests;?/, '').replace(/\s+;/g, ';').trim();
}

function exampleDetail(code: ErrorCode): string {
  return ERROR_CATALOGUE[code].description.replace(/`/g, '');
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered on this instance (method and URL), seen by an `onRoute` hook. */
    registeredRoutes: { method: string; url: string; hidden: boolean }[];
  }
}

/** Registers the generator, `/openapi.json` and `/docs`; must run before any route is added. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any logger and type provider
export async function registerOpenApi(app: FastifyInstance<any, any, any, any, any>): Promise<void> {
  const routes: FastifyInstance['registeredRoutes'] = [];
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const hidden = (route.schema as { hide?: boolean } | undefined)?.hide === true;
    for (const method of methods) routes.push({ method, url: route.url, hidden });
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tabula ledger API',
        version: API_VERSION,
        description: [
          'Transactions between accounts in the native token and USDG, balances, hash-chained blocks, RFC 6962',
          'inclusion proofs and statistics. Every `/api` route needs `Authorization: Bearer <JWT>` (and `X-API-Key`',
          'when the service has API keys). Errors are RFC 9457 `application/problem+json` with a stable `code`.',
          'Amounts in responses are JSON numbers whose text is the exact decimal of the base units. Hash encodings',
          'and proof verification: docs/api.md. Every `/api/...` path is version 1 of the interface and is also served',
          `as \`/api/v${API_MAJOR_VERSION}/...\`; answers name their version in \`${API_VERSION_HEADER}\`, and a route being retired says so with`,
          '`Deprecation` (RFC 9745) and `Sunset` (RFC 8594) headers. Besides the errors of each operation, any request may get:\n',
          ...CONNECTION_ERROR_CODES.map((code) => `\n- ${ERROR_CATALOGUE[code].status} \`${code}\`: ${ERROR_CATALOGUE[code].description}`),
        ].join(' '),
      },
      servers: [{ url: '/' }],
      tags: [
        { name: 'transactions', description: 'Submit transactions, look them up, prove their inclusion' },
        { name: 'blocks', description: 'The hash-chained blocks' },
        { name: 'accounts', description: 'Balances and transaction histories' },
        { name: 'network', description: 'Statistics' },
        { name: 'market', description: 'Swaps against the @pool: quotes and price candles' },
        { name: 'webhooks', description: 'Signed deliveries of the event log to your endpoints (admins only)' },
        { name: 'health', description: 'Liveness and readiness (no authentication)' },
      ],
      components: {
        securitySchemes: {
          bearer_token: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "A JWT from the identity provider; `sub` is the caller's user id" },
          api_key: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Required on every `/api` request when the service is configured with `API_KEYS`' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX, uiConfig: { deepLinking: true }, staticCSP: true, transformStaticCSP: ownOriginOnly });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}
