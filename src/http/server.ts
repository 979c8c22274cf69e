/**
 * The HTTP server: Fastify with TypeBox schemas. `buildServer` takes everything it needs (no module
 * state), so tests build one with their own store, clock and keys and drive it with `app.inject()`.
 */
import { isUtf8 } from 'node:buffer';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type { DevTokenSigner } from '../auth/dev-token-signer.js';
import type { TokenRegistry } from '../domain/shared/tokens.js';
import type { EventFeed } from '../events/event.js';
import type { LedgerMetrics } from '../metrics/ledger-metrics.js';
import type { Clock } from '../service/clock.js';
import type { LedgerService } from '../service/ledger-service.js';
import type { TokenVerifier } from '../auth/token-verifier.js';
import { NO_DEPRECATIONS, routedUrl, setVersionHeaders, type DeprecationTable } from './api-version.js';
import { clientErrorHandler, connectHandler, expectationHandler, sendProblem } from './error-mapping.js';
import { keepNumbersExact, mayHoldInexactNumber } from './json-body.js';
import { registerOpenApi } from './openapi.js';
import { HttpProblem } from './problem.js';
import type { RateLimiter } from './rate-limit.js';
import { guard } from './request-guard.js';
import { accountRoutes } from './routes/accounts.js';
import { blockRoutes } from './routes/blocks.js';
import { READ_CACHE_DEFAULT_BYTES, SealedRecordCache } from '../read-cache/sealed-record-cache.js';
import { balanceRootRoutes } from './routes/balance-roots.js';
import { devTokenRoutes } from './routes/dev-token.js';
import { eventRoutes, type EventStreamLimits } from './routes/events.js';
import { explorerRoutes } from './routes/explorer.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { priceRoutes } from './routes/price.js';
import { statsRoutes } from './routes/stats.js';
import { transactionRoutes } from './routes/transactions.js';
import { checkpointKeyRoutes, historyRoutes, type HistoryRouteOptions } from './routes/history.js';
import { webhookRoutes } from './routes/webhooks.js';
import { TurnGathering } from './turn-gathering.js';
import type { WebhookService } from '../webhooks/webhook-service.js';

export const BODY_BYTES_MAX = 64 * 1024;
const PARAMETER_LENGTH_MAX = 1024;

/**
 * What one instance lets clients hold (HTTP_* variables): a request must be whole within
 * `request_timeout_ms` and its headers within `headers_timeout_ms` (slow clients are closed, checked
 * every `CONNECTIONS_CHECK_INTERVAL_MS`); a keep-alive connection idle for `keep_alive_timeout_ms` is
 * closed; past `connections_max` open connections, new ones are closed at once.
 */
export type ConnectionLimits = { request_timeout_ms: number; headers_timeout_ms: number; keep_alive_timeout_ms: number; connections_max: number };

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { request_timeout_ms: 30_000, headers_timeout_ms: 10_000, keep_alive_timeout_ms: 65_000, connections_max: 10_000 };
const CONNECTIONS_CHECK_INTERVAL_MS = 1000;
const CORS_MAX_AGE_S = 600;

export type ServerDependencies = {
  service: LedgerService;
  tokens: TokenRegistry;
  verifier: TokenVerifier;
  /** Present when API keys are configured. */
  api_key_check: ((presented: string | undefined) => boolean) | null;
  rate_limiter: RateLimiter;
  /** Bad tokens per client address (see request-guard.ts). */
  auth_failure_limiter: RateLimiter;
  /** Proxies trusted to name the client in `X-Forwarded-For`; empty: the socket's address is the client. */
  trust_proxy: readonly string[];
  clock: Clock;
  logger: Logger;
  metrics: LedgerMetrics;
  /** Serve `/metrics` on this server (with this bearer token, if any); null when it is not served here. */
  metrics_route: { token: string | undefined } | null;
  /** When set, `POST /dev/token` mints development tokens (only with the development secret). */
  dev_tokens?: DevTokenSigner | undefined;
  /** When set, the folder of the built explorer, served at `/`. */
  explorer_root?: string | undefined;
  /** Origins allowed to call the API from a browser; empty: no CORS headers (same origin only). */
  cors_origins?: readonly string[] | undefined;
  /** When set, `GET /api/events` streams the event log from this feed. */
  events?: { feed: EventFeed; limits: EventStreamLimits; store_head(): Promise<number>; on_streams_open?: (open: number) => void } | undefined;
  /** When set, `/api/webhooks` manages the webhook endpoints (admins only). */
  webhooks?: WebhookService | undefined;
  /** Routes being retired, answered with `Deprecation` and `Sunset` headers (default: none). */
  deprecations?: DeprecationTable | undefined;
  /** When set, the history tree's proofs and signed checkpoints are served (and transaction proofs carry `history`). */
  history?: HistoryRouteOptions | undefined;
  /** Timeouts and the connection cap (default: DEFAULT_CONNECTION_LIMITS). */
  connection_limits?: ConnectionLimits | undefined;
  /** Serialised answers of sealed transactions, blocks and final history pages (default: a cache of READ_CACHE_DEFAULT_BYTES). */
  read_cache?: SealedRecordCache | undefined;
};

