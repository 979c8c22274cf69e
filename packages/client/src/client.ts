/**
 * `TabulaClient`: a typed method per endpoint, safe retries, and verification of what the service
 * returns. Runs wherever `fetch` and WebCrypto do (Node ≥ 20, browsers).
 */
import { isHash } from '../../../src/domain/shared/hex.js';
import { formatUnits } from '../../../src/domain/shared/amount.js';
import { MarketMismatchError, ResponseFormatError, VerificationError, WaitTimeoutError, type SignedCheckpoint } from './errors.js';
import { LightClient, type TrustAnchor, type TrustOptions } from './light-client.js';
import { streamEvents } from './event-stream.js';
import { EventVerifier } from './event-verification.js';
import { parseWithExactNumbers, plainDecimal, topLevelArrayItemTexts, topLevelMemberText } from './exact-json.js';
import { MarketReplay, decimalUnits, formatPriceUnits } from './market-replay.js';
import { ATTEMPTS_MAX, problemFrom, sleep, Transport, type Answer, type RequestSpec, type RetryOptions, type TokenProvider } from './transport.js';
import type {
  AccountTransactionsPage, Balance, BatchItemResult, BatchReceipt, BatchTransactionRequest, Block, BlockHeader, BlockHistoryProof, BlockPage, ChainVerification,
  Candle, CandleInterval, CheckpointKey, ConsistencyProof, EventsOptions, HealthStatus, InclusionProof, MarketInfo, MarketVerification, PriceHistory, Quote, Stats, SubmitReceipt, SubmitTransactionRequest,
  SwapReceipt, SwapRequest, TabulaEvent, Transaction, VerifiedBalance,
} from './types.js';
import { minReceiveFor } from './slippage.js';
import { noteBalanceRoot, verifyBalanceProof, type BalanceProof } from './balance-verification.js';
import { verifyBlock, verifyChainLink, verifyInclusionAgainst, verifyTransaction } from './verification.js';

export type TabulaClientOptions = {
  /** Where the service is, e.g. `https://ledger.example.com` (without `/api`). */
  baseUrl: string;
  /** Sent as `X-API-Key` when set. */
  apiKey?: string;
  /** The bearer token, or a function returning it; the function is called again once after a 401. */
  jwt?: string | TokenProvider;
  /** Per attempt; default 10 s. */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /**
   * Makes this a light client: every `verifyInclusion` / `verifyTransaction` also checks the block
   * against a signed checkpoint it trusts, advanced only through verified consistency proofs (a
   * rewritten or forked history throws `ForkDetectedError`, a stale or unsigned checkpoint a
   * `VerificationError`).
   */
  trust?: TrustOptions;
};

export type MarketOptions = {
  /** The last block replayed; default: the block `GET /api/market` names (the newest). */
  toBlock?: number;
  /** Requests in flight at once (blocks and their transactions): 1..16, default 4. */
  concurrency?: number;
  signal?: AbortSignal;
};

export type WaitOptions = { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal };
export type ChainOptions = {
  /** Called with each verified header, in order (e.g. for a progress bar). */
  onBlock?: (header: BlockHeader) => void;
  /** Blocks fetched ahead while one is verified: 1..16, default 4. */
  concurrency?: number;
  signal?: AbortSignal;
};

/** The most transactions `submitBatch` sends in one request (the service's limit). */
export const BATCH_TRANSACTIONS_MAX = 1000;

/** Transactions per request of `iterateAccountTransactions` unless told (the service's largest page). */
const HISTORY_PAGE_LIMIT_DEFAULT = 100;
const TIMEOUT_MS_DEFAULT = 10_000;
const WAIT_TIMEOUT_MS_DEFAULT = 60_000;
const WAIT_INTERVAL_MS_DEFAULT = 500;
const WAIT_INTERVAL_MS_MIN = 20;
const CONCURRENCY_MAX = 16;
const TRANSACTION_AMOUNTS = ['amount', 'min_receive', 'amount_out'];
const BALANCE_AMOUNTS = ['native', 'usdg', 'total_usd'];
const STATS_AMOUNTS = ['native_price', 'trading_volume_24h'];
const QUOTE_AMOUNTS = ['amount_out', 'price', 'price_after', 'fee'];
const CANDLE_AMOUNTS = ['open', 'high', 'low', 'close', 'volume_usd'];
const CANDLE_INTERVALS: readonly CandleInterval[] = ['1m', '1h', '1d'];
/** The most candles `priceHistory` asks for in one request (the service's limit). */
export const CANDLE_LIMIT_MAX = 1000;

export class TabulaClient {
  private readonly transport: Transport;
  private readonly light: LightClient | null;

