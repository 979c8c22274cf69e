/** Submitting transactions (one, or a batch), reading one by hash, and its inclusion proof. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { TokenRegistry } from '../../domain/shared/tokens.js';
import { TRANSACTION_TYPES } from '../../domain/transaction.js';
import type { LedgerMetrics } from '../../metrics/ledger-metrics.js';
import type { Clock } from '../../service/clock.js';
import { distinctIdempotencyKeys, type BatchItem, type BatchItemOutcome, type LedgerService, type Principal } from '../../service/ledger-service.js';
import { toHttpProblem } from '../error-mapping.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, NOT_MODIFIED_RESPONSE, PATH_PARAMETER_ERROR_CODES, SEALED_RECORD_HEADERS } from '../openapi.js';
import { parseHashParameter } from '../parameters.js';
import { HttpProblem, problem, type Problem } from '../problem.js';
import type { RateLimitDecision, RateLimiter } from '../rate-limit.js';
import {
  BatchBodySchema, BatchItemSchema, BatchResponseSchema, HashParamsSchema, ReceiptSchema, TransactionProofSchema, SubmitBodySchema,
  SubmitHeadersSchema, TransactionSchema, type BatchItemBody,
} from '../schemas.js';
import { principalOf } from '../request-guard.js';
import type { HistoryService } from '../../service/history-service.js';
import { transactionView } from '../../views/record-views.js';
import { sendRecord, transactionKey, type KeptAnswers } from '../sealed-answers.js';

/** A batch of 1000 plain transfers is about 100 KiB; this leaves room for metadata. */
export const BATCH_BODY_BYTES_MAX = 1024 * 1024;

type Options = {
  service: LedgerService; tokens: TokenRegistry; metrics: LedgerMetrics; rate_limiter: RateLimiter; clock: Clock;
  /** When set, a transaction's proof carries its block's inclusion in the latest history. */
  history?: HistoryService | undefined;
  /** Sealed transactions' answers, kept serialised (src/read-cache), and each turn's lookups answered together. */
  kept_answers: KeptAnswers;
};

type BatchResult = { index: number; status: number; tx_hash?: string; timestamp?: number; replayed?: boolean; error?: Problem };

const batchItemCheck = TypeCompiler.Compile(BatchItemSchema);

const SUBMIT_ERRORS = [
  'validation_failed', 'malformed_json', 'number_not_exact', 'invalid_amount', 'amount_not_positive', 'amount_not_exact', 'amount_too_precise',
  'amount_out_of_range', 'unsupported_token', 'unsupported_transaction_type', 'invalid_user_id', 'same_account', 'invalid_metadata',
  'metadata_too_large', 'invalid_idempotency_key', 'admin_required', 'not_account_owner', 'system_account', 'invalid_swap_account', 'payload_too_large', 'unsupported_media_type',
  'idempotency_key_reused', 'failure_budget_exceeded', 'service_overloaded', 'pending_backlog_full', ...API_ERROR_CODES,
] as const;

/** A batch refuses as a whole only what it cannot read; each item's own errors are in its result. */
const BATCH_ERRORS = ['validation_failed', 'malformed_json', 'number_not_exact', 'payload_too_large', 'unsupported_media_type', 'service_overloaded', 'pending_backlog_full', ...API_ERROR_CODES] as const;