export async function buildServer(deps: ServerDependencies) {
  const app = baseServer(deps.logger, deps.trust_proxy, deps.connection_limits);
  const read_cache = deps.read_cache ?? new SealedRecordCache(READ_CACHE_DEFAULT_BYTES);
  const kept_answers = { cache: read_cache, gathering: new TurnGathering() };
  app.decorateRequest('principal', null);
  // Callback-style hooks: no promise per request.
  app.addHook('onResponse', (request, reply, done) => {
    deps.metrics.httpRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime);
    done();
  });

  if (deps.cors_origins !== undefined && deps.cors_origins.length > 0) await registerCors(app, deps.cors_origins);
  await registerOpenApi(app);
  await app.register(healthRoutes, { service: deps.service, verifier: deps.verifier });
  if (deps.dev_tokens !== undefined) await app.register(devTokenRoutes, { signer: deps.dev_tokens });
  if (deps.explorer_root !== undefined) {
    await app.register(explorerRoutes, { root: deps.explorer_root, native_symbol: deps.tokens.native.symbol, dev_tokens: deps.dev_tokens !== undefined });
  }
  if (deps.history !== undefined) await app.register(checkpointKeyRoutes, { checkpoints: deps.history.checkpoints });
  if (deps.metrics_route !== null) await app.register(metricsRoutes, { metrics: deps.metrics, token: deps.metrics_route.token });
  await app.register(async (api) => {
    const deprecations = deps.deprecations ?? NO_DEPRECATIONS;
    api.addHook('onRequest', (request, reply, done) => {
      setVersionHeaders(reply, `${request.method} ${request.routeOptions.url ?? ''}`, deprecations);
      done();
    });
    api.addHook('onRequest', (request, reply) => guard(deps, request, reply));
    await api.register(transactionRoutes, { service: deps.service, tokens: deps.tokens, metrics: deps.metrics, rate_limiter: deps.rate_limiter, clock: deps.clock, history: deps.history?.history, kept_answers });
    await api.register(accountRoutes, { service: deps.service, tokens: deps.tokens, read_cache });
    await api.register(blockRoutes, { service: deps.service, kept_answers });
    await api.register(balanceRootRoutes, { service: deps.service });
    await api.register(statsRoutes, { service: deps.service });
    await api.register(priceRoutes, { service: deps.service, tokens: deps.tokens });
    if (deps.history !== undefined) await api.register(historyRoutes, deps.history);
    if (deps.events !== undefined) await api.register(eventRoutes, deps.events);
    if (deps.webhooks !== undefined) await api.register(webhookRoutes, { service: deps.webhooks });
  }, { prefix: '/api' });
  return app;
}

/**
 * CORS for browser apps on other origins. Bearer tokens, not cookies, authenticate, so credentials are
 * never allowed; preflights are answered before authentication and the rate limit.
 */
async function registerCors(app: Awaited<ReturnType<typeof baseServer>>, origins: readonly string[]): Promise<void> {
  await app.register(cors, {
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-API-Key'],
    exposedHeaders: ['Location', 'Idempotent-Replayed', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'API-Version', 'Deprecation', 'Sunset'],
    credentials: false,
    maxAge: CORS_MAX_AGE_S,
  });
}

/** A server of its own for `/metrics` (METRICS_PORT), so that the API port need not expose it. */
export async function buildMetricsServer(metrics: LedgerMetrics, token: string | undefined, logger: Logger) {
  const app = baseServer(logger);
  await app.register(metricsRoutes, { metrics, token });
  return app;
}

