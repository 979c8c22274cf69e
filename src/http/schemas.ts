/**
 * TypeBox schemas of every request and response. Requests are validated by Fastify (Ajv) against
 * them; responses without amounts are serialized from them; all of them document the API.
 */
import { Type, type Static } from '@sinclair/typebox';
import { BATCH_TRANSACTIONS_MAX } from '../service/ledger-service.js';
import { ERROR_CATALOGUE, type ErrorCode } from './error-catalogue.js';

/** Example values of the API reference (OpenAPI `examples`); a test checks each against its schema. */
const EXAMPLE_TX_HASH = '0x1b5b9ccb3e8d006a5230de9bda23ff91edc794d4f56410560830b418528e446c';
const EXAMPLE_BLOCK_HASH = '0x496aca80e4d8f29fb8e8cd816c3afb48d3f103970b3a2ee1600c08ca67326dee';
const EXAMPLE_PARENT_HASH = '0xe47125968b3b71049fbc4802d1e40a71ea1359decfabacf70b34588037d4ff0c';
const EXAMPLE_ROOT = '0x4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2';
const EXAMPLE_PATH = ['0xf64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a', '0x3946ca64ff78d93ca61090a437cbb6b3d2ca0d488f5f9ccf3059608368b27693'];
const EXAMPLE_TIMESTAMP = 1795305809;

const EXAMPLE_TRANSACTION = {
  tx_hash: EXAMPLE_TX_HASH, from: 'alice', to: 'bob', amount: 12.5, token: 'TAB', type: 'transfer', metadata: { memo: 'rent' },
  status: 'confirmed', timestamp: EXAMPLE_TIMESTAMP, block_number: 7, block_hash: EXAMPLE_BLOCK_HASH, position: 2, error: null,
  nonce: '9f9e98c66358a4bb1867da89d975c1cf', min_receive: null, amount_out: null, token_out: null,
};

const Hash = Type.String({ pattern: '^0x[0-9a-f]{64}$', description: '0x + 64 lowercase hex digits' });
const NullableHash = Type.Union([Hash, Type.Null()]);
const Amount = Type.Number({ description: 'token amount; the JSON text is the exact decimal of the base units' });

export const ProblemSchema = Type.Object({
  type: Type.String({ description: '`urn:tabula:problem:<code>`' }),
  title: Type.String({ description: 'the HTTP status text' }),
  status: Type.Integer(),
  detail: Type.String({ description: 'what went wrong, for people' }),
  code: Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.keys(ERROR_CATALOGUE), description: 'stable snake_case code to branch on (docs/api.md lists each)' }),
  errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), { description: 'each invalid field, on validation failures' })),
}, { description: 'RFC 9457 problem details' });

export const SubmitBodySchema = Type.Object({
  from: Type.String({ description: 'sender user id (for mint: the issuer)' }),
  to: Type.String({ description: 'receiver user id (for burn: the issuer)' }),
  amount: Type.Union([Type.Number(), Type.String()], { description: 'a JSON number or, for exactness, a decimal string' }),
  token: Type.String({ description: 'token symbol, case-insensitive' }),
  type: Type.String({ description: 'transfer, mint, burn or swap' }),
  metadata: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'free-form object, at most 4 KiB' })),
  min_receive: Type.Optional(Type.Union([Type.Number(), Type.String()], {
    description: 'swaps only: the least amount of the other token to accept, as exact as `amount`; less fails the swap with `slippage_exceeded`',
  })),
}, {
  additionalProperties: false,
  examples: [
    { from: 'alice', to: 'bob', amount: 12.5, token: 'TAB', type: 'transfer', metadata: { memo: 'rent' } },
    { from: 'alice', to: 'alice', amount: '10', token: 'TAB', type: 'swap', min_receive: '9.85' },
    { from: 'treasury', to: 'alice', amount: '92233720368.54775807', token: 'TAB', type: 'mint' },
  ],
});
export type SubmitBody = Static<typeof SubmitBodySchema>;

/** One item of a batch: the fields of a single submission, plus its own optional idempotency key. */
export const BatchItemSchema = Type.Object({
  ...SubmitBodySchema.properties,
  idempotency_key: Type.Optional(Type.String({ description: 'like the Idempotency-Key header of a single submission' })),
}, { additionalProperties: false });
export type BatchItemBody = Static<typeof BatchItemSchema>;

/**
 * The batch envelope. Items are only required to be there; each one is checked against
 * `BatchItemSchema` on its own, so one bad item is refused alone rather than failing the batch.
 */
