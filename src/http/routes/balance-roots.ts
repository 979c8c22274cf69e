/** The balance root stored for a block (`/api/blocks/{number}/balance-root`): what a balance proof of that block is checked against. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { LedgerService } from '../../service/ledger-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, PATH_PARAMETER_ERROR_CODES } from '../openapi.js';
import { parseBlockNumber } from '../parameters.js';
import { BlockParamsSchema } from '../schemas.js';

const BalanceRootSchema = Type.Object({
  block_number: Type.Integer(),
  balance_root: Type.Union([Type.String({ pattern: '^0x[0-9a-f]{64}$' }), Type.Null()], {
    description: 'the root of the balance tree after the block; null for a block sealed before the ledger kept balance commitments',
  }),
}, { examples: [{ block_number: 7, balance_root: `0x${'3f'.repeat(32)}` }] });

export const balanceRootRoutes: FastifyPluginAsyncTypebox<{ service: LedgerService }> = async (app, { service }) => {
  app.get('/blocks/:number/balance-root', {
    schema: {
      summary: "The root of the balance tree after a block",
      description: 'The balance commitment of a block: `GET /api/balance/{userId}?proof=true` proves balances against the newest one. See docs/api.md, "Balance proofs".',
      operationId: 'getBalanceRoot',
      tags: ['blocks'],
      security: API_SECURITY,
      params: BlockParamsSchema,
      response: {
        200: { ...BalanceRootSchema, description: 'The balance root', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_block_number', 'block_not_found', ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES]),
      },
    },
  }, async (request) => {
    const block_number = parseBlockNumber(request.params.number);
    return { block_number, balance_root: await service.balanceRoot(block_number) };
  });
};
