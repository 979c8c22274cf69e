/** An account's balances and its transaction history (the resource is the account: `/api/balance/…`, `/api/accounts/…`). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { parseUserId } from '../../domain/user-id.js';
import type { TokenRegistry } from '../../domain/shared/tokens.js';
import type { LedgerService } from '../../service/ledger-service.js';
import { API_ERROR_CODES, API_RESPONSE_HEADERS, API_SECURITY, errorResponses, PATH_PARAMETER_ERROR_CODES } from '../openapi.js';
import { parseHistoryPage, parseProofFlag } from '../parameters.js';
import { AccountHistorySchema, AccountHistoryQuerySchema, BalanceQuerySchema, ProvenBalanceSchema, UserParamsSchema } from '../schemas.js';
import { balanceView, provenBalanceView, transactionView } from '../../views/record-views.js';
import { accountHistoryJson, jsonOncePerObject, sendExact, sendJsonText } from '../json-replies.js';
import { historyPageKey, isFinalPage, transactionAnswers } from '../sealed-answers.js';
import type { SealedRecordCache } from '../../read-cache/sealed-record-cache.js';
import type { Transaction } from '../../domain/transaction.js';
import { stringifyExact } from '../../views/exact-json.js';
import type { Balances } from '../../service/ledger-service.js';

type Options = { service: LedgerService; tokens: TokenRegistry; read_cache: SealedRecordCache };

export const accountRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { service, tokens, read_cache }) => {
  const transactionJson = (transaction: Transaction) => stringifyExact(transactionView(transaction, tokens));
  // The service hands every request of one newest block the same balances object (newest-state-cache.ts): written once.
  const balanceJson = jsonOncePerObject((balances: Balances) => stringifyExact(balanceView(balances, tokens)));
  app.get('/balance/:userId', {
    schema: {
      summary: "A user's confirmed balances",
      description: [
        'From confirmed transactions only; an unknown user has zero balances. Any authenticated caller may read any balance.',
        'With `proof=true` the balances are those after the newest sealed block, and `proof` proves each token\'s balance',
        "(a zero one by the key's absence) against that block's balance root: see docs/api.md, \"Balance proofs\".",
      ].join(' '),
      operationId: 'getBalance',
      tags: ['accounts'],
      security: API_SECURITY,
      params: UserParamsSchema,
      querystring: BalanceQuerySchema,
      response: {
        200: { ...ProvenBalanceSchema, description: 'The balances (and, with `proof=true`, their proof)', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_user_id', 'invalid_proof_flag', ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => {
    const user_id = parseUserId(request.params.userId, 'userId');
    if (parseProofFlag(request.query.proof)) return sendExact(reply, provenBalanceView(await service.provenBalances(user_id), tokens));
    return sendJsonText(reply, balanceJson(await service.balances(user_id)));
  });

  app.get('/accounts/:userId/transactions', {
    schema: {
      summary: "An account's transactions, newest first",
      description: [
        'The transactions whose `from` or `to` is the account, pending ones included, newest first in arrival order,',
        'each the record `GET /api/transactions/{hash}` returns (a mint credits `to` and a burn debits `from`; the',
        'issuer named on the other side sees them too). Pass `next_cursor` as `cursor` for the next, older page;',
        'it is null on the last one. A page costs the same at any depth. An unknown account has an empty history.',
        "Any authenticated caller may read any account's history.",
      ].join(' '),
      operationId: 'listAccountTransactions',
      tags: ['accounts'],
      security: API_SECURITY,
      params: UserParamsSchema,
      querystring: AccountHistoryQuerySchema,
      response: {
        200: { ...AccountHistorySchema, description: 'A page of the history', headers: API_RESPONSE_HEADERS },
        ...errorResponses(['invalid_user_id', 'invalid_pagination', ...PATH_PARAMETER_ERROR_CODES, ...API_ERROR_CODES]),
      },
    },
  }, async (request, reply) => {
    const user_id = parseUserId(request.params.userId, 'userId');
    const { limit, before_seq } = parseHistoryPage(request.query);
    const newest_seq = await service.newestAccountSeq(user_id, before_seq);
    if (newest_seq === null) return sendJsonText(reply, accountHistoryJson({ user_id, entries: [], next_before_seq: null }, []));
    const key = historyPageKey(user_id, limit, before_seq, newest_seq);
    const kept = read_cache.get(key);
    if (kept !== undefined) return sendJsonText(reply, kept.body);
    const page = await service.accountHistory(user_id, before_seq, limit);
    const json = accountHistoryJson(page, await transactionAnswers(read_cache, page.entries, (tx_hashes) => service.transactionsByHash(tx_hashes), transactionJson));
    if (isFinalPage(page, newest_seq)) read_cache.put(key, json);
    return sendJsonText(reply, json);
  });
};