  constructor(options: TabulaClientOptions) {
    const base_url = new URL(options.baseUrl).toString().replace(/\/+$/, '');
    const attempts = options.retry?.attempts ?? 4;
    if (!Number.isInteger(attempts) || attempts < 1 || attempts > ATTEMPTS_MAX) throw new RangeError(`retry.attempts must be an integer from 1 to ${ATTEMPTS_MAX}`);
    const fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.transport = new Transport({
      base_url,
      api_key: options.apiKey,
      jwt: options.jwt,
      timeout_ms: positive(options.timeoutMs ?? TIMEOUT_MS_DEFAULT, 'timeoutMs'),
      retry: {
        attempts,
        base_delay_ms: positive(options.retry?.base_delay_ms ?? 200, 'retry.base_delay_ms'),
        max_delay_ms: positive(options.retry?.max_delay_ms ?? 10_000, 'retry.max_delay_ms'),
      },
      fetch: fetcher,
    });
    this.light = options.trust === undefined ? null : new LightClient({
      checkpoint: (size) => this.getCheckpoint(size),
      consistency: (from, to) => this.getConsistencyProof(from, to),
      blockProof: (number, size) => this.getBlockProof(number, size),
    }, options.trust);
  }

  /** `GET /api/checkpoint[?size=n]`: a signed checkpoint (not verified here: see `advanceCheckpoint`). */
  async getCheckpoint(size?: number, options: { signal?: AbortSignal } = {}): Promise<SignedCheckpoint> {
    return json(await this.get(`/api/checkpoint${size === undefined ? '' : `?size=${positiveInteger(size, 'size')}`}`, options)) as SignedCheckpoint;
  }

  /** `GET /api/chain/consistency?from&to`: the RFC 9162 proof that history `to` extends history `from`. */
  async getConsistencyProof(from: number, to: number, options: { signal?: AbortSignal } = {}): Promise<ConsistencyProof> {
    return json(await this.get(`/api/chain/consistency?from=${positiveInteger(from, 'from')}&to=${positiveInteger(to, 'to')}`, options)) as ConsistencyProof;
  }

  /** `GET /api/blocks/{number}/proof[?size=n]`: the block's inclusion in the history tree. */
  async getBlockProof(number: number, size?: number, options: { signal?: AbortSignal } = {}): Promise<BlockHistoryProof> {
    const query = size === undefined ? '' : `?size=${positiveInteger(size, 'size')}`;
    return json(await this.get(`/api/blocks/${blockNumber(number)}/proof${query}`, options)) as BlockHistoryProof;
  }

  /** `GET /.well-known/tabula-checkpoint-key`: the key the service signs checkpoints with (compare it with one obtained out of band). */
  async getCheckpointKey(options: { signal?: AbortSignal } = {}): Promise<CheckpointKey> {
    return json(await this.get('/.well-known/tabula-checkpoint-key', { ...options, auth: false })) as CheckpointKey;
  }

  /** The checkpoint this light client trusts now (null before the first); needs `trust`. */
  async trustedCheckpoint(): Promise<SignedCheckpoint | null> {
    return this.requireTrust().trusted();
  }

  /** Fetches the latest checkpoint, verifies its signature and its consistency with the trusted one, and trusts it; needs `trust`. */
  async advanceCheckpoint(): Promise<SignedCheckpoint> {
    return this.requireTrust().advance();
  }

  private requireTrust(): LightClient {
    if (this.light === null) throw new TypeError('this needs a client made with `trust: { publicKey }`');
    return this.light;
  }

  /** `GET /healthz`: the process is up. No token needed. */
  async health(): Promise<HealthStatus> {
    return json(await this.get('/healthz', { auth: false })) as HealthStatus;
  }

  /** `GET /readyz`: the store answers (a 503 `not_ready` throws `ServerError`). No token needed. */
  async ready(): Promise<HealthStatus> {
    return json(await this.get('/readyz', { auth: false })) as HealthStatus;
  }

