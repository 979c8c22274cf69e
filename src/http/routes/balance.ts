import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { parseUserId } from '../../domain/user-id.js';
import type { TokenRegistry } from '../../domain/tokens.js';
import type { LedgerService } from '../../service/ledger-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, PATH_PARAMETER_ERROR_CODES } from '../openapi.js';
import { BalanceSchema, UserParamsSchema } from '../schemas.js';
import { balanceView, sendExact } from '../views.js';

type Options = { service: LedgerService; tokens: TokenRegistry };

export const balanceRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { service, tokens }) => {
  app.get('/balance/:userId', {
    schema: {
      summary: "A user's confirmed balances",
      description: 'From confirmed transactions only; an unknown user has zero balances. Any authenticated caller may read any balance.',
      operationId: 'getBalance',
      tags: ['accounts'],
      security: API_SECURITY,
      params: UserParamsSchema,
      response: {
        200: { ...BalanceSchema, description: 'The balances', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_user_id', ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => {
    const balances = await service.balances(parseUserId(request.params.userId, 'userId'));
    return sendExact(reply, balanceView(balances, tokens));
  });
};
