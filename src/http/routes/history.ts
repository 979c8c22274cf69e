/** The history tree and signed checkpoints over HTTP: consistency and block proofs, checkpoints, and the checkpoint key. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { CheckpointBuilder } from '../../checkpoints/checkpoint-builder.js';
import type { HistoryService } from '../../service/history-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, PATH_PARAMETER_ERROR_CODES } from '../openapi.js';
import { parseBlockNumber } from '../parameters.js';
import { HttpProblem } from '../problem.js';
import {
  BlockParamsSchema, BlockProofSchema, CheckpointKeySchema, CheckpointSchema, ConsistencyProofSchema, ConsistencyQuerySchema, HistorySizeQuerySchema,
} from '../schemas.js';

export type HistoryRouteOptions = { history: HistoryService; checkpoints: CheckpointBuilder };

/** A history size from the query: an integer ≥ 1 (at most 15 digits), or absent. */
export function parseHistorySize(text: string | undefined, field: string): number | null {
  if (text === undefined) return null;
  if (!/^[1-9][0-9]{0,14}$/.test(text)) {
    throw new HttpProblem('invalid_history_size', `${field} must be an integer ≥ 1`, {}, [{ field, message: 'must be an integer ≥ 1' }]);
  }
  return Number(text);
}

export const historyRoutes: FastifyPluginAsyncTypebox<HistoryRouteOptions> = async (app, { history, checkpoints }) => {
  app.get('/chain/consistency', {
    schema: {
      summary: 'Consistency proof between two history sizes (RFC 9162 section 2.1.4)',
      description: 'Proves that the history tree of `to` blocks extends the one of `from` blocks: O(log n) hashes. Verify it with the two history roots (from signed checkpoints).',
      operationId: 'getConsistencyProof',
      tags: ['blocks'],
      security: API_SECURITY,
      querystring: ConsistencyQuerySchema,
      response: {
        200: { ...ConsistencyProofSchema, description: 'The consistency proof', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['validation_failed', 'invalid_history_size', 'history_size_not_reached', ...API_ERROR_CODES]),
      },
    },
  }, async (request) => {
    const from = parseHistorySize(request.query.from, 'from') as number;
    const to = parseHistorySize(request.query.to, 'to') as number;
    return history.consistency(from, to);
  });

  app.get('/blocks/:number/proof', {
    schema: {
      summary: 'Inclusion proof of a block in the history tree',
      description: 'RFC 6962 audit path of the block hash (leaf `block_number`) in the history tree of `size` blocks (default: the latest). Verify against the `history_root` of a signed checkpoint of that size.',
      operationId: 'getBlockProof',
      tags: ['blocks'],
      security: API_SECURITY,
      params: BlockParamsSchema,
      querystring: HistorySizeQuerySchema,
      response: {
        200: { ...BlockProofSchema, description: 'The block\'s inclusion proof', headers: API_RESPONSE_HEADERS },
        ...errorResponses([
          'invalid_block_number', 'invalid_history_size', 'block_not_in_history', 'block_not_found', 'history_size_not_reached',
          ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES,
        ]),
      },
    },
  }, async (request) => history.blockProof(parseBlockNumber(request.params.number), parseHistorySize(request.query.size, 'size')));

  app.get('/checkpoint', {
    schema: {
      summary: 'A signed checkpoint of the history',
      description: 'The history root of `size` blocks (default: the latest), in a note signed with Ed25519 by the key of `/.well-known/tabula-checkpoint-key`. Instances sharing a database and a key serve identical checkpoints.',
      operationId: 'getCheckpoint',
      tags: ['blocks'],
      security: API_SECURITY,
      querystring: HistorySizeQuerySchema,
      response: {
        200: { ...CheckpointSchema, description: 'The signed checkpoint', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_history_size', 'history_size_not_reached', ...API_ERROR_CODES]),
      },
    },
  }, async (request) => checkpoints.checkpoint(parseHistorySize(request.query.size, 'size')));
};

/** `GET /.well-known/tabula-checkpoint-key`: the public key that signs checkpoints; no token needed. */
export const checkpointKeyRoutes: FastifyPluginAsyncTypebox<{ checkpoints: CheckpointBuilder }> = async (app, { checkpoints }) => {
  app.get('/.well-known/tabula-checkpoint-key', {
    schema: {
      summary: 'The checkpoint signing key', operationId: 'getCheckpointKey', tags: ['blocks'], security: [],
      response: { 200: { ...CheckpointKeySchema, description: 'The Ed25519 public key of checkpoints' } },
    },
  }, async () => checkpoints.publicKey());
};
