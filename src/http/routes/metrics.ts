/** `GET /metrics`: Prometheus text; behind `METRICS_TOKEN` as a bearer token when one is set. */
import type { FastifyPluginAsync } from 'fastify';
import type { LedgerMetrics } from '../../metrics/ledger-metrics.js';
import { createApiKeyCheck } from '../../auth/api-key-check.js';
import { AuthError } from '../../auth/auth-error.js';

type Options = { metrics: LedgerMetrics; token: string | undefined };

/** Prometheus exposition; with a token configured only `Authorization: Bearer <METRICS_TOKEN>` may read it. */
export const metricsRoutes: FastifyPluginAsync<Options> = async (app, { metrics, token }) => {
  const check = token === undefined ? null : createApiKeyCheck([token]);
  app.get('/metrics', async (request, reply) => {
    if (check !== null) authorize(check, request.headers.authorization);
    const { content_type, body } = await metrics.exposition();
    return reply.type(content_type).send(body);
  });
};

function authorize(check: (presented: string | undefined) => boolean, authorization: string | undefined): void {
  if (authorization === undefined || authorization === '') throw new AuthError('missing_token', 'an Authorization: Bearer <METRICS_TOKEN> header is required');
  const match = /^Bearer +([^\s]+) *$/i.exec(authorization);
  if (match === null || !check(match[1])) throw new AuthError('invalid_token', 'the bearer token is not the metrics token');
}
