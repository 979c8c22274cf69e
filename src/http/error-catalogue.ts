/**
 * The one catalogue of error codes the API can answer with (Fastify `lib/errors.js` style). Every
 * problem+json body's `code` comes from here, and a test checks that docs/api.md lists each of them.
 */
import type { ErrorCode } from '../domain/shared/error-codes.js';

export type { ErrorCode };
export type ErrorEntry = { status: number; description: string };

export const ERROR_CATALOGUE = {
  validation_failed: { status: 400, description: 'The request does not match the schema; `errors` lists each field.' },
  malformed_json: { status: 400, description: 'The body is not valid UTF-8 JSON (or carries a forbidden `__proto__`/`constructor` key).' },
  number_not_exact: { status: 400, description: 'A number of the body (outside `amount`) has more digits than a JSON number (a double) holds, so it would be rounded: send it as a string.' },
  invalid_amount: { status: 400, description: '`amount` is not a finite number or a decimal string.' },
  amount_not_positive: { status: 400, description: '`amount` is zero or negative.' },
  amount_not_exact: { status: 400, description: '`amount` is a number with more than 15 significant digits that reached the service as a double (not as JSON text, which is read exactly); send it as a decimal string.' },
  amount_too_precise: { status: 400, description: "`amount` has more fractional digits than the token's decimals (8 for the native token, 6 for USDG)." },
  amount_out_of_range: { status: 400, description: '`amount` exceeds the largest storable amount (2^63 − 1 base units).' },
  unsupported_token: { status: 400, description: '`token` is neither the native symbol nor USDG.' },
  unsupported_transaction_type: { status: 400, description: '`type` is not one of transfer, mint, burn, swap.' },
  system_account: { status: 403, description: 'Ids beginning with @ are system accounts (the pool is @pool): no token subject acts as them, and only an admin may transfer to or from them.' },
  invalid_swap_account: { status: 400, description: 'A swap names a system account (an id beginning with @) as from or to; swaps are made between ordinary accounts and the pool.' },
  invalid_price_interval: { status: 400, description: 'interval must be 1m, 1h or 1d.' },
  market_unavailable: { status: 409, description: 'A quote needs both of the pool\'s reserves non-empty, and an amount that gives at least one base unit.' },
  invalid_user_id: { status: 400, description: 'A user id is empty, longer than 128 characters, not in Unicode NFC, or contains whitespace, control or invisible format characters (e.g. bidi controls).' },
  same_account: { status: 400, description: 'A transfer names the same account as `from` and `to`.' },
  invalid_metadata: { status: 400, description: '`metadata` is not a JSON object, nests deeper than 32 levels, or holds a lone UTF-16 surrogate, a number beyond the range of a double (e.g. `1e400`), or an integer beyond ±(2^53 − 1) with more than 15 significant digits, which a JSON number cannot carry exactly (send it as a string).' },
  metadata_too_large: { status: 400, description: '`metadata` serializes to more than 4 KiB.' },
  invalid_idempotency_key: { status: 400, description: 'The `Idempotency-Key` header (or a batch item\'s `idempotency_key`) is empty, longer than 255 characters or not visible ASCII.' },
  invalid_transaction_hash: { status: 400, description: 'The path does not hold a hash of the form 0x + 64 hex digits.' },
  invalid_block_number: { status: 400, description: 'The path does not hold a block number (a non-negative integer).' },
  invalid_history_size: { status: 400, description: '`size`, `from` or `to` is not an integer ≥ 1, or `from` exceeds `to`.' },
  block_not_in_history: { status: 400, description: 'The block is not in the history of this size: its number must be below `size`.' },
  invalid_url: { status: 400, description: 'The path holds a malformed percent-encoding.' },
  malformed_request: { status: 400, description: 'The HTTP request itself is malformed (e.g. a bad Content-Length, or HTTP/1.1 without a Host header); the connection is closed.' },
  invalid_pagination: { status: 400, description: '`limit` is not an integer 1..100, `offset` not an integer ≥ 0 of at most 15 digits, or `cursor` not a `next_cursor` this service returned.' },
  invalid_proof_flag: { status: 400, description: '`proof` (of `GET /api/balance/{userId}`) is neither `true` nor `false`.' },
  invalid_event_cursor: { status: 400, description: '`after` is not an integer ≥ 0, or `Last-Event-ID` is not an event id of the form `evt_<sequence>_<12 hex digits>`.' },
  invalid_event_filter: { status: 400, description: '`types` names an unknown event type, or `account` is not a valid user id.' },
  webhook_url_refused: { status: 400, description: 'A webhook `url` is not an absolute http(s) URL without credentials, or names a private, loopback, link-local, unique-local or unspecified address that `WEBHOOK_ALLOWED_HOSTS` does not allow.' },
  missing_token: { status: 401, description: 'No `Authorization: Bearer` token was sent.' },
  invalid_token: { status: 401, description: 'The token is malformed, expired, not yet valid, for another issuer or audience, not signed by a trusted key, or its subject holds control characters.' },
  invalid_api_key: { status: 401, description: 'API keys are configured and `X-API-Key` is missing or not one of them.' },
  admin_required: { status: 403, description: 'Only an admin may submit a mint or a burn, or manage webhooks.' },
  not_account_owner: { status: 403, description: "A non-admin may only transfer from its own account (the token's `sub`)." },
  transaction_not_found: { status: 404, description: 'No transaction has this hash.' },
  transaction_not_sealed: { status: 404, description: 'The transaction is pending: its inclusion proof exists once it is in a block.' },
  block_not_found: { status: 404, description: 'No block has this number.' },
  history_size_not_reached: { status: 404, description: 'The history size asked for (`size`, `to`) is larger than the number of blocks sealed so far.' },
  webhook_not_found: { status: 404, description: 'No webhook endpoint has this id.' },
  event_not_found: { status: 404, description: 'No event of the log has this id.' },
  route_not_found: { status: 404, description: 'No route matches this method and path.' },
  request_timeout: { status: 408, description: 'The request was not received completely in time; the connection is closed.' },
  too_many_webhooks: { status: 409, description: 'The ledger has 100 webhook endpoints already: delete one first.' },
  cursor_expired: { status: 410, description: 'The event after the cursor is older than the retention (`EVENTS_RETENTION_S`): resume from a newer cursor, or from the head with no cursor.' },
  payload_too_large: { status: 413, description: 'The body is larger than 64 KiB (1 MiB for a batch).' },
  uri_too_long: { status: 414, description: 'A path parameter is longer than 1024 characters.' },
  unsupported_media_type: { status: 415, description: 'A body was sent without `Content-Type: application/json`, declared in a charset other than UTF-8, or with a `Content-Encoding` (bodies are read as sent).' },
  expectation_failed: { status: 417, description: 'The request carries an `Expect` header other than `100-continue`; the connection is closed.' },
  idempotency_key_reused: { status: 422, description: 'The `Idempotency-Key` was used before with a different body.' },
  headers_too_large: { status: 431, description: 'The request headers exceed 16 KiB; the connection is closed.' },
  rate_limited: { status: 429, description: 'The caller made more requests than the rate limit allows; see `Retry-After`.' },
  failure_budget_exceeded: { status: 429, description: "A transfer or burn that the sender's sealed balance, less its pending debits, does not cover, from a caller (the token's `sub`) that has already submitted `FAILURE_BUDGET_PER_HOUR` such debits this clock hour: nothing is stored. Retry after `Retry-After` seconds (the next hour), or fund the account first." },
  internal_error: { status: 500, description: 'An unexpected error; the body says nothing about internals and the log has the details.' },
  service_overloaded: { status: 503, description: 'Too many submissions are waiting to be written; retry after `Retry-After` seconds.' },
  pending_backlog_full: { status: 503, description: 'More transactions are waiting to be sealed than `PENDING_MAX`; nothing was stored. Retry after `Retry-After` seconds.' },
  storage_unavailable: { status: 503, description: 'The store cannot take writes now (disk full, read-only, or unreachable); nothing was written — or, if the connection broke during the commit, a retry with the same `Idempotency-Key` settles it. Retry after `Retry-After` seconds.' },
  too_many_streams: { status: 503, description: 'Too many event streams are open, for this caller or for the instance; retry after `Retry-After` seconds.' },
  identity_provider_unavailable: { status: 503, description: "The identity provider's keys could not be fetched; retry later." },
  not_ready: { status: 503, description: "`/readyz`: the store cannot be reached, or the identity provider's keys were never fetched." },
} as const satisfies Record<ErrorCode, ErrorEntry>;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, code);
}
