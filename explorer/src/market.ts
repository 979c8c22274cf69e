/**
 * The market's arithmetic as the explorer shows it: a swap's minimum from a quote and a slippage
 * tolerance, a swap's effective price, the 24-hour change, and the price chart's scaling. Amounts and
 * prices stay exact (decimal text and bigint base units); only the chart's pixel positions are floats.
 * Pure, so it is tested without a browser.
 */

/** Decimals of the two tokens: 6 for USDG, 8 for the native token (whatever its symbol). */
export const USDG_SYMBOL = 'USDG';
const USDG_DECIMALS = 6;
const NATIVE_DECIMALS = 8;
/** Prices (USDG per native token) are kept to 12 decimals by the service, rounded down. */
export const PRICE_DECIMALS = 12;
/** The slippage tolerance the swap form starts with, in percent. */
export const SLIPPAGE_DEFAULT_PCT = '0.5';
const SLIPPAGE_DECIMALS_MAX = 2;
/** A slippage tolerance of this many percent or more is refused: it would accept almost nothing. */
const SLIPPAGE_PCT_MAX = 50n;

export function decimalsOf(token: string): number {
  return token.toUpperCase() === USDG_SYMBOL ? USDG_DECIMALS : NATIVE_DECIMALS;
}

/** `12.5` at 8 decimals → 1250000000n; throws a RangeError for text that is not a non-negative decimal of at most `decimals` places. */
export function toUnits(text: string, decimals: number): bigint {
  const match = /^([0-9]*)(?:\.([0-9]*))?$/.exec(text.trim());
  if (match === null || text.trim() === '' || text.trim() === '.') throw new RangeError(`${text} is not a decimal number`);
  const [, whole = '', fraction = ''] = match;
  const trimmed = fraction.replace(/0+$/, '');
  if (trimmed.length > decimals) throw new RangeError(`${text} has more than ${decimals} decimals`);
  return BigInt(`${whole === '' ? '0' : whole}${trimmed.padEnd(decimals, '0')}`);
}

/** 1250000000n at 8 decimals → `12.5` (no trailing zeros; `0` for zero). */
export function fromUnits(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}

/** A slippage tolerance typed in percent (`0.5`), as hundredths of a percent (50n), or why it is refused. */
export function parseSlippage(text: string): { hundredths: bigint } | { problem: string } {
  const value = text.trim();
  if (!/^[0-9]*\.?[0-9]*$/.test(value) || value === '' || value === '.') return { problem: 'Enter a percentage, like 0.5.' };
  let hundredths: bigint;
  try {
    hundredths = toUnits(value, SLIPPAGE_DECIMALS_MAX);
  } catch {
    return { problem: `Use at most ${SLIPPAGE_DECIMALS_MAX} decimals, like 0.25.` };
  }
  if (hundredths >= SLIPPAGE_PCT_MAX * 100n) return { problem: `Keep it below ${SLIPPAGE_PCT_MAX} %.` };
  return { hundredths };
}

/** Why the typed amount cannot be quoted or sent, or null. */
export function checkSwapAmount(amount: string, token: string): string | null {
  const text = amount.trim();
  if (text === '') return 'Enter an amount.';
  if (!/^[0-9]*\.?[0-9]+$|^[0-9]+\.$/.test(text)) return 'Enter a positive decimal number, like 12.5.';
  let units: bigint;
  try {
    units = toUnits(text, decimalsOf(token));
  } catch {
    return `${token} has at most ${decimalsOf(token)} decimals.`;
  }
  return units > 0n ? null : 'Enter an amount above zero.';
}

export type MinReceive = { units: bigint; text: string };

/**
 * The least a swap should accept: floor(amount_out × (1 − slippage)) in base units of the token
 * received, from the quote's exact `amount_out` text and the tolerance in hundredths of a percent.
 */
export function minReceive(amount_out_text: string, token_out: string, slippage_hundredths: bigint): MinReceive {
  if (slippage_hundredths < 0n || slippage_hundredths >= 10_000n) throw new RangeError('slippage must be from 0 up to 100 %');
  const decimals = decimalsOf(token_out);
  const out = toUnits(amount_out_text, decimals);
  const units = (out * (10_000n - slippage_hundredths)) / 10_000n;
  return { units, text: fromUnits(units, decimals) };
}