  /**
   * `POST /api/transactions/submit`. Sends an `Idempotency-Key` (a random UUID unless given) and
   * retries network errors, timeouts, 429 and 5xx with the same key, so a retry never creates a
   * second transaction: the service answers it with the first receipt (`replayed: true`).
   */
  async submitTransaction(request: SubmitTransactionRequest, options: { idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<SubmitReceipt> {
    const idempotency_key = options.idempotencyKey ?? randomKey();
    const answer = await this.transport.send({
      method: 'POST', path: '/api/transactions/submit', body: request, headers: { 'idempotency-key': idempotency_key },
      retry: true, auth: true, signal: options.signal,
    });
    const receipt = json(answer) as Omit<SubmitReceipt, 'replayed' | 'idempotency_key'>;
    return { ...receipt, replayed: answer.headers.get('idempotent-replayed') === 'true', idempotency_key };
  }

  /**
   * `POST /api/transactions/batch`: 1 to 1000 submissions in one request, all accepted ones stored in
   * one durable commit, each answered on its own and in order (`results[i]` is for `transactions[i]`).
   * Every item is sent with an `idempotency_key` (a random UUID unless it has one), and the batch is
   * retried like `submitTransaction` (network errors, timeouts, 429 and 5xx, same body), so a retry
   * never stores an item twice: the service answers a repeat with the first receipt (`replayed: true`).
   * An item the service refuses is a result carrying its problem, not an error; only a refusal of the
   * whole batch throws (`PayloadTooLargeError` over 1 MiB, `RateLimitedError`, …). An empty batch or
   * one over `BATCH_TRANSACTIONS_MAX` throws a `RangeError` before anything is sent.
   */
  async submitBatch(transactions: readonly BatchTransactionRequest[], options: { signal?: AbortSignal } = {}): Promise<BatchReceipt> {
    if (transactions.length < 1 || transactions.length > BATCH_TRANSACTIONS_MAX) {
      throw new RangeError(`a batch holds 1 to ${BATCH_TRANSACTIONS_MAX} transactions, got ${transactions.length}: split it into several submitBatch calls`);
    }
    const items = transactions.map((transaction) => ({ ...transaction, idempotency_key: transaction.idempotency_key ?? randomKey() }));
    const answer = await this.transport.send({
      method: 'POST', path: '/api/transactions/batch', body: { transactions: items }, retry: true, auth: true, signal: options.signal,
    });
    return batchReceiptOf(json(answer), items.map((item) => item.idempotency_key));
  }

  /** `GET /api/transactions/{hash}`. */
  async getTransaction(hash: string, options: { signal?: AbortSignal } = {}): Promise<Transaction> {
    const wanted = checkedHash(hash);
    const record = exact(await this.get(`/api/transactions/${wanted}`, options), TRANSACTION_AMOUNTS) as Transaction;
    if (record.tx_hash !== wanted) throw new VerificationError('record_mismatch', `asked for transaction ${wanted}, got ${String(record.tx_hash)}`, { tx_hash: wanted });
    return record;
  }

  /** `GET /api/transactions/{hash}/proof`; 404 `transaction_not_sealed` while pending. */
  async getProof(hash: string, options: { signal?: AbortSignal } = {}): Promise<InclusionProof> {
    const wanted = checkedHash(hash);
    const proof = json(await this.get(`/api/transactions/${wanted}/proof`, options)) as InclusionProof;
    if (proof.tx_hash !== wanted) throw new VerificationError('record_mismatch', `asked for the proof of ${wanted}, got one for ${String(proof.tx_hash)}`, { tx_hash: wanted });
    return proof;
  }

  /** `GET /api/balance/{userId}`: confirmed balances; an unknown user has zeros. */
  async getBalance(userId: string, options: { signal?: AbortSignal } = {}): Promise<Balance> {
    return exact(await this.get(`/api/balance/${encodeURIComponent(userId)}`, options), BALANCE_AMOUNTS) as Balance;
  }

  /**
   * `GET /api/balance/{userId}?proof=true`, verified: each token's balance is proven (a zero one by
   * absence) under the balance root of the newest sealed block, the stated amounts are the proven ones,
   * and that root is the one the server stores for the block (`GET /api/blocks/{n}/balance-root`,
   * `verified.against: 'server_root'`). Throws a `VerificationError` (`balance_proof_invalid`,
   * `balance_mismatch`, `balance_root_mismatch`) when anything differs.
   */
  async getBalanceVerified(userId: string, options: { signal?: AbortSignal } = {}): Promise<VerifiedBalance> {
    const answer = exact(await this.get(`/api/balance/${encodeURIComponent(userId)}?proof=true`, options), BALANCE_AMOUNTS) as Balance & { proof?: BalanceProof };
    const { proof, ...balance } = answer;
    if (proof === undefined) throw new VerificationError('balance_proof_invalid', `the answer for ${userId} carries no balance proof`);
    const proven = await verifyBalanceProof(userId, balance, proof);
    const where = { block_number: proven.block_number };
    if (this.light !== null) {
      const { checkpoint, anchor } = await this.balanceCheckpoint(this.light, proven.block_number);
      const signed = noteBalanceRoot(checkpoint.note, proven.block_number);
      if (signed === null) throw new VerificationError('balance_root_mismatch', `the signed checkpoint of size ${checkpoint.size} states no balance root for block ${proven.block_number}`, where);
      if (signed !== proven.balance_root) {
        throw new VerificationError('balance_root_mismatch', `the proof's balance root ${proven.balance_root} is not the one signed in checkpoint ${checkpoint.size} (${signed})`, where);
      }
      return { ...balance, verified: { block_number: proven.block_number, balance_root: proven.balance_root, against: 'checkpoint', units: proven.units, anchor } };
    }
    const stored = json(await this.get(`/api/blocks/${proven.block_number}/balance-root`, options)) as { balance_root?: unknown };
    if (stored.balance_root !== proven.balance_root) {
      throw new VerificationError('balance_root_mismatch', `the proof's balance root ${proven.balance_root} is not the one stored for the block (${String(stored.balance_root)})`, where);
    }
    return { ...balance, verified: { block_number: proven.block_number, balance_root: proven.balance_root, against: 'server_root', units: proven.units, anchor: null } };
  }

  /**
   * The signed checkpoint whose newest block is `block_number` (size block_number + 1), verified: the
   * trusted one when it is that one, else fetched, its signature checked and its block proven into
   * the trusted history (advanced first when the block is newer than it).
   */
  private async balanceCheckpoint(light: LightClient, block_number: number): Promise<{ checkpoint: SignedCheckpoint; anchor: TrustAnchor }> {
    const size = block_number + 1;
    let trusted = await light.trusted();
    if (trusted === null || trusted.size < size) trusted = await light.advance();
    if (trusted.size === size) return { checkpoint: trusted, anchor: { checkpoint: trusted, key_id: await light.keyId() } };
    const checkpoint = await this.getCheckpoint(size);
    await light.verifySignature(checkpoint);
    if (checkpoint.size !== size) throw new VerificationError('history_proof_invalid', `asked for the checkpoint of size ${size}, got size ${checkpoint.size}`, { block_number });
    const anchor = await light.verifyBlockHash(block_number, checkpoint.block_hash);
    return { checkpoint, anchor };
  }

  /**
   * `GET /api/accounts/{userId}/transactions?limit&cursor`: one page of the transactions the account
   * sent or received (pending ones included), newest first, with exact amounts (`amount_text`). Pass
   * the page's `next_cursor` as `cursor` for the next, older page; it is null on the last one. Throws
   * a `VerificationError` (`record_mismatch`) if the page is another account's or lists a transaction
   * that is not the account's.
   */
  async listAccountTransactions(userId: string, page: { limit?: number; cursor?: string } = {}, options: { signal?: AbortSignal } = {}): Promise<AccountTransactionsPage> {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.cursor !== undefined) query.set('cursor', page.cursor);
    const answer = await this.get(`/api/accounts/${encodeURIComponent(userId)}/transactions${querySuffix(query)}`, options);
    return accountTransactionsPageOf(answer, userId);
  }

  /**
   * Every transaction of the account, newest first, page after page (`limit` per request, default
   * 100): each page is fetched only when the loop has used the one before, so `break` stops fetching.
   */
  async *iterateAccountTransactions(userId: string, options: { limit?: number; signal?: AbortSignal } = {}): AsyncGenerator<Transaction, void, undefined> {
    const signal_option = options.signal ? { signal: options.signal } : {};
    let cursor: string | undefined;
    for (;;) {
      const page = await this.listAccountTransactions(userId, { limit: options.limit ?? HISTORY_PAGE_LIMIT_DEFAULT, ...(cursor === undefined ? {} : { cursor }) }, signal_option);
      yield* page.transactions;
      if (page.next_cursor === null) return;
      if (page.next_cursor === cursor) {
        throw new ResponseFormatError(`the history of ${userId} does not move on from cursor ${String(cursor)}`);
      }
      cursor = page.next_cursor;
    }
  }

  /** `GET /api/blocks?limit&offset`: headers, newest first. */
  async listBlocks(page: { limit?: number; offset?: number } = {}, options: { signal?: AbortSignal } = {}): Promise<BlockPage> {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.offset !== undefined) query.set('offset', String(page.offset));
    return json(await this.get(`/api/blocks${querySuffix(query)}`, options)) as BlockPage;
  }

