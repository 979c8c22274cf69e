import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { LedgerService } from '../../service/ledger-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses } from '../openapi.js';
import { StatsSchema } from '../schemas.js';
import { statsView, sendExact } from '../views.js';

export const statsRoutes: FastifyPluginAsyncTypebox<{ service: LedgerService }> = async (app, { service }) => {
  app.get('/stats', {
    schema: {
      summary: 'Network statistics',
      description: 'From running totals kept per block: answering never scans the history.',
      operationId: 'getStats',
      tags: ['network'],
      security: API_SECURITY,
      response: {
        200: { ...StatsSchema, description: 'The statistics', headers: API_RESPONSE_HEADERS },
        ...errorResponses(API_ERROR_CODES),
      },
    },
  }, async (_request, reply) => sendExact(reply, statsView(await service.stats())));
};
