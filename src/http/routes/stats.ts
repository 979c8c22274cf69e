/** `GET /api/stats`: the network's statistics. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { LedgerService, Stats } from '../../service/ledger-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses } from '../openapi.js';
import { StatsSchema } from '../schemas.js';
import { stringifyExact } from '../../views/exact-json.js';
import { statsView } from '../../views/record-views.js';
import { jsonOncePerObject, sendJsonText } from '../json-replies.js';

export const statsRoutes: FastifyPluginAsyncTypebox<{ service: LedgerService }> = async (app, { service }) => {
  // The service computes the statistics once per second and newest block and hands every request of
  // that time the same object: its JSON is written once too.
  const statsJson = jsonOncePerObject((stats: Stats) => stringifyExact(statsView(stats)));

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
  }, async (_request, reply) => sendJsonText(reply, statsJson(await service.stats())));
};
