/** The records of the Tabula API (docs/api.md), as the SDK returns them. Timestamps are Unix seconds. */
import type { JsonValue } from '../../../src/domain/shared/canonical-json.js';
import type { BlockHeaderRecord, InclusionProofRecord } from '../../../src/domain/shared/chain-hashes.js';
import type { Problem, SignedCheckpoint } from './errors.js';

export type { JsonValue };

export type TransactionType = 'transfer' | 'mint' | 'burn' | 'swap';
export type TransactionStatus = 'pending' | 'confirmed' | 'failed';

export type SubmitTransactionRequest = {
  from: string;
  to: string;
  /** A number, or a decimal string for exactness (`"92233720368.54775807"`). */
  amount: number | string;
  /** `TAB` (the native symbol) or `USDG`, any case. */
  token: string;
  type: TransactionType;
  metadata?: { [key: string]: JsonValue };
  /** Swaps only: the least amount of the token received to accept (a number, or a decimal string for exactness); less fails the swap with `slippage_exceeded`. */
  min_receive?: number | string;
};

export type SubmitReceipt = {
  tx_hash: string;
  status: 'pending';
  timestamp: number;
  /** True when the service answered a retry with the first submission's receipt (`Idempotent-Replayed`). */
  replayed: boolean;
  /** The `Idempotency-Key` the submission was sent with. */
  idempotency_key: string;
};

/** One item of `submitBatch`: a submission plus, optionally, its own idempotency key. */
export type BatchTransactionRequest = SubmitTransactionRequest & {
  /** Like `Idempotency-Key` of a single submission (1..255 visible ASCII, scoped to the caller); a random UUID unless given. */
  idempotency_key?: string;
};

/** A batch item the service stored as pending (or had stored before: `replayed`). Narrow with `error === undefined`. */
export type BatchItemAccepted = {
  /** The item's position in the request. */
  index: number;
  status: 202;
  tx_hash: string;
  timestamp: number;
  /** True when the item's idempotency key matched an earlier submission, whose receipt this is. */
  replayed: boolean;
  /** The key the item was sent with (the caller's, or the one the SDK made up). */
  idempotency_key: string;
  error?: never;
};

/** A batch item the service refused (and stored nothing for); `status` is what a single submission would have had. */
export type BatchItemRejected = {
  index: number;
  /** 400, 403 or 422: the 4xx the item would have had as a single submission. */
  status: number;
  /** The problem+json body, with the stable `code` of docs/api.md (`amount_too_precise`, `admin_required`, …). */
  error: Problem;
  idempotency_key: string;
  tx_hash?: never;
};

export type BatchItemResult = BatchItemAccepted | BatchItemRejected;

/** What `submitBatch` returns: one result per item, in request order (`results[i].index === i`). */
export type BatchReceipt = {
  /** Items with status 202, replays included. */
  accepted: number;
  /** Items with a 4xx status. */
  rejected: number;
  results: BatchItemResult[];
};

export type Transaction = {
  tx_hash: string;
  from: string;
  to: string;
  /** The amount as a double; may be rounded past 2^53 base units. Use `amount_text` for exactness. */
  amount: number;
  /** The exact decimal the service sent, e.g. `"90071992.54740993"`. */
  amount_text: string;
  token: string;
  type: TransactionType;
  metadata: { [key: string]: JsonValue };
  status: TransactionStatus;
  timestamp: number;
  block_number: number | null;
  block_hash: string | null;
  position: number | null;
  /** Why a failed transaction failed: `insufficient_funds`, `balance_overflow`, `slippage_exceeded`, `pool_empty`, `amount_out_zero`. */
  error: string | null;
  /** Random per submission; part of the hashed encoding. */
  nonce: string;
  /** Swaps: the least amount of `token_out` accepted (null: any, and for other types); part of a swap's hash. Absent from older servers. */
  min_receive?: number | null;
  /** The exact decimal text of `min_receive` (what the hash is recomputed from). */
  min_receive_text?: string;
  /** Confirmed swaps: what `to` received, in `token_out`; null otherwise. */
  amount_out?: number | null;
  /** The exact decimal text of `amount_out` (when it is a number). */
  amount_out_text?: string;
  /** Swaps: the token received; null for other types. */
  token_out?: string | null;
};

/** A page of an account's history (`listAccountTransactions`). */
export type AccountTransactionsPage = {
  user_id: string;
  /** The transactions whose `from` or `to` is the account, pending ones included, newest first in arrival order. */
  transactions: Transaction[];
  /** Pass it as `cursor` for the next (older) page; null on the last page. Opaque: pass it back as it is. */
  next_cursor: string | null;
};