  /** `GET /api/blocks/{number}`: the header and the block's transaction hashes in order. */
  async getBlock(number: number, options: { signal?: AbortSignal } = {}): Promise<Block> {
    if (!Number.isSafeInteger(number) || number < 0) throw new RangeError(`block number must be a non-negative integer, got ${number}`);
    const block = json(await this.get(`/api/blocks/${number}`, options)) as Block;
    if (block.number !== number) throw new VerificationError('record_mismatch', `asked for block ${number}, got block ${String(block.number)}`, { block_number: number });
    return block;
  }

  /** `GET /api/stats`. */
  async getStats(options: { signal?: AbortSignal } = {}): Promise<Stats> {
    return exact(await this.get('/api/stats', options), STATS_AMOUNTS) as Stats;
  }

  /** `GET /api/market`: the pool's account, fee, reserves and price as of the newest sealed block, numbers with their exact `_text`. */
  async getMarket(options: { signal?: AbortSignal } = {}): Promise<MarketInfo> {
    const answer = await this.get('/api/market', options);
    const market = exact(answer, ['native_price']) as Partial<MarketInfo>;
    const reserves_text = topLevelMemberText(answer.text, 'reserves');
    let reserves: Record<string, unknown> | null = null;
    try {
      reserves = reserves_text === undefined ? null : parseWithExactNumbers(reserves_text, ['native', 'usdg']);
    } catch {
      reserves = null;
    }
    if (typeof market.fee_bps !== 'number' || typeof market.native_price_text !== 'string' || !Number.isSafeInteger(market.block_number)
      || reserves === null || typeof reserves['native_text'] !== 'string' || typeof reserves['usdg_text'] !== 'string') {
      throw new ResponseFormatError(`the service answered ${answer.status} with a body that is not the market`);
    }
    return { ...market, reserves } as MarketInfo;
  }

