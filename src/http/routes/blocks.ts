import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { LedgerService } from '../../service/ledger-service.js';
import type { SealedRecordCache } from '../../read-cache/sealed-record-cache.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, NOT_MODIFIED_RESPONSE, PATH_PARAMETER_ERROR_CODES, SEALED_RECORD_HEADERS } from '../openapi.js';
import { parseBlockNumber, parsePagination } from '../parameters.js';
import { BlockPageSchema, BlockParamsSchema, BlockSchema, BlocksQuerySchema } from '../schemas.js';
import { sendRecord } from '../sealed-answers.js';
import { blockView } from '../views.js';

export const blockRoutes: FastifyPluginAsyncTypebox<{ service: LedgerService; read_cache: SealedRecordCache }> = async (app, { service, read_cache }) => {
  app.get('/blocks', {
    schema: {
      summary: 'Blocks, newest first',
      description: 'Headers without their transaction lists. Offset k starts at block number latest − k: a page costs the same at any offset.',
      operationId: 'listBlocks',
      tags: ['blocks'],
      security: API_SECURITY,
      querystring: BlocksQuerySchema,
      response: {
        200: { ...BlockPageSchema, description: 'A page of block headers', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_pagination', ...API_ERROR_CODES]),
      },
    },
  }, async (request) => {
    const { limit, offset } = parsePagination(request.query);
    const page = await service.blocks(limit, offset);
    return { ...page, blocks: page.blocks.map((block) => ({ ...block, native_price: block.native_price ?? null })) };
  });

  app.get('/blocks/:number', {
    schema: {
      summary: 'A block with its transaction hashes',
      description: 'Recompute `transactions_root` from `transactions` (RFC 6962) and `hash` from the header to verify it. Genesis is block 0. A block never changes: its answer carries an `ETag` and `Cache-Control: private, max-age=31536000, immutable`, and `If-None-Match` with that tag gets 304.',
      operationId: 'getBlock',
      tags: ['blocks'],
      security: API_SECURITY,
      params: BlockParamsSchema,
      response: {
        200: { ...BlockSchema, description: 'The block', headers: SEALED_RECORD_HEADERS },
        ...NOT_MODIFIED_RESPONSE,
        ...errorResponses(['invalid_block_number', 'block_not_found', ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => {
    const number = parseBlockNumber(request.params.number);
    return sendRecord(request, reply, read_cache, `block:${number}`, async () => ({ view: blockView(await service.block(number)), sealed: true }));
  });
};