export const transactionRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { service, tokens, metrics, rate_limiter, clock, history, kept_answers }) => {
  /**
   * Charges a batch one request per transaction. When that does not fit, items whose idempotency key
   * the caller already stored (they write nothing) are not charged: a client retrying a batch whose
   * answer it lost, as the SDK does, is not refused for the transactions it already paid for. The
   * keys are looked up (in one query) only when that could let the batch in: a caller whose bucket
   * could not take the batch even if every keyed item were a repeat is refused at no store cost.
   */
  async function chargeBatch(principal: Principal, bodies: readonly unknown[]): Promise<RateLimitDecision> {
    const key = `sub:${principal.sub}`;
    const now_ms = clock.now_ms();
    const decision = await rate_limiter.check(key, now_ms, bodies.length - 1);
    if (decision.allowed) return decision;
    const keys = distinctIdempotencyKeys(bodies.map((body) => (body as { idempotency_key?: unknown } | null)?.idempotency_key));
    const cost_at_best = Math.max(0, bodies.length - 1 - keys.length);
    if (keys.length === 0 || !(await rate_limiter.peek(key, now_ms, cost_at_best)).allowed) return decision;
    const stored = await service.storedIdempotencyKeyCount(principal, keys);
    return stored === 0 ? decision : rate_limiter.check(key, now_ms, Math.max(0, bodies.length - 1 - stored));
  }

  app.post('/transactions/submit', {
    schema: {
      summary: 'Submit a transaction',
      description: 'Validates the transaction and stores it durably as `pending` before answering 202; the block producer then seals it, in arrival order, as `confirmed` or `failed`. `transfer` needs the caller to be `from` (or an admin); `mint` and `burn` need an admin.',
      operationId: 'submitTransaction',
      tags: ['transactions'],
      security: API_SECURITY,
      body: SubmitBodySchema,
      headers: SubmitHeadersSchema,
      response: {
        202: {
          ...ReceiptSchema,
          description: 'Accepted: stored durably as pending',
          headers: {
            Location: { type: 'string', description: 'The transaction: `/api/transactions/{tx_hash}`' },
            'Idempotent-Replayed': { type: 'string', description: '`true` when this answers a repeat of an `Idempotency-Key`' },
            ...API_RESPONSE_HEADERS,
          },
        },
        ...errorResponses(SUBMIT_ERRORS),
      },
    },
  }, async (request, reply) => {
    const type = typeLabel(request.body.type);
    try {
      const { receipt, replayed } = await service.submit(principalOf(request), request.body, request.headers['idempotency-key']);
      metrics.submission(type, replayed ? 'replayed' : 'accepted');
      reply.code(202).header('location', `/api/transactions/${receipt.tx_hash}`);
      if (replayed) reply.header('idempotent-replayed', 'true');
      return receipt;
    } catch (error) {
      metrics.submission(type, toHttpProblem(error).code);
      throw error;
    }
  });

  app.post('/transactions/batch', {
    bodyLimit: BATCH_BODY_BYTES_MAX,
    schema: {
      summary: 'Submit up to 1000 transactions at once',
      description: 'Each transaction is validated and answered on its own (`results[i].status` 202 with its `tx_hash`, or 4xx with its problem); all accepted ones are stored in one durable commit before the answer. Each counts as one request for the rate limit and may carry its own `idempotency_key`.',
      operationId: 'submitBatch',
      tags: ['transactions'],
      security: API_SECURITY,
      body: BatchBodySchema,
      response: {
        200: { ...BatchResponseSchema, description: 'One result per transaction, in request order', headers: API_RESPONSE_HEADERS },
        ...errorResponses(BATCH_ERRORS),
      },
    },
  }, async (request, reply) => {
    const principal = principalOf(request);
    const bodies = request.body.transactions;
    // A batch costs one request per transaction; more than the whole limit would never fit.
    if (!rate_limiter.fits(bodies.length)) {
      throw new HttpProblem('validation_failed', 'the batch holds more transactions than the rate limit allows', {}, [
        { field: 'transactions', message: 'holds more transactions than RATE_LIMIT_MAX; split the batch' },
      ]);
    }
    // The /api guard counted one request; the rest of the batch costs one per further transaction.
    const decision = await chargeBatch(principal, bodies);
    reply.headers(decision.headers);
    if (!decision.allowed) throw new HttpProblem('rate_limited', 'rate limit exceeded: a batch counts one request per transaction');
    const results: BatchResult[] = new Array(bodies.length);
    const valid: Array<{ index: number; item: BatchItem }> = [];
    bodies.forEach((body, index) => {
      if (batchItemCheck.Check(body)) valid.push({ index, item: batchItem(body) });
      else results[index] = refused(index, schemaProblem(body));
    });
    const outcomes = await service.submitBatch(principal, valid.map(({ item }) => item));
    outcomes.forEach((outcome, position) => {
      const { index } = valid[position] as (typeof valid)[number];
      results[index] = resultOf(index, outcome);
    });
    return summarize(results, bodies, metrics);
  });

  app.get('/transactions/:hash', {
    schema: {
      summary: 'Look up a transaction',
      description: '`block_number`, `block_hash`, `position` and `error` are null until they apply. A sealed transaction (confirmed or failed) never changes: its answer carries an `ETag` and `Cache-Control: private, max-age=31536000, immutable`, and `If-None-Match` with that tag gets 304. A pending one is `Cache-Control: no-store`.',
      operationId: 'getTransaction',
      tags: ['transactions'],
      security: API_SECURITY,
      params: HashParamsSchema,
      response: {
        200: { ...TransactionSchema, description: 'The transaction', headers: SEALED_RECORD_HEADERS },
        ...NOT_MODIFIED_RESPONSE,
        ...errorResponses(['invalid_transaction_hash', 'transaction_not_found', ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => {
    const hash = parseHashParameter(request.params.hash);
    return sendRecord(request, reply, kept_answers, transactionKey(hash), async () => {
      const transaction = await service.transaction(hash);
      return { view: transactionView(transaction, tokens), sealed: transaction.status !== 'pending' };
    });
  });

  app.get('/transactions/:hash/proof', {
    schema: {
      summary: 'RFC 6962 inclusion proof of a sealed transaction',
      description: 'Verify it by recomputing the root from `tx_hash` and `audit_path` (RFC 9162 section 2.1.3.2) and comparing it with the `transactions_root` of the block header whose recomputed hash is `block_hash`; then `block_hash` against `history.history_root` with `history.audit_path` (the same algorithm), a root a signed checkpoint vouches for.',
      operationId: 'getProof',
      tags: ['transactions'],
      security: API_SECURITY,
      params: HashParamsSchema,
      response: {
        200: { ...TransactionProofSchema, description: 'The inclusion proof', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_transaction_hash', 'transaction_not_found', 'transaction_not_sealed', ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES]),
      },
    },
  }, async (request) => {
    const proof = await service.proof(parseHashParameter(request.params.hash));
    return history === undefined ? proof : { ...proof, history: await history.inclusion(proof.block_number, null) };
  });
};

/** A metrics label that cannot grow without bound: a known type, or "invalid". */
function typeLabel(type: unknown): string {
  return TRANSACTION_TYPES.find((known) => known === type) ?? 'invalid';
}

function batchItem(body: BatchItemBody): BatchItem {
  const { idempotency_key, ...fields } = body;
  return { body: fields, idempotency_key };
}

/** Schema errors reported per refused batch item at the most; the rest are not even computed. */
const ITEM_SCHEMA_ERRORS_MAX = 10;

function schemaProblem(body: unknown): Problem {
  const errors: Array<{ field: string; message: string }> = [];
  for (const error of batchItemCheck.Errors(body)) {
    errors.push({ field: error.path.replace(/^\//, '').replaceAll('/', '.') || 'item', message: error.message });
    if (errors.length >= ITEM_SCHEMA_ERRORS_MAX) break;
  }
  return problem('validation_failed', 'the transaction does not match the schema', errors);
}

function refused(index: number, error: Problem): BatchResult {
  return { index, status: error.status, error };
}

function resultOf(index: number, outcome: BatchItemOutcome): BatchResult {
  if (outcome.ok) {
    const { receipt, replayed } = outcome.result;
    return { index, status: 202, tx_hash: receipt.tx_hash, timestamp: receipt.timestamp, ...(replayed ? { replayed } : {}) };
  }
  const mapped = toHttpProblem(outcome.error);
  return refused(index, problem(mapped.code, mapped.message, mapped.errors));
}

function summarize(results: BatchResult[], bodies: readonly unknown[], metrics: LedgerMetrics) {
  let accepted = 0;
  const counts = new Map<string, number>();
  results.forEach((result, index) => {
    if (result.status === 202) accepted += 1;
    const type = typeLabel((bodies[index] as { type?: unknown } | null)?.type);
    const outcome = result.error?.code ?? (result.replayed === true ? 'replayed' : 'accepted');
    const key = `${type} ${outcome}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  for (const [key, count] of counts) {
    const [type, outcome] = key.split(' ') as [string, string];
    metrics.submission(type, outcome, count);
  }
  return { accepted, rejected: results.length - accepted, results };
}