/** `GET /api/transactions/{hash}/proof`: the domain's proof record (what the verifier checks), with the block's place in the history tree. */
export type InclusionProof = InclusionProofRecord & {
  /** The block's inclusion in the history tree of `size` blocks (servers with the history tree). */
  history?: { size: number; history_root: string; leaf_index: number; audit_path: string[] };
};

/** `GET /api/blocks/{number}/proof`: a block's inclusion in the history tree of `size` blocks. */
export type BlockHistoryProof = { block_number: number; block_hash: string; size: number; leaf_index: number; audit_path: string[] };
/** `GET /api/chain/consistency`: RFC 9162 consistency proof that history `to` extends history `from`. */
export type ConsistencyProof = { from: number; to: number; proof: string[] };
/** `GET /.well-known/tabula-checkpoint-key`. */
export type CheckpointKey = { algorithm: 'Ed25519'; public_key: string; key_id: string };

export type Balance = {
  user_id: string;
  native: number;
  native_text: string;
  usdg: number;
  usdg_text: string;
  total_usd: number;
  total_usd_text: string;
};

/**
 * A balance whose proof verified (`getBalanceVerified`): the amounts after `verified.block_number`,
 * each proven under `verified.balance_root`, and what that root was checked against: `server_root`
 * (`GET /api/blocks/{n}/balance-root` of the same server: catches a response altered on the way or a
 * server inconsistent with itself) or `checkpoint` (a signed checkpoint's `balances` line).
 */
export type VerifiedBalance = Balance & {
  verified: {
    block_number: number;
    balance_root: string;
    against: 'server_root' | 'checkpoint';
    units: Record<string, bigint>;
    /** The signed checkpoint the root was checked against, with its key id (null: `server_root`). */
    anchor: { checkpoint: SignedCheckpoint; key_id: string } | null;
  };
};

/** A block's header as the server answers it: the record the chain's hashes are computed over (src/domain/shared/chain-hashes.ts). */
export type BlockHeader = BlockHeaderRecord;

export type Block = BlockHeader & { transactions: string[] };

export type BlockPage = { blocks: BlockHeader[]; total: number; limit: number; offset: number };

export type Stats = {
  total_transactions: number;
  total_users: number;
  native_price: number;
  native_price_text: string;
  trading_volume_24h: number;
  trading_volume_24h_text: string;
  active_users_24h: number;
  latest_block_number: number;
};

/** `GET /api/price/quote`: what a swap of an amount would receive now (not binding: see `swap`'s `slippage`). */
export type Quote = {
  /** What `to` would receive, in `token_out`; `amount_out_text` is the exact decimal. */
  amount_out: number;
  amount_out_text: string;
  /** The other token than the one paid in. */
  token_out: string;
  /** USD per native token now (12 decimals at most); `price_text` is exact. */
  price: number;
  price_text: string;
  /** The price this swap alone would leave. */
  price_after: number;
  price_after_text: string;
  /** The part of the amount paid in that the pool keeps, in the token paid in. */
  fee: number;
  fee_text: string;
};

/** `GET /api/market`: the pool as of the newest sealed block; each number with its exact `_text`. */
export type MarketInfo = {
  /** The system account whose balances are the reserves (`@pool`). */
  pool: string;
  /** The pool's fee in basis points of the amount paid in, fixed when the ledger was created. */
  fee_bps: number;
  /** The price after `block_number` (NATIVE_PRICE_USD while a reserve is empty). */
  native_price: number;
  native_price_text: string;
  reserves: { native: number; native_text: string; usdg: number; usdg_text: string };
  block_number: number;
};

/** What `verifyMarket` replayed: blocks 0..`to`, and the pool and price it ended with. */
export type MarketVerification = {
  to: number;
  fee_bps: number;
  blocks_checked: number;
  swaps_checked: number;
  /** Blocks whose native_price was compared with the replayed pool's (not those while a reserve was empty). */
  prices_checked: number;
  /** The price block `to` carries, in 12-decimal units and as text (null: blocks from before the market). */
  price_units: bigint | null;
  price_text: string | null;
  /** The replayed reserves after block `to`, in base units and as decimal text. */
  reserves: { native_units: bigint; usdg_units: bigint; native_text: string; usdg_text: string };
};

/** `GET /api/price/history` candle intervals. */
export type CandleInterval = '1m' | '1h' | '1d';