  /**
   * Replays the pool from the chain: walks blocks 0..`toBlock` (default: the newest, as `GET
   * /api/market` names it), fetching each block and its transactions (`concurrency` requests at once),
   * and checks every swap's outcome against the constant-product formula with the fee `GET
   * /api/market` states, every failed swap's reason where the pool decides it, and every block's
   * `native_price` against the replayed reserves (see `MarketReplay` for the rules; a failure for
   * `insufficient_funds` or `balance_overflow` depends on balances and is not checked). Replaying up
   * to the newest block, the reserves `GET /api/market` states must be the replayed ones. Throws a
   * `MarketMismatchError` naming the block and transaction. Hashes and links are `verifyChain`'s
   * job: run both to trust the prices as well as the chain they are in.
   */
  async verifyMarket(options: MarketOptions = {}): Promise<MarketVerification> {
    const signal_option = options.signal ? { signal: options.signal } : {};
    const market = await this.getMarket(signal_option);
    const to = options.toBlock ?? market.block_number;
    if (!Number.isSafeInteger(to) || to < 0) throw new RangeError(`toBlock must be a non-negative integer, got ${to}`);
    const replay = new MarketReplay(market.fee_bps);
    const limit = limiter(Math.min(CONCURRENCY_MAX, Math.max(1, options.concurrency ?? 4)));
    const fetchBlock = async (number: number): Promise<{ block: Block; transactions: Transaction[] }> => {
      const block = await limit(() => this.getBlock(number, signal_option));
      const transactions = await Promise.all(block.transactions.map((hash) => limit(() => this.getTransaction(hash, signal_option))));
      return { block, transactions };
    };
    const ahead: Promise<{ block: Block; transactions: Transaction[] }>[] = [];
    let next_fetch = 0;
    for (let number = 0; number <= to; number += 1) {
      while (ahead.length < Math.max(2, options.concurrency ?? 4) && next_fetch <= to) {
        const pending = fetchBlock(next_fetch);
        pending.catch(() => undefined); // awaited in order below
        ahead.push(pending);
        next_fetch += 1;
      }
      const { block, transactions } = await (ahead.shift() as Promise<{ block: Block; transactions: Transaction[] }>);
      for (const [position, tx] of transactions.entries()) {
        if (tx.block_number !== number || tx.position !== position) {
          throw new VerificationError('record_mismatch', `the block lists transaction ${tx.tx_hash} at position ${position}, its record says block ${String(tx.block_number)} position ${String(tx.position)}`, { block_number: number, tx_hash: tx.tx_hash });
        }
        replay.transaction(tx, number);
      }
      replay.endBlock(block);
    }
    const { native_units, usdg_units } = replay.reserves;
    if (to === market.block_number) {
      const stated = { native: decimalUnits(market.reserves.native_text, 8), usdg: decimalUnits(market.reserves.usdg_text, 6) };
      if (stated.native !== native_units || stated.usdg !== usdg_units) {
        throw new MarketMismatchError('reserves_mismatch', `GET /api/market states reserves ${market.reserves.native_text} native, ${market.reserves.usdg_text} USDG, but the replayed pool holds ${formatUnits(native_units, 8)} native, ${formatUnits(usdg_units, 6)} USDG`, { block_number: to });
      }
    }
    return {
      to,
      fee_bps: market.fee_bps,
      blocks_checked: replay.blocks_checked,
      swaps_checked: replay.swaps_checked,
      prices_checked: replay.prices_checked,
      price_units: replay.last_price_units,
      price_text: replay.last_price_units === null ? null : formatPriceUnits(replay.last_price_units),
      reserves: { native_units, usdg_units, native_text: formatUnits(native_units, 8), usdg_text: formatUnits(usdg_units, 6) },
    };
  }

  /**
   * `GET /api/price/quote?token&amount`: what swapping `amount` of `token` would receive now, from the
   * reserves as of the newest block, with the pool's fee (not binding). Every number comes with its
   * exact text (`amount_out_text`, `price_text`, `price_after_text`, `fee_text`). 409
   * `market_unavailable` (a `ConflictError`) while a reserve is empty
   * or when the amount would receive nothing.
   */
  async quote(token: string, amount: number | string, options: { signal?: AbortSignal } = {}): Promise<Quote> {
    const query = new URLSearchParams({ token, amount: amountQueryText(amount) });
    const answer = await this.get(`/api/price/quote?${query.toString()}`, options);
    const quote = exact(answer, QUOTE_AMOUNTS) as Partial<Quote>;
    if (typeof quote.amount_out_text !== 'string' || typeof quote.token_out !== 'string' || typeof quote.price_text !== 'string') {
      throw new ResponseFormatError(`the service answered ${answer.status} with a body that is not a quote`);
    }
    return quote as Quote;
  }