export const BatchBodySchema = Type.Object({
  transactions: Type.Array(Type.Unknown(), { minItems: 1, maxItems: BATCH_TRANSACTIONS_MAX, description: `1 to ${BATCH_TRANSACTIONS_MAX} submissions` }),
}, {
  additionalProperties: false,
  examples: [{
    transactions: [
      { from: 'alice', to: 'bob', amount: 12.5, token: 'TAB', type: 'transfer', idempotency_key: 'rent-2026-11' },
      { from: 'alice', to: 'carol', amount: '0.000000001', token: 'TAB', type: 'transfer' },
    ],
  }],
});

export const BatchResultSchema = Type.Object({
  index: Type.Integer({ description: 'position of the item in the request' }),
  status: Type.Integer({ description: '202 when stored, else the 4xx a single submission would have had' }),
  tx_hash: Type.Optional(Hash),
  timestamp: Type.Optional(Type.Integer()),
  replayed: Type.Optional(Type.Boolean({ description: 'true when an idempotency key matched an earlier submission' })),
  error: Type.Optional(ProblemSchema),
});

export const BatchResponseSchema = Type.Object({
  accepted: Type.Integer({ description: 'items with status 202' }),
  rejected: Type.Integer({ description: 'items with a 4xx status' }),
  results: Type.Array(BatchResultSchema),
}, {
  examples: [{
    accepted: 1,
    rejected: 1,
    results: [
      { index: 0, status: 202, tx_hash: EXAMPLE_TX_HASH, timestamp: EXAMPLE_TIMESTAMP },
      {
        index: 1,
        status: 400,
        error: {
          type: 'urn:tabula:problem:amount_too_precise', title: 'Bad Request', status: 400, code: 'amount_too_precise',
          detail: "amount has more fractional digits than the token's 8 decimals",
          errors: [{ field: 'amount', message: "amount has more fractional digits than the token's 8 decimals" }],
        },
      },
    ],
  }],
});

export const SubmitHeadersSchema = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    description: 'Makes retries safe: a repeat with the same request returns the first receipt (`Idempotent-Replayed: true`); 1..255 visible ASCII characters, scoped to the caller, kept 48 h',
    examples: ['7f1b0c52-2a4e-4c43-9d0e-2f6a1f1d9b3e'],
  })),
});

export const ReceiptSchema = Type.Object({
  tx_hash: Hash,
  status: Type.Literal('pending'),
  timestamp: Type.Integer({ description: 'Unix seconds' }),
}, { examples: [{ tx_hash: EXAMPLE_TX_HASH, status: 'pending', timestamp: EXAMPLE_TIMESTAMP }] });

export const TransactionSchema = Type.Object({
  tx_hash: Hash,
  from: Type.String(),
  to: Type.String(),
  amount: Amount,
  token: Type.String(),
  type: Type.Union([Type.Literal('transfer'), Type.Literal('mint'), Type.Literal('burn'), Type.Literal('swap')]),
  metadata: Type.Object({}, { additionalProperties: true }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('confirmed'), Type.Literal('failed')]),
  timestamp: Type.Integer({ description: 'Unix seconds of the submission' }),
  block_number: Type.Union([Type.Integer(), Type.Null()]),
  block_hash: NullableHash,
  position: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  nonce: Type.String({ description: 'random per submission; part of the hashed encoding' }),
  min_receive: Type.Union([Amount, Type.Null()], { description: 'swaps: the least amount of `token_out` accepted (null: any, and for other types); part of a swap\'s hash' }),
  amount_out: Type.Union([Amount, Type.Null()], { description: 'confirmed swaps: what `to` received, in `token_out`; null otherwise' }),
  token_out: Type.Union([Type.String(), Type.Null()], { description: 'swaps: the token received; null for other types' }),
}, { examples: [EXAMPLE_TRANSACTION] });

export const HashParamsSchema = Type.Object({
  hash: Type.String({ description: 'transaction hash, 0x + 64 hex digits (any case)', examples: [EXAMPLE_TX_HASH] }),
});
export const BlockParamsSchema = Type.Object({ number: Type.String({ description: 'block number, a non-negative integer', examples: ['7'] }) });
export const UserParamsSchema = Type.Object({
  userId: Type.String({ description: 'user id: 1..128 characters in Unicode NFC, no whitespace, control or invisible format characters', examples: ['alice', 'auth0|5f7c8ec7c33c6c004bbafe82'] }),
});
export const BlocksQuerySchema = Type.Object({
  limit: Type.Optional(Type.String({ description: 'integer 1..100, default 20', examples: ['20'] })),
  offset: Type.Optional(Type.String({ description: 'integer ≥ 0, default 0; offset k starts at block latest − k', examples: ['0'] })),
});