/** One price candle: USD per native token over the bucket starting at `start` (Unix seconds), each with its exact `_text`. */
export type Candle = {
  start: number;
  open: number;
  open_text: string;
  high: number;
  high_text: string;
  low: number;
  low_text: string;
  close: number;
  close_text: string;
  /** USD value of the swaps sealed in the bucket (their USDG side). */
  volume_usd: number;
  volume_usd_text: string;
};

/** `GET /api/price/history`: the newest candles, oldest first; buckets without a sealed block are absent. */
export type PriceHistory = { interval: CandleInterval; candles: Candle[] };

/** What `swap` sends: `from` pays `amount` of `token`, `to` (default `from`) receives the other token. */
export type SwapRequest = {
  from: string;
  /** Who receives the other token; default `from`. */
  to?: string;
  /** A number, or a decimal string for exactness. */
  amount: number | string;
  /** The token paid in: `TAB` or `USDG`, any case. */
  token: string;
  /**
   * The price move to tolerate: a fraction (`0.005`), a fraction as text (`'0.005'`) or a percentage
   * (`'0.5%'`), from 0 to below 100 %. The SDK takes a quote and sends
   * `min_receive = floor(amount_out × (1 − slippage))` (exact, in base units of the token received).
   */
  slippage?: number | string;
  /** Or the minimum itself, in the token received (not with `slippage`). Neither: any amount is accepted. */
  minReceive?: number | string;
  metadata?: { [key: string]: JsonValue };
};

/** What `swap` returns: the submission's receipt, with the quote it was bounded by and the `min_receive` it sent. */
export type SwapReceipt = SubmitReceipt & {
  /** The quote taken for `slippage` (null without one). */
  quote: Quote | null;
  /** The `min_receive` sent, as exact decimal text (null: none). */
  min_receive: string | null;
};

export type HealthStatus = { status: string };

/** What `verifyChain` checked. */
export type ChainVerification = {
  from: number;
  to: number;
  blocks_verified: number;
  /** The last verified header: a trust anchor for later proofs (`verifyInclusion(proof, { header })`). */
  head: BlockHeader;
};

/** The types of the event log (docs/api.md, "Events"). */
export type EventType = 'transaction.accepted' | 'transaction.confirmed' | 'transaction.failed' | 'block.sealed';

type EventFields = {
  /** `evt_<sequence>_<12 hex digits of the transaction or block hash>`: the same on every delivery. */
  id: string;
  /** Gap-free and strictly increasing over the whole ledger, from 1. */
  sequence: number;
  /** Unix seconds: the transaction's timestamp (`accepted`) or its block's. */
  occurred_at: number;
  schema_version: number;
};

/** `transaction.accepted` (the record while pending), `.confirmed` or `.failed` (the sealed record). */
export type TransactionEvent = EventFields & {
  type: 'transaction.accepted' | 'transaction.confirmed' | 'transaction.failed';
  /** The record as `getTransaction` returns it, with the exact `amount_text`. */
  data: Transaction;
};

/** A block was sealed; it comes after the outcome events of its transactions. */
export type BlockSealedEvent = EventFields & { type: 'block.sealed'; data: BlockHeader };

export type TabulaEvent = TransactionEvent | BlockSealedEvent;

export type EventsOptions = {
  /** Only these types (default: all). */
  types?: readonly EventType[];
  /** Only transaction events whose `from` or `to` is this user (no `block.sealed`). */
  account?: string;
  /** Start after this sequence (0: from the first event). Without it, the stream starts at the current head. */
  after?: number;
  /**
   * Check each event before yielding it: every transaction event's hash is recomputed from its record;
   * a `transaction.confirmed`/`.failed` must match its inclusion proof (block number, block hash,
   * position), which is checked against the recomputed block header; a `block.sealed` header's hash is
   * recomputed (and linked to the previous one seen). A mismatch throws a `VerificationError`.
   */
  verify?: boolean;
  /** Ends the iteration: the loop rejects with the signal's reason and the connection is closed. */
  signal?: AbortSignal;
  reconnect?: ReconnectOptions;
};

export type ReconnectOptions = {
  /** Connections in a row that may fail (the first one included) before the last error is thrown: 1 (never reconnect) to 1000, default 30. A connection that delivered an event or stayed up a minute starts the count again. */
  attempts?: number;
  /** First delay; doubles per failed connection, with jitter. Default: the stream's `retry:` (2 s), else 1 s. */
  base_delay_ms?: number;
  /** The longest backoff between connections; a 429's or 503's `Retry-After` is waited out even when longer (up to 5 minutes). Default 30 s. */
  max_delay_ms?: number;
  /** A connection that sends nothing, not even a heartbeat, for this long is dropped and reopened. Default 45 s. */
  idle_timeout_ms?: number;
};