/**
 * What a swap paid per native token, in USDG, to 12 decimals rounded down: from the amount paid and
 * the amount received, whichever side is the native token. Null when nothing was received.
 */
export function effectivePrice(paid: { amount_text: string; token: string }, received: { amount_text: string; token: string }): string | null {
  const paid_is_usdg = paid.token.toUpperCase() === USDG_SYMBOL;
  const usdg = paid_is_usdg ? paid : received;
  const native = paid_is_usdg ? received : paid;
  if (usdg.token.toUpperCase() !== USDG_SYMBOL || native.token.toUpperCase() === USDG_SYMBOL) return null;
  const usdg_units = toUnits(usdg.amount_text, USDG_DECIMALS);
  const native_units = toUnits(native.amount_text, NATIVE_DECIMALS);
  if (native_units === 0n) return null;
  // (usdg_units / 10^6) / (native_units / 10^8), scaled by 10^12.
  const scaled = (usdg_units * 10n ** BigInt(NATIVE_DECIMALS - USDG_DECIMALS + PRICE_DECIMALS)) / native_units;
  return fromUnits(scaled, PRICE_DECIMALS);
}

/** A swap as people read it: what `from` paid, what `to` received (once confirmed), the price it got, and the least it accepted. */
export type SwapSummary = {
  paid: { amount_text: string; token: string };
  /** `received` once confirmed; `pending` until its block; `failed` when it moved nothing. */
  outcome: 'received' | 'pending' | 'failed';
  received: { amount_text: string; token: string } | null;
  /** USDG per native token, from what was paid and received (null until received). */
  price: string | null;
  /** In `token_out`; null: any amount was accepted. */
  min_receive: { amount_text: string; token: string } | null;
  token_out: string | null;
};

/** What a swap record says, in the terms above; the exact texts (`*_text`) win over the doubles. */
export function swapSummary(tx: {
  amount_text: string; token: string; status: string;
  amount_out?: number | null; amount_out_text?: string; token_out?: string | null; min_receive?: number | null; min_receive_text?: string;
}): SwapSummary {
  const token_out = tx.token_out ?? null;
  const paid = { amount_text: tx.amount_text, token: tx.token };
  const out_text = tx.amount_out_text ?? (tx.amount_out == null ? null : String(tx.amount_out));
  const received = out_text === null || token_out === null ? null : { amount_text: out_text, token: token_out };
  const min_text = tx.min_receive_text ?? (tx.min_receive == null ? null : String(tx.min_receive));
  const outcome = tx.status === 'failed' ? 'failed' : received !== null && tx.status === 'confirmed' ? 'received' : 'pending';
  return {
    paid,
    outcome,
    received: outcome === 'received' ? received : null,
    price: outcome === 'received' && received !== null ? effectivePrice(paid, received) : null,
    min_receive: min_text === null || token_out === null ? null : { amount_text: min_text, token: token_out },
    token_out,
  };
}

/** The change from `from` to `to` in percent, to two decimals rounded toward zero, signed: `+2.5`, `-0.33`, `0`. */
export function percentChange(from_text: string, to_text: string): string | null {
  const from = toUnits(from_text, PRICE_DECIMALS);
  const to = toUnits(to_text, PRICE_DECIMALS);
  if (from === 0n) return null;
  const hundredths = ((to - from) * 10_000n) / from;
  const text = fromUnits(hundredths, 2);
  return hundredths > 0n ? `+${text}` : text;
}

/** A candle of `GET /api/price/history`, prices and volume as the exact decimal text the service sent. */
export type Candle = { start: number; open: string; high: string; low: string; close: string; volume_usd: string };

export const CANDLE_INTERVALS = ['1m', '1h', '1d'] as const;
export type CandleInterval = (typeof CANDLE_INTERVALS)[number];
export const CANDLE_INTERVAL_S: Record<CandleInterval, number> = { '1m': 60, '1h': 3600, '1d': 86_400 };
const DAY_S = 86_400;

export type DayChange = { from: string; to: string; change_pct: string | null };