export const AccountHistoryQuerySchema = Type.Object({
  limit: Type.Optional(Type.String({ description: 'integer 1..100, default 20', examples: ['20'] })),
  cursor: Type.Optional(Type.String({
    description: 'the `next_cursor` of the previous page, as it was returned (opaque: never build or change one); absent, the page starts at the newest transaction',
    examples: ['4711'],
  })),
});

export const AccountHistorySchema = Type.Object({
  user_id: Type.String(),
  transactions: Type.Array(TransactionSchema, { description: 'the transactions whose `from` or `to` is the account, pending ones included, newest first in arrival order' }),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'pass it as `cursor` for the next (older) page; null on the last page' }),
}, { examples: [{ user_id: 'alice', transactions: [EXAMPLE_TRANSACTION], next_cursor: '4711' }] });

export const ProofSchema = Type.Object({
  tx_hash: Hash,
  block_number: Type.Integer(),
  block_hash: Hash,
  transactions_root: Hash,
  leaf_index: Type.Integer(),
  tree_size: Type.Integer(),
  audit_path: Type.Array(Hash, { description: 'RFC 6962 PATH(leaf_index, D[tree_size]), nearest sibling first' }),
}, {
  examples: [{
    tx_hash: EXAMPLE_TX_HASH, block_number: 7, block_hash: EXAMPLE_BLOCK_HASH, transactions_root: EXAMPLE_ROOT,
    leaf_index: 2, tree_size: 3, audit_path: EXAMPLE_PATH,
  }],
});

export const BalanceSchema = Type.Object({
  user_id: Type.String(),
  native: Amount,
  usdg: Amount,
  total_usd: Type.Number({ description: 'native × native_price + usdg, rounded to 6 decimals' }),
}, { examples: [{ user_id: 'alice', native: 87.5, usdg: 1000.25, total_usd: 1087.75 }] });

export const BalanceQuerySchema = Type.Object({
  proof: Type.Optional(Type.String({ description: '`true`: add `proof`, the balances proven against the newest block\'s balance root (default `false`)', examples: ['true'] })),
});

const BalanceProofEntrySchema = Type.Object({
  token: Type.String(),
  key: Hash,
  units: Type.String({ description: 'the proven balance in base units, as decimal text ("0": absent)' }),
  leaf: Type.Union([Type.Object({ key: Hash, units: Type.String() }), Type.Null()], { description: "the leaf the key's path ends at: the key's own, another key's (absent), or null (an empty subtree: absent)" }),
  siblings: Type.Array(Hash, { description: "sibling hashes from the root's children down to the leaf (at most 256)" }),
});

export const BalanceProofSchema = Type.Object({
  block_number: Type.Integer({ description: 'the sealed block whose balance state is proven (pending transactions never change it)' }),
  balance_root: Hash,
  entries: Type.Array(BalanceProofEntrySchema, { description: "one per token of the ledger; docs/api.md says how to check them" }),
});

const EXAMPLE_SIBLING = `0x${'5c'.repeat(32)}`;
export const ProvenBalanceSchema = Type.Object({
  ...BalanceSchema.properties,
  proof: Type.Optional(BalanceProofSchema),
}, {
  examples: [{
    user_id: 'alice', native: 87.5, usdg: 0, total_usd: 218.75,
    proof: {
      block_number: 7, balance_root: `0x${'3f'.repeat(32)}`,
      entries: [
        { token: 'TAB', key: `0x${'a1'.repeat(32)}`, units: '8750000000', leaf: { key: `0x${'a1'.repeat(32)}`, units: '8750000000' }, siblings: [EXAMPLE_SIBLING] },
        { token: 'USDG', key: `0x${'b2'.repeat(32)}`, units: '0', leaf: null, siblings: [EXAMPLE_SIBLING, EXAMPLE_SIBLING] },
      ],
    },
  }],
});