/** Fastify with the limits, the problem+json error handling and the request log every server of ours has. */
function baseServer(logger: Logger, trust_proxy: readonly string[] = [], limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS) {
  const app = Fastify({
    // Forwarding headers are believed only from the proxies the operator names (TRUST_PROXY).
    trustProxy: trust_proxy.length === 0 ? false : [...trust_proxy],
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_BYTES_MAX,
    routerOptions: { maxParamLength: PARAMETER_LENGTH_MAX },
    requestTimeout: limits.request_timeout_ms,
    keepAliveTimeout: limits.keep_alive_timeout_ms,
    // A request without Host reaches the hooks (which refuse it as problem+json) instead of Node's bare 400.
    http: { headersTimeout: limits.headers_timeout_ms, connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS, requireHostHeader: false },
    // `/api/v1/...` is served by the route of `/api/...` (see api-version.ts).
    rewriteUrl: (request) => routedUrl(request.url ?? '/'),
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false } },
    // While closing, requests on open connections are still served (with Connection: close): the
    // shutdown drains the writer and seals afterwards, so nothing acknowledged is lost.
    return503OnClosing: false,
    frameworkErrors: (error, request, reply) => sendProblem(request, reply, error),
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.server.maxConnections = limits.connections_max;
  // What Node answers by itself otherwise, without a body (an unmet Expect) or not at all (CONNECT).
  app.server.on('checkExpectation', expectationHandler);
  app.server.on('connect', connectHandler);

  app.setErrorHandler((error, request, reply) => sendProblem(request, reply, error));
  // No answer of ours is to be sniffed into another type (a JSON body rendered as HTML, say).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-content-type-options', 'nosniff');
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own check answers a bare 400, so it is made here.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      reply.header('connection', 'close');
      done(new HttpProblem('malformed_request', 'an HTTP/1.1 request must carry a Host header'));
      return;
    }
    done();
  });
  // Bodies are JSON only: without this, Fastify's built-in text/plain parser hands a string to the
  // schema (a confusing 400) where every other non-JSON type gets 415.
  app.removeContentTypeParser('text/plain');
  // JSON as Fastify reads it (prototype-poisoning keys refused), then, where a number may have been
  // rounded, read again losslessly so that no number is silently changed (see json-body.ts).
  const secure_json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // Read as bytes and decoded here: a string read replaces a byte that is not UTF-8 with U+FFFD, so
  // `"to":"bob\xff"` would credit "bob\uFFFD", an account the client never named.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) {
      done(new HttpProblem('malformed_json', 'the body is not valid UTF-8'), undefined);
      return;
    }
    const text = bytes.toString('utf8');
    secure_json(request, text, (error, parsed) => {
      if (error !== null || !mayHoldInexactNumber(text)) {
        done(error, parsed);
        return;
      }
      try {
        done(null, keepNumbersExact(text, parsed));
      } catch (problem) {
        done(problem as Error, undefined);
      }
    });
  });
  // JSON is read as UTF-8 (RFC 8259) and as sent: a body declared in another charset, or compressed,
  // would be misread, so refuse it.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const charset = declaredCharset(request.headers['content-type']);
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      done(new HttpProblem('unsupported_media_type', `bodies are read as UTF-8 JSON; charset=${charset} is not accepted`), payload);
      return;
    }
    const encoding = request.headers['content-encoding'];
    const has_body = request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined;
    if (has_body && encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      done(new HttpProblem('unsupported_media_type', `bodies are read as sent; Content-Encoding ${encoding} is not accepted`), payload);
      return;
    }
    done(null, payload);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, new HttpProblem('route_not_found', `no route for ${request.method} ${request.url.split('?')[0]}`)),
  );
  const debug = logger.isLevelEnabled('debug');
  app.addHook('onResponse', (request, reply, done) => {
    // 500 is a bug: logged with the request. Other answers (a 503 refusal is logged by sendProblem) only at debug.
    const level = reply.statusCode === 500 ? 'error' : 'debug';
    if (level === 'error' || debug) request.log[level]({ method: request.method, url: request.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
    done();
  });
  return app;
}

export type App = Awaited<ReturnType<typeof buildServer>>;

/** The `charset` parameter of a Content-Type, lower-cased, or null when none is declared. */
function declaredCharset(content_type: string | undefined): string | null {
  if (content_type === undefined) return null;
  const match = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(content_type);
  return match === null ? null : (match[1] ?? '').toLowerCase();
}
