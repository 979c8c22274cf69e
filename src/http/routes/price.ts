/** The market's reads: the pool as of the newest block, a quote against its reserves, and the price candles. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TokenRegistry } from '../../domain/shared/tokens.js';
import { CANDLE_LIMIT_DEFAULT, CANDLE_LIMIT_MAX, isCandleInterval, type CandleInterval } from '../../domain/market/candles.js';
import type { LedgerService } from '../../service/ledger-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses } from '../openapi.js';
import { HttpProblem } from '../problem.js';
import { MarketSchema, PriceHistoryQuerySchema, PriceHistorySchema, QuoteQuerySchema, QuoteSchema } from '../schemas.js';
import { marketView, priceHistoryView, quoteView } from '../../views/record-views.js';
import { sendExact } from '../json-replies.js';

export const priceRoutes: FastifyPluginAsyncTypebox<{ service: LedgerService; tokens: TokenRegistry }> = async (app, { service, tokens }) => {
  app.get('/market', {
    schema: {
      summary: 'The pool as of the newest block',
      description: 'Its account, fee, reserves and the price the newest block carries: what a verifier needs to replay the pool.',
      operationId: 'getMarket',
      tags: ['market'],
      security: API_SECURITY,
      response: {
        200: { ...MarketSchema, description: 'The market', headers: API_RESPONSE_HEADERS },
        ...errorResponses([...API_ERROR_CODES]),
      },
    },
  }, async (_request, reply) => sendExact(reply, marketView(await service.market(), tokens)));

  app.get('/price/quote', {
    schema: {
      summary: 'What a swap would receive now',
      description: 'From the reserves as of the newest block, with the pool\'s fee; not binding (pass `min_receive` to bound a swap).',
      operationId: 'getPriceQuote',
      tags: ['market'],
      security: API_SECURITY,
      querystring: QuoteQuerySchema,
      response: {
        200: { ...QuoteSchema, description: 'The quote', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['unsupported_token', 'invalid_amount', 'amount_not_positive', 'amount_too_precise', 'amount_out_of_range', 'market_unavailable', ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => sendExact(reply, quoteView(await service.quote(request.query.token, request.query.amount), tokens)));

  app.get('/price/history', {
    schema: {
      summary: 'Price candles',
      description: 'Kept as blocks are sealed: one index range read, whatever the length of the history.',
      operationId: 'getPriceHistory',
      tags: ['market'],
      security: API_SECURITY,
      querystring: PriceHistoryQuerySchema,
      response: {
        200: { ...PriceHistorySchema, description: 'The newest candles, oldest first', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_price_interval', 'invalid_pagination', ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => {
    const interval = parseInterval(request.query.interval);
    const limit = parseCandleLimit(request.query.limit);
    return sendExact(reply, priceHistoryView(interval, await service.priceHistory(interval, limit)));
  });
};

function parseInterval(text: string | undefined): CandleInterval {
  if (text === undefined) return '1h';
  if (!isCandleInterval(text)) throw new HttpProblem('invalid_price_interval', 'interval must be 1m, 1h or 1d', {}, [{ field: 'interval', message: 'must be 1m, 1h or 1d' }]);
  return text;
}

function parseCandleLimit(text: string | undefined): number {
  if (text === undefined) return CANDLE_LIMIT_DEFAULT;
  const limit = /^[0-9]{1,4}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= CANDLE_LIMIT_MAX)) {
    throw new HttpProblem('invalid_pagination', `limit must be an integer from 1 to ${CANDLE_LIMIT_MAX}`, {}, [{ field: 'limit', message: `must be an integer from 1 to ${CANDLE_LIMIT_MAX}` }]);
  }
  return limit;
}