const blockHeaderFields = {
  number: Type.Integer(),
  hash: Hash,
  parent_hash: Hash,
  timestamp: Type.Integer({ description: 'Unix seconds' }),
  transactions_count: Type.Integer(),
  transactions_root: Hash,
  native_price: Type.Union([Type.String({ pattern: '^(0|[1-9][0-9]*)(\\.[0-9]{0,11}[1-9])?$' }), Type.Null()], {
    description: 'USD per native token after this block, as exact decimal text (12 decimals at most); part of the hash (version 2). null: a block sealed before the market, hashed with version 1',
  }),
};
const EXAMPLE_HEADER = {
  number: 7, hash: EXAMPLE_BLOCK_HASH, parent_hash: EXAMPLE_PARENT_HASH, timestamp: EXAMPLE_TIMESTAMP + 1, transactions_count: 3, transactions_root: EXAMPLE_ROOT,
  native_price: null,
};
export const BlockHeaderSchema = Type.Object(blockHeaderFields);
export const BlockSchema = Type.Object({
  ...blockHeaderFields,
  transactions: Type.Array(Hash, { description: "the block's transaction hashes, in block order" }),
}, { examples: [{ ...EXAMPLE_HEADER, transactions: [EXAMPLE_PATH[1], EXAMPLE_PATH[0], EXAMPLE_TX_HASH] }] });
export const BlockPageSchema = Type.Object({
  blocks: Type.Array(BlockHeaderSchema, { description: 'newest first' }),
  total: Type.Integer({ description: 'all blocks, genesis included' }),
  limit: Type.Integer(),
  offset: Type.Integer(),
}, { examples: [{ blocks: [EXAMPLE_HEADER], total: 8, limit: 1, offset: 0 }] });

export const StatsSchema = Type.Object({
  total_transactions: Type.Integer(),
  total_users: Type.Integer(),
  native_price: Type.Number(),
  trading_volume_24h: Type.Number(),
  active_users_24h: Type.Integer(),
  latest_block_number: Type.Integer(),
}, {
  examples: [{ total_transactions: 3, total_users: 3, native_price: 1, trading_volume_24h: 12, active_users_24h: 2, latest_block_number: 2 }],
});

export const QuoteQuerySchema = Type.Object({
  token: Type.String({ description: 'the token paid in, case-insensitive', examples: ['TAB'] }),
  amount: Type.String({ description: 'the amount paid in, a decimal', examples: ['10'] }),
});

const Price = Type.Number({ description: 'USD per native token, rounded down to 12 decimals; the JSON text is exact' });

export const QuoteSchema = Type.Object({
  amount_out: Amount,
  token_out: Type.String(),
  price: Price,
  price_after: Type.Number({ description: 'the price the reserves would give after this swap alone' }),
  fee: Type.Number({ description: 'the part of `amount` the pool keeps as its fee, in the token paid in' }),
}, { examples: [{ amount_out: 9.87158, token_out: 'USDG', price: 1, price_after: 0.980325168316, fee: 0.03 }] });

export const MarketSchema = Type.Object({
  pool: Type.String({ description: 'the system account whose balances are the reserves' }),
  fee_bps: Type.Integer({ description: 'the pool\'s fee in basis points of the amount paid in, fixed when the ledger was created' }),
  native_price: { ...Price, description: 'the price after `block_number` (the configured NATIVE_PRICE_USD while a reserve is empty); the JSON text is exact' },
  reserves: Type.Object({
    native: Type.Number({ description: 'the native reserve; the JSON text is exact' }),
    usdg: Type.Number({ description: 'the USDG reserve; the JSON text is exact' }),
  }),
  block_number: Type.Integer({ description: 'the newest sealed block, as of which all of this is' }),
}, { examples: [{ pool: '@pool', fee_bps: 30, native_price: 2, reserves: { native: 1000, usdg: 2000 }, block_number: 3 }] });

export const PriceHistoryQuerySchema = Type.Object({
  interval: Type.Optional(Type.String({ description: '1m, 1h or 1d; default 1h', examples: ['1h'] })),
  limit: Type.Optional(Type.String({ description: 'integer 1..1000, default 100', examples: ['100'] })),
});

export const PriceHistorySchema = Type.Object({
  interval: Type.String(),
  candles: Type.Array(Type.Object({
    start: Type.Integer({ description: 'Unix seconds, a multiple of the interval' }),
    open: Price,
    high: Price,
    low: Price,
    close: Price,
    volume_usd: Type.Number({ description: 'USD value of the swaps sealed in the bucket, on their USDG side' }),
  }), { description: 'oldest first; buckets without a sealed block are absent; the last closes at the current price' }),
}, { examples: [{ interval: '1h', candles: [{ start: 1795305600, open: 1, high: 1.02, low: 0.98, close: 0.99, volume_usd: 123.45 }] }] });

