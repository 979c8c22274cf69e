/**
 * Price candles (open, high, low, close, USD volume) per 1-minute, 1-hour and 1-day bucket, kept as
 * blocks are sealed: each block folds into the three buckets its timestamp falls in, so keeping them
 * and reading them never depends on the length of the history. Pure; the sealer and the audit replay
 * both fold with `foldBlockIntoCandle`.
 */
export const CANDLE_INTERVALS = ['1m', '1h', '1d'] as const;
export type CandleInterval = (typeof CANDLE_INTERVALS)[number];

export const CANDLE_INTERVAL_S: Record<CandleInterval, number> = { '1m': 60, '1h': 3600, '1d': 86_400 };
export const CANDLE_LIMIT_MAX = 1000;
export const CANDLE_LIMIT_DEFAULT = 100;

export type Candle = {
  interval: CandleInterval;
  /** Unix seconds, a multiple of the interval. */
  start: number;
  open_units: bigint;
  high_units: bigint;
  low_units: bigint;
  close_units: bigint;
  volume_usd_micros: bigint;
};

export function isCandleInterval(value: unknown): value is CandleInterval {
  return typeof value === 'string' && (CANDLE_INTERVALS as readonly string[]).includes(value);
}

export function candleStart(interval: CandleInterval, timestamp_s: number): number {
  const size = CANDLE_INTERVAL_S[interval];
  return Math.floor(timestamp_s / size) * size;
}

/** What one sealed block adds to the candles: the price before and after it, and its swaps' USD volume. */
export type BlockPriceMove = { timestamp: number; price_before_units: bigint; price_after_units: bigint; volume_usd_micros: bigint };

/** The candle of `interval` after `move`; `existing` is the stored candle of the same bucket, if any. */
export function foldBlockIntoCandle(existing: Candle | null, interval: CandleInterval, move: BlockPriceMove): Candle {
  const start = candleStart(interval, move.timestamp);
  const base = existing !== null && existing.start === start
    ? existing
    : { interval, start, open_units: move.price_before_units, high_units: move.price_before_units, low_units: move.price_before_units, close_units: move.price_before_units, volume_usd_micros: 0n };
  return {
    interval,
    start,
    open_units: base.open_units,
    high_units: maxOf(base.high_units, move.price_after_units),
    low_units: minOf(base.low_units, move.price_after_units),
    close_units: move.price_after_units,
    volume_usd_micros: base.volume_usd_micros + move.volume_usd_micros,
  };
}

/** The three candles a block touches, folded from what is stored for their buckets. */
export function foldBlock(stored: readonly Candle[], move: BlockPriceMove): Candle[] {
  return CANDLE_INTERVALS.map((interval) => {
    const start = candleStart(interval, move.timestamp);
    const existing = stored.find((candle) => candle.interval === interval && candle.start === start) ?? null;
    return foldBlockIntoCandle(existing, interval, move);
  });
}

export function candleKeys(timestamp: number): Array<{ interval: CandleInterval; start: number }> {
  return CANDLE_INTERVALS.map((interval) => ({ interval, start: candleStart(interval, timestamp) }));
}

function maxOf(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function minOf(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
