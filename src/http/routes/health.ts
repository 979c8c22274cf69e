/** `GET /healthz` (the process is up) and `GET /readyz` (the store answers and the identity provider's keys were fetched). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { LedgerService } from '../../service/ledger-service.js';
import { errorResponses } from '../openapi.js';
import { HttpProblem } from '../problem.js';
import { HealthSchema } from '../schemas.js';

/** Liveness and readiness for load balancers; no authentication. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ service: LedgerService; verifier: TokenVerifier }> = async (app, { service, verifier }) => {
  app.get('/healthz', {
    schema: {
      summary: 'Liveness', operationId: 'health', tags: ['health'], security: [],
      response: { 200: { ...HealthSchema, description: 'The process is up' } },
    },
  }, async () => ({ status: 'ok' }));

  app.get('/readyz', {
    schema: {
      summary: "Readiness: the store answers and the identity provider's keys were fetched", operationId: 'ready', tags: ['health'], security: [],
      response: { 200: { ...HealthSchema, description: 'Ready', examples: [{ status: 'ready' }] }, ...errorResponses(['not_ready']) },
    },
  }, async () => {
    try {
      await service.ready();
    } catch {
      throw new HttpProblem('not_ready', 'the store cannot be reached');
    }
    // Until the identity provider's keys were fetched once, no bearer token can be verified.
    const auth = verifier.readiness();
    if (auth !== null) throw new HttpProblem('not_ready', auth);
    return { status: 'ready' };
  });
};