export const HealthSchema = Type.Object({ status: Type.String() }, { examples: [{ status: 'ok' }] });

export const DevTokenBodySchema = Type.Object({
  sub: Type.String({ description: 'the user id the token is for' }),
  admin: Type.Optional(Type.Boolean({ description: 'add the admin scope' })),
}, { additionalProperties: false });

export const DevTokenSchema = Type.Object({
  token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'seconds' }),
});

export const ExplorerConfigSchema = Type.Object({
  native_symbol: Type.String(),
  dev_tokens: Type.Boolean({ description: 'whether POST /dev/token exists on this server' }),
});

const HistorySize = Type.Integer({ minimum: 1, description: 'a history size: the number of blocks 0 … size − 1 it holds' });
const AuditPath = Type.Array(Hash, { description: 'RFC 6962 PATH(leaf_index, D[size]) in the history tree, nearest sibling first' });

export const HistoryInclusionSchema = Type.Object({
  size: HistorySize,
  history_root: Hash,
  leaf_index: Type.Integer({ minimum: 0, description: 'the block number' }),
  audit_path: AuditPath,
}, { description: 'The inclusion of the block in the history tree of `size` blocks, whose root is `history_root`' });

export const TransactionProofSchema = Type.Object({
  ...ProofSchema.properties,
  history: Type.Optional(HistoryInclusionSchema),
}, { examples: ProofSchema.examples });

export const BlockProofSchema = Type.Object({
  block_number: Type.Integer({ minimum: 0 }),
  block_hash: Hash,
  size: HistorySize,
  leaf_index: Type.Integer({ minimum: 0 }),
  audit_path: AuditPath,
}, { examples: [{ block_number: 7, block_hash: EXAMPLE_BLOCK_HASH, size: 9, leaf_index: 7, audit_path: EXAMPLE_PATH }] });

export const ConsistencyProofSchema = Type.Object({
  from: HistorySize,
  to: HistorySize,
  proof: Type.Array(Hash, { description: 'RFC 9162 section 2.1.4 PROOF(from, D[to]); empty when from = to' }),
}, { examples: [{ from: 3, to: 9, proof: EXAMPLE_PATH }] });

export const CheckpointSchema = Type.Object({
  size: HistorySize,
  history_root: Hash,
  block_number: Type.Integer({ minimum: 0, description: 'size − 1: the newest block of this history' }),
  block_hash: Hash,
  timestamp: Type.Integer({ description: 'the block\'s timestamp (seconds): the same on every instance' }),
  note: Type.String({ description: 'the signed text: origin line, size, base64 history root, then extension lines, each ending in a newline' }),
  signature: Type.String({ description: 'base64 Ed25519 signature over the UTF-8 bytes of `note`' }),
  key_id: Type.String({ pattern: '^[0-9a-f]{16}$', description: 'first 8 bytes of SHA-256 over the raw public key, hex' }),
}, {
  examples: [{
    size: 8, history_root: EXAMPLE_ROOT, block_number: 7, block_hash: EXAMPLE_BLOCK_HASH, timestamp: 1767225600,
    note: `tabula/${EXAMPLE_BLOCK_HASH}\n8\nq83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\nblock 7 ${EXAMPLE_BLOCK_HASH} 1767225600\n`,
    signature: 'x0ClPFMn9wsSBmhBL1N2Ru5m2R9SgUQYPuvH4vsj3l+B7Rjkx5BZ8MH2Ni4G6gLW6Ur1L1J4K8tt1bE2x3gNAw==', key_id: '7d3f0c1b2a968e45',
  }],
});

export const CheckpointKeySchema = Type.Object({
  algorithm: Type.Literal('Ed25519'),
  public_key: Type.String({ description: 'base64 of the raw 32-byte Ed25519 public key' }),
  key_id: Type.String({ pattern: '^[0-9a-f]{16}$' }),
}, { examples: [{ algorithm: 'Ed25519', public_key: '6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iw=', key_id: '7d3f0c1b2a968e45' }] });

export const HistorySizeQuerySchema = Type.Object({
  size: Type.Optional(Type.String({ description: 'history size, an integer ≥ 1; default: the latest', examples: ['10'] })),
});

export const ConsistencyQuerySchema = Type.Object({
  from: Type.String({ description: 'the older history size, an integer ≥ 1', examples: ['10'] }),
  to: Type.String({ description: 'the newer history size, an integer ≥ from', examples: ['4000'] }),
});