  /**
   * `GET /api/price/history?interval&limit`: the newest `limit` (1..1000, default 100) price candles of
   * `interval` (`1m`, `1h` default, `1d`), oldest first, each number with its exact text (`close_text`…).
   */
  async priceHistory(page: { interval?: CandleInterval; limit?: number } = {}, options: { signal?: AbortSignal } = {}): Promise<PriceHistory> {
    const query = new URLSearchParams();
    if (page.interval !== undefined) {
      if (!CANDLE_INTERVALS.includes(page.interval)) throw new RangeError(`interval must be one of ${CANDLE_INTERVALS.join(', ')}, got ${String(page.interval)}`);
      query.set('interval', page.interval);
    }
    if (page.limit !== undefined) {
      if (!Number.isSafeInteger(page.limit) || page.limit < 1 || page.limit > CANDLE_LIMIT_MAX) throw new RangeError(`limit must be an integer from 1 to ${CANDLE_LIMIT_MAX}`);
      query.set('limit', String(page.limit));
    }
    const answer = await this.get(`/api/price/history${querySuffix(query)}`, options);
    const body = json(answer) as { interval?: unknown; candles?: unknown } | null;
    if (typeof body !== 'object' || body === null || !Array.isArray(body.candles) || !CANDLE_INTERVALS.includes(body.interval as CandleInterval)) {
      throw new ResponseFormatError(`the service answered ${answer.status} with a body that is not a price history`);
    }
    if (page.interval !== undefined && body.interval !== page.interval) {
      throw new ResponseFormatError(`asked for ${page.interval} candles, got ${String(body.interval)} ones`);
    }
    const candles = topLevelArrayItemTexts(answer.text, 'candles').map((text) => {
      try {
        return parseWithExactNumbers(text, CANDLE_AMOUNTS) as Candle;
      } catch (error) {
        throw new ResponseFormatError('a candle of the price history is not a JSON object', { cause: error });
      }
    });
    return { interval: body.interval as CandleInterval, candles };
  }

  /**
   * Submits a swap (`type: 'swap'`): `from` pays `amount` of `token`, `to` (default `from`) receives the
   * other token. With `slippage` (a fraction `0.005`, `'0.005'`, or a percentage `'0.5%'`; 0 to below
   * 100 %) it first takes a `quote` and sends `min_receive = floor(amount_out × (1 − slippage))`,
   * computed exactly in base units of the token received; or pass `minReceive` yourself. If the price
   * has moved further by the time the swap is sealed, it fails with `slippage_exceeded` (see
   * `waitForTransaction`). A bad `slippage` or a minimum that rounds to nothing throws a `RangeError`
   * before anything is sent. Retried like `submitTransaction`, with one idempotency key.
   */
  async swap(request: SwapRequest, options: { idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<SwapReceipt> {
    if (request.slippage !== undefined && request.minReceive !== undefined) throw new RangeError('pass slippage or minReceive, not both');
    const signal_option = options.signal ? { signal: options.signal } : {};
    let quote: Quote | null = null;
    let min_receive: string | null = request.minReceive === undefined ? null : amountQueryText(request.minReceive);
    if (request.slippage !== undefined) {
      quote = await this.quote(request.token, request.amount, signal_option);
      try {
        min_receive = minReceiveFor(quote.amount_out_text, quote.token_out, request.slippage);
      } catch (error) {
        if (error instanceof RangeError) throw error;
        throw new ResponseFormatError(`the quote's amount_out ${quote.amount_out_text} is not an exact amount of ${quote.token_out}`, { cause: error });
      }
    }
    const submission: SubmitTransactionRequest = {
      from: request.from, to: request.to ?? request.from, amount: request.amount, token: request.token, type: 'swap',
      ...(min_receive === null ? {} : { min_receive }),
      ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
    };
    const receipt = await this.submitTransaction(submission, { ...signal_option, ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }) });
    return { ...receipt, quote, min_receive };
  }

  /** Polls until the transaction is `confirmed` or `failed` and returns it; `WaitTimeoutError` after `timeoutMs`. */
  async waitForTransaction(hash: string, options: WaitOptions = {}): Promise<Transaction> {
    const timeout_ms = positive(options.timeoutMs ?? WAIT_TIMEOUT_MS_DEFAULT, 'timeoutMs');
    const interval_ms = Math.max(WAIT_INTERVAL_MS_MIN, positive(options.intervalMs ?? WAIT_INTERVAL_MS_DEFAULT, 'intervalMs'));
    const deadline = Date.now() + timeout_ms;
    for (;;) {
      const transaction = await this.getTransaction(hash, { ...(options.signal ? { signal: options.signal } : {}) });
      if (transaction.status !== 'pending') return transaction;
      const left_ms = deadline - Date.now();
      if (left_ms <= 0) throw new WaitTimeoutError(transaction.tx_hash, timeout_ms);
      await sleep(Math.min(interval_ms, left_ms), options.signal);
    }
  }

  /** Recomputes a transaction's hash from its record (exact amount, metadata, nonce, timestamp). */
  async verifyTransaction(transaction: Transaction): Promise<{ anchor: TrustAnchor | null }> {
    await verifyTransaction(transaction);
    // A light client also proves a sealed transaction into its block and the block into the trusted history.
    if (this.light === null || transaction.block_number === null) return { anchor: null };
    const { anchor } = await this.verifyInclusion(await this.getProof(transaction.tx_hash));
    return { anchor };
  }

