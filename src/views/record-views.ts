/**
 * Domain records → the API's JSON views; amounts become exact decimal numbers here and nowhere else.
 * The HTTP answers and the event payloads (src/events) both write these, so a stream and a GET say the same.
 */
import { formatUnits } from '../domain/shared/amount.js';
import { PRICE_DECIMALS, formatUsdMicros, type TokenRegistry } from '../domain/shared/tokens.js';
import type { Block, BlockHeader } from '../domain/block.js';
import type { Transaction } from '../domain/transaction.js';
import type { Candle, CandleInterval } from '../domain/market/candles.js';
import type { Balances, MarketState, ProvenBalances, Quote, Stats } from '../service/ledger-service.js';
import { ExactNumber } from './exact-json.js';
import { POOL_ACCOUNT } from '../domain/system-accounts.js';

export function transactionView(tx: Transaction, tokens: TokenRegistry) {
  return {
    tx_hash: tx.tx_hash,
    from: tx.from,
    to: tx.to,
    amount: new ExactNumber(formatUnits(tx.amount_units, tokens.bySymbol(tx.token).decimals)),
    token: tx.token,
    type: tx.type,
    metadata: tx.metadata,
    status: tx.status,
    timestamp: tx.timestamp,
    block_number: tx.block_number,
    block_hash: tx.block_hash,
    position: tx.position,
    error: tx.error,
    nonce: tx.nonce,
    min_receive: tx.min_receive_units === null || tx.token_out === null ? null : new ExactNumber(formatUnits(tx.min_receive_units, tokens.bySymbol(tx.token_out).decimals)),
    amount_out: tx.amount_out_units === null || tx.token_out === null ? null : new ExactNumber(formatUnits(tx.amount_out_units, tokens.bySymbol(tx.token_out).decimals)),
    token_out: tx.token_out,
  };
}

/** A block header as the blocks list shows it (no transaction list). */
export function blockHeaderView(block: BlockHeader) {
  return {
    number: block.number,
    hash: block.hash,
    parent_hash: block.parent_hash,
    timestamp: block.timestamp,
    transactions_count: block.transactions_count,
    transactions_root: block.transactions_root,
    native_price: block.native_price ?? null,
  };
}

/** A block as `GET /blocks/{number}` shows it: its header and its transaction hashes, in block order. */
export function blockView(block: Block) {
  return { ...blockHeaderView(block), transactions: block.transactions };
}

export function balanceView(balances: Balances, tokens: TokenRegistry) {
  return {
    user_id: balances.user_id,
    native: new ExactNumber(formatUnits(balances.native_units, tokens.native.decimals)),
    usdg: new ExactNumber(formatUnits(balances.usdg_units, tokens.usdg.decimals)),
    total_usd: new ExactNumber(formatUsdMicros(balances.total_usd_micros)),
  };
}

/** The balances as of the proven block, with their proof (hashes and base units as text: exact as they are). */
export function provenBalanceView(proven: ProvenBalances, tokens: TokenRegistry) {
  return { ...balanceView(proven.balances, tokens), proof: proven.proof };
}

export function statsView(stats: Stats) {
  return {
    total_transactions: stats.total_transactions,
    total_users: stats.total_users,
    native_price: new ExactNumber(formatUnits(stats.native_price_units, PRICE_DECIMALS)),
    trading_volume_24h: new ExactNumber(formatUsdMicros(stats.trading_volume_24h_micros)),
    active_users_24h: stats.active_users_24h,
    latest_block_number: stats.latest_block_number,
  };
}

function priceNumber(units: bigint): ExactNumber {
  return new ExactNumber(formatUnits(units, PRICE_DECIMALS));
}

export function quoteView(quote: Quote, tokens: TokenRegistry) {
  return {
    amount_out: new ExactNumber(formatUnits(quote.amount_out_units, tokens.bySymbol(quote.token_out).decimals)),
    token_out: quote.token_out,
    price: priceNumber(quote.price_units),
    price_after: priceNumber(quote.price_after_units),
    fee: new ExactNumber(formatUnits(quote.fee_units, tokens.bySymbol(quote.token).decimals)),
  };
}

export function marketView(market: MarketState, tokens: TokenRegistry) {
  return {
    pool: POOL_ACCOUNT,
    fee_bps: market.fee_bps,
    native_price: priceNumber(market.price_units),
    reserves: {
      native: new ExactNumber(formatUnits(market.reserves.native_units, tokens.native.decimals)),
      usdg: new ExactNumber(formatUnits(market.reserves.usdg_units, tokens.usdg.decimals)),
    },
    block_number: market.block_number,
  };
}

export function priceHistoryView(interval: CandleInterval, candles: readonly Candle[]) {
  return {
    interval,
    candles: candles.map((candle) => ({
      start: candle.start,
      open: priceNumber(candle.open_units),
      high: priceNumber(candle.high_units),
      low: priceNumber(candle.low_units),
      close: priceNumber(candle.close_units),
      volume_usd: new ExactNumber(formatUsdMicros(candle.volume_usd_micros)),
    })),
  };
}