/**
 * The price now and 24 hours ago, from hourly (or finer) candles, oldest first: the close of the
 * last candle that ended by then, else (all of them are newer) the open of the first. Null without candles.
 */
export function dayChange(candles: readonly Candle[], interval: CandleInterval, now_s: number): DayChange | null {
  const last = candles[candles.length - 1];
  const first = candles[0];
  if (last === undefined || first === undefined) return null;
  const cutoff = now_s - DAY_S;
  const before = candles.filter((candle) => candle.start + CANDLE_INTERVAL_S[interval] <= cutoff).pop();
  const from = before === undefined ? first.open : before.close;
  return { from, to: last.close, change_pct: percentChange(from, last.close) };
}

/** The sum of the candles' USD volume, exact. */
export function totalVolume(candles: readonly Candle[]): string {
  return fromUnits(candles.reduce((sum, candle) => sum + toUnits(candle.volume_usd, USDG_DECIMALS), 0n), USDG_DECIMALS);
}

export type ChartBox = { width: number; height: number; left: number; right: number; top: number; bottom: number };

export type ChartBar = {
  start: number;
  /** Centre of the candle, and its body's width. */
  x: number;
  width: number;
  /** Wick from high to low. */
  high_y: number;
  low_y: number;
  /** Body from open to close (top ≤ bottom). */
  body_top: number;
  body_bottom: number;
  rising: boolean;
};

export type ChartGeometry = {
  bars: ChartBar[];
  /** The closes as an SVG path. */
  close_path: string;
  /** The lowest low and highest high, as sent. */
  low: string;
  high: string;
  /** Where a price lands on the y axis. */
  y(price: string): number;
};

/**
 * Where each candle goes in `box`: one slot each, left to right (oldest first); prices scaled
 * between the lowest low and the highest high, padded 5 % so a flat line sits in the middle.
 */
export function chartGeometry(candles: readonly Candle[], box: ChartBox): ChartGeometry {
  const lows = candles.map((candle) => candle.low);
  const highs = candles.map((candle) => candle.high);
  const low = extreme(lows, (a, b) => a < b) ?? '0';
  const high = extreme(highs, (a, b) => a > b) ?? '0';
  const low_n = Number(low);
  const high_n = Number(high);
  const spread = high_n - low_n;
  const pad = spread === 0 ? Math.max(Math.abs(high_n) * 0.05, 1e-12) : spread * 0.05;
  const min = low_n - pad;
  const max = high_n + pad;
  const plot_height = box.height - box.top - box.bottom;
  const plot_width = box.width - box.left - box.right;
  const y = (price: string) => round(box.top + ((max - Number(price)) / (max - min)) * plot_height);
  const slot = candles.length === 0 ? plot_width : plot_width / candles.length;
  const bars = candles.map((candle, index): ChartBar => {
    const open_y = y(candle.open);
    const close_y = y(candle.close);
    return {
      start: candle.start,
      x: round(box.left + slot * (index + 0.5)),
      width: round(Math.max(1, Math.min(slot * 0.7, 24))),
      high_y: y(candle.high),
      low_y: y(candle.low),
      body_top: Math.min(open_y, close_y),
      body_bottom: Math.max(open_y, close_y),
      rising: compareDecimals(candle.close, candle.open) >= 0,
    };
  });
  const close_path = bars.map((bar, index) => `${index === 0 ? 'M' : 'L'}${bar.x} ${y(candles[index]?.close ?? '0')}`).join(' ');
  return { bars, close_path, low, high, y };
}

/** -1, 0 or 1 as the exact decimals `a` and `b` compare. */
export function compareDecimals(a: string, b: string): number {
  const a_units = toUnits(a, PRICE_DECIMALS);
  const b_units = toUnits(b, PRICE_DECIMALS);
  return a_units < b_units ? -1 : a_units > b_units ? 1 : 0;
}

function extreme(values: readonly string[], better: (a: bigint, b: bigint) => boolean): string | null {
  let best: string | null = null;
  for (const value of values) if (best === null || better(toUnits(value, PRICE_DECIMALS), toUnits(best, PRICE_DECIMALS))) best = value;
  return best;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