  /**
   * Verifies an inclusion proof: the root recomputed from `tx_hash` and `audit_path` must equal the
   * `transactions_root` inside a block header whose recomputed hash is `block_hash`. The header is
   * fetched unless given; pass one from `verifyChain` to anchor the proof to a chain you verified
   * (a server that forges a whole block can only be caught against such an anchor).
   */
  async verifyInclusion(proof: InclusionProof, options: { header?: BlockHeader; signal?: AbortSignal } = {}): Promise<{ header: BlockHeader; anchor: TrustAnchor | null }> {
    const header = options.header ?? headerOf(await this.getBlock(proof.block_number, { ...(options.signal ? { signal: options.signal } : {}) }));
    await verifyInclusionAgainst(proof, header);
    // A light client then proves the header's hash into the history of its trusted signed checkpoint.
    const anchor = this.light === null ? null : await this.light.verifyBlockHash(header.number, header.hash);
    return { header, anchor };
  }

  /**
   * Verifies one block by itself: the root from its transaction list, the hash from its header, and
   * (given `parent`, or for genesis) the link. Nothing the server states is taken as is.
   */
  async verifyBlock(block: Block, options: { parent?: BlockHeader } = {}): Promise<void> {
    await verifyBlock(block, options.parent);
  }

  /**
   * Walks blocks `fromBlock`..`toBlock` (default: 0 to the newest), recomputing every root and hash
   * and checking every link; from genesis when `fromBlock` is 0, else from block `fromBlock − 1`,
   * whose own content is verified and whose hash anchors the walk. Throws a `VerificationError`
   * naming the first bad block.
   */
  async verifyChain(fromBlock = 0, toBlock?: number, options: ChainOptions = {}): Promise<ChainVerification> {
    const signal_option = options.signal ? { signal: options.signal } : {};
    const to = toBlock ?? (await this.latestBlockNumber(signal_option));
    if (!Number.isSafeInteger(fromBlock) || fromBlock < 0 || !Number.isSafeInteger(to) || to < fromBlock) {
      throw new RangeError(`verifyChain needs 0 ≤ fromBlock ≤ toBlock (got ${fromBlock}..${to})`);
    }
    const concurrency = Math.min(CONCURRENCY_MAX, Math.max(1, options.concurrency ?? 4));
    let parent: BlockHeader | null = null;
    if (fromBlock > 0) {
      const anchor = await this.getBlock(fromBlock - 1, signal_option);
      await verifyBlock(anchor);
      parent = headerOf(anchor);
    }
    const ahead: Promise<Block>[] = [];
    let next_fetch = fromBlock;
    const fill = (): void => {
      while (ahead.length < concurrency && next_fetch <= to) {
        const pending = this.getBlock(next_fetch, signal_option);
        pending.catch(() => undefined); // awaited in order below; keep early failures from being unhandled
        ahead.push(pending);
        next_fetch += 1;
      }
    };
    for (let number = fromBlock; number <= to; number += 1) {
      fill();
      const block = await (ahead.shift() as Promise<Block>);
      await verifyChainLink(block, parent);
      parent = headerOf(block);
      options.onBlock?.(parent);
    }
    return { from: fromBlock, to, blocks_verified: to - fromBlock + 1, head: parent as BlockHeader };
  }

  /**
   * `GET /api/events`: the event log, live, as an async iterable (`for await (const event of
   * client.events({ after: 0 }))`). From `after` (0: the first event), else from now on. It reconnects
   * by itself (dropped or idle connection, 429, 5xx; backoff honouring `Retry-After`, `reconnect`
   * bounds it) and resumes after the last event it yielded, so the loop sees each event once, in
   * order; an unfiltered stream whose sequences are not consecutive throws a `VerificationError`
   * (`event_sequence_gap`). A 4xx throws its typed error (`CursorExpiredError` for 410
   * `cursor_expired`, `BadRequestError`…). `verify: true` checks each event against the chain first
   * (see `EventsOptions.verify`). `break`, `return` or `signal` close the connection.
   */
  events(options: EventsOptions = {}): AsyncGenerator<TabulaEvent, void, undefined> {
    const verifier = options.verify === true ? new EventVerifier(this) : null;
    const open = (path: string, headers: Record<string, string>, signal: AbortSignal) => this.transport.open({ method: 'GET', path, headers, retry: false, auth: true, signal });
    return streamEvents(open, verifier, options);
  }

  private async latestBlockNumber(options: { signal?: AbortSignal }): Promise<number> {
    const page = await this.listBlocks({ limit: 1 }, options);
    const newest = page.blocks[0];
    if (newest === undefined) throw new ResponseFormatError('the service lists no blocks (not even genesis)');
    return newest.number;
  }

  private get(path: string, options: { auth?: boolean; signal?: AbortSignal | undefined }): Promise<Answer> {
    const spec: RequestSpec = { method: 'GET', path, retry: true, auth: options.auth ?? true, signal: options.signal };
    return this.transport.send(spec);
  }
}

/** Runs at most `concurrency` of the tasks given to it at once, in the order given. */
function limiter(concurrency: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await task();
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };
}

