/**
 * Every error code of the public API, in one list that the domain, the service and the HTTP edge share:
 * typed errors carry one of these (a misspelt code does not compile), and the HTTP error catalogue
 * (src/http/error-catalogue.ts) must describe exactly these, no more and no fewer.
 */
export const ERROR_CODES = [
  'validation_failed', 'malformed_json', 'number_not_exact', 'invalid_amount', 'amount_not_positive',
  'amount_not_exact', 'amount_too_precise', 'amount_out_of_range', 'unsupported_token',
  'unsupported_transaction_type', 'invalid_user_id', 'same_account', 'invalid_metadata',
  'metadata_too_large', 'invalid_idempotency_key', 'invalid_transaction_hash', 'invalid_block_number',
  'invalid_url', 'malformed_request', 'invalid_pagination', 'invalid_proof_flag', 'invalid_event_cursor', 'invalid_event_filter',
  'webhook_url_refused', 'missing_token', 'invalid_token', 'invalid_api_key', 'admin_required',
  'not_account_owner', 'transaction_not_found', 'transaction_not_sealed', 'block_not_found',
  'webhook_not_found', 'event_not_found', 'route_not_found', 'request_timeout', 'too_many_webhooks',
  'cursor_expired', 'payload_too_large', 'uri_too_long', 'unsupported_media_type', 'idempotency_key_reused',
  'expectation_failed', 'headers_too_large', 'rate_limited', 'failure_budget_exceeded', 'internal_error', 'service_overloaded', 'pending_backlog_full', 'storage_unavailable',
  'too_many_streams', 'identity_provider_unavailable', 'not_ready', 'invalid_history_size', 'block_not_in_history',
  'history_size_not_reached', 'system_account', 'invalid_swap_account', 'invalid_price_interval', 'market_unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];
