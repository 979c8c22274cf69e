/** `GET /api/blocks` (a page of headers) and `GET /api/blocks/{number}` (a block with its transaction hashes). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { BlockPage, LedgerService } from '../../service/ledger-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, NOT_MODIFIED_RESPONSE, PATH_PARAMETER_ERROR_CODES, SEALED_RECORD_HEADERS } from '../openapi.js';
import { parseBlockNumber, parsePagination } from '../parameters.js';
import { BlockPageSchema, BlockParamsSchema, BlockSchema, BlocksQuerySchema } from '../schemas.js';
import { sendRecord, type KeptAnswers } from '../sealed-answers.js';
import { blockHeaderView, blockView } from '../../views/record-views.js';
import { jsonOncePerObject, sendJsonText } from '../json-replies.js';
import type { BlockHeader } from '../../domain/block.js';

export const blockRoutes: FastifyPluginAsyncTypebox<{ service: LedgerService; kept_answers: KeptAnswers }> = async (app, { service, kept_answers }) => {
  // A sealed header never changes, and the service hands out the same header objects for as long as it
  // keeps them (block-header-cache.ts): each is serialised once, and a page is their concatenation.
  const headerJson = jsonOncePerObject((block: BlockHeader) => JSON.stringify(blockHeaderView(block)));
  // The service hands every request for one page the same object until the next block: written once.
  // The page's fields in BlockPageSchema's order, as its serializer writes them (test/http/reads.test.ts).
  const pageJson = jsonOncePerObject((page: BlockPage) => `{"blocks":[${page.blocks.map(headerJson).join(',')}],"total":${page.total},"limit":${page.limit},"offset":${page.offset}}`);

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
  }, async (request, reply) => {
    const { limit, offset } = parsePagination(request.query);
    return sendJsonText(reply, pageJson(await service.blocks(limit, offset)));
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
    return sendRecord(request, reply, kept_answers, `block:${number}`, async () => ({ view: blockView(await service.block(number)), sealed: true }));
  });
};