function headerOf(block: Block): BlockHeader {
  const { number, hash, parent_hash, timestamp, transactions_count, transactions_root, native_price } = block;
  return { number, hash, parent_hash, timestamp, transactions_count, transactions_root, ...(native_price == null ? {} : { native_price }) };
}

/** Checks that the service answered every item, in order, and counts the results itself. */
function batchReceiptOf(body: unknown, idempotency_keys: readonly string[]): BatchReceipt {
  const results = (body as { results?: unknown } | null)?.results;
  if (!Array.isArray(results) || results.length !== idempotency_keys.length) {
    const count = Array.isArray(results) ? results.length : 'no';
    throw new ResponseFormatError(`the batch answer has ${count} results for ${idempotency_keys.length} transactions`);
  }
  const typed = results.map((result: unknown, index) => batchItemResultOf(result, index, idempotency_keys[index] as string));
  const accepted = typed.filter((result) => result.error === undefined).length;
  return { accepted, rejected: typed.length - accepted, results: typed };
}

function batchItemResultOf(value: unknown, index: number, idempotency_key: string): BatchItemResult {
  const result = value as { index?: unknown; status?: unknown; tx_hash?: unknown; timestamp?: unknown; replayed?: unknown; error?: unknown } | null;
  if (typeof result !== 'object' || result === null || result.index !== index) {
    throw new ResponseFormatError(`the batch answer's result ${index} is not the one for transaction ${index}`);
  }
  const { status, tx_hash, timestamp } = result;
  if (status === 202 && typeof tx_hash === 'string' && isHash(tx_hash) && Number.isSafeInteger(timestamp)) {
    return { index, status, tx_hash, timestamp: timestamp as number, replayed: result.replayed === true, idempotency_key };
  }
  const problem = typeof status === 'number' && status >= 400 && status < 500 ? problemFrom(result.error, status) : null;
  if (problem === null) throw new ResponseFormatError(`the batch answer's result ${index} is neither a receipt nor a 4xx problem`);
  return { index, status: problem.status, error: problem, idempotency_key };
}

/**
 * A history page with each transaction's exact amount text, checked to be the page of `user_id`
 * (the service names the account, and every transaction names it as `from` or `to`).
 */
function accountTransactionsPageOf(answer: Answer, user_id: string): AccountTransactionsPage {
  const body = json(answer) as { user_id?: unknown; transactions?: unknown; next_cursor?: unknown } | null;
  const next_cursor = body?.next_cursor;
  if (typeof body !== 'object' || body === null || !Array.isArray(body.transactions) || (typeof next_cursor !== 'string' && next_cursor !== null)) {
    throw new ResponseFormatError(`the service answered ${answer.status} with a body that is not a page of transactions`);
  }
  if (body.user_id !== user_id) {
    throw new VerificationError('record_mismatch', `asked for the transactions of ${user_id}, got those of ${String(body.user_id)}`);
  }
  const transactions = topLevelArrayItemTexts(answer.text, 'transactions').map((text) => {
    try {
      return parseWithExactNumbers(text, TRANSACTION_AMOUNTS) as Transaction;
    } catch (error) {
      throw new ResponseFormatError('a transaction of the page is not a JSON object', { cause: error });
    }
  });
  for (const transaction of transactions) {
    if (transaction.from !== user_id && transaction.to !== user_id) {
      throw new VerificationError('record_mismatch', `asked for the transactions of ${user_id}, got one from ${String(transaction.from)} to ${String(transaction.to)}`, { tx_hash: transaction.tx_hash });
    }
  }
  return { user_id, transactions, next_cursor };
}

/** An amount for a query or a computed field: a string as it is, a number as its plain decimal text (`1e-7` → `0.0000001`). */
function amountQueryText(amount: number | string): string {
  if (typeof amount === 'string') return amount;
  if (!Number.isFinite(amount)) throw new RangeError(`an amount must be a finite number, got ${amount}`);
  return plainDecimal(String(amount));
}

function querySuffix(query: URLSearchParams): string {
  const search = query.toString();
  return search === '' ? '' : `?${search}`;
}

function json(answer: Answer): unknown {
  try {
    return JSON.parse(answer.text) as unknown;
  } catch (error) {
    throw new ResponseFormatError(`the service answered ${answer.status} with a body that is not JSON`, { cause: error });
  }
}

function exact(answer: Answer, amount_fields: readonly string[]): Record<string, unknown> {
  try {
    return parseWithExactNumbers(answer.text, amount_fields);
  } catch (error) {
    throw new ResponseFormatError(`the service answered ${answer.status} with a body that is not a JSON object`, { cause: error });
  }
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be an integer ≥ 1`);
  return value;
}

function blockNumber(value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError('a block number is an integer ≥ 0');
  return value;
}

function checkedHash(hash: string): string {
  const lower = hash.toLowerCase();
  if (!isHash(lower)) throw new RangeError(`not a hash (0x + 64 hex digits): ${hash}`);
  return lower;
}

function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number of milliseconds`);
  return value;
}

/** A random UUID v4 (`crypto.randomUUID` where available: it needs a secure context in browsers). */
export function randomKey(): string {
  if (typeof globalThis.crypto.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
