/**
 * Slippage tolerance → `min_receive`, exactly. A tolerance is a fraction of the quoted amount the
 * swapper accepts to lose to price moves between the quote and the sealing of the swap:
 *
 * - a number is a fraction: `0.005` is 0.5 % (its shortest decimal text is taken, so `0.005` is exactly
 *   5/1000, never the double's binary expansion);
 * - a string ending in `%` is a percentage: `'0.5%'`;
 * - any other string is a fraction as a decimal: `'0.005'`.
 *
 * It must be at least 0 and below 100 % (a tolerance of 100 % would accept receiving nothing), with at
 * most 18 decimal places as a fraction. `min_receive` = floor(amount_out_units × (1 − slippage)) in
 * base units of the token received, computed with bigint only.
 */
import { formatUnits, parseAmount } from '../../../src/domain/shared/amount.js';
import { plainDecimal } from './exact-json.js';
import { tokenDecimals } from './verification.js';

/** A slippage tolerance: a fraction (`0.005`), a fraction as text (`'0.005'`) or a percentage (`'0.5%'`). */
export type Slippage = number | string;

/** The tolerance as the exact fraction `numerator / denominator`, 0 ≤ it < 1. */
export type SlippageFraction = { numerator: bigint; denominator: bigint };

const FRACTION_DIGITS_MAX = 18;
const DECIMAL = /^([0-9]{1,20})(?:\.([0-9]+))?$/;

/** Reads a slippage tolerance; a `RangeError` says what is wrong with a bad one. */
export function parseSlippage(slippage: Slippage): SlippageFraction {
  let text: string;
  let percent = false;
  if (typeof slippage === 'number') {
    if (!Number.isFinite(slippage)) throw new RangeError(`slippage must be a finite number, got ${slippage}`);
    text = plainDecimal(String(slippage));
  } else if (typeof slippage === 'string') {
    text = slippage.trim();
    if (text.endsWith('%')) {
      percent = true;
      text = text.slice(0, -1).trim();
    }
  } else {
    throw new RangeError('slippage must be a number (a fraction, 0.005) or a string (\'0.5%\' or \'0.005\')');
  }
  const shown = typeof slippage === 'number' ? String(slippage) : JSON.stringify(slippage);
  if (text.startsWith('-')) throw new RangeError(`slippage must not be negative, got ${shown}`);
  const match = DECIMAL.exec(text);
  if (match === null) throw new RangeError(`slippage must be a decimal fraction (0.005) or a percentage ('0.5%'), got ${shown}`);
  const fraction_digits = match[2] ?? '';
  const scale = fraction_digits.length + (percent ? 2 : 0);
  if (scale > FRACTION_DIGITS_MAX) throw new RangeError(`slippage has more than ${FRACTION_DIGITS_MAX} decimal places as a fraction: ${shown}`);
  const numerator = BigInt(`${match[1] ?? '0'}${fraction_digits}`);
  const denominator = 10n ** BigInt(scale);
  if (numerator >= denominator) throw new RangeError(`slippage must be below 100 %, got ${shown}`);
  return { numerator, denominator };
}

/** floor(amount_out_units × (1 − slippage)): the least base units to accept. */
export function minReceiveUnits(amount_out_units: bigint, slippage: Slippage | SlippageFraction): bigint {
  if (amount_out_units < 0n) throw new RangeError('amount_out must not be negative');
  const { numerator, denominator } = typeof slippage === 'object' ? slippage : parseSlippage(slippage);
  return (amount_out_units * (denominator - numerator)) / denominator;
}

/**
 * The `min_receive` for a quoted `amount_out` (exact decimal text) of `token_out` under `slippage`, as
 * exact decimal text. Throws a `RangeError` when it rounds to nothing (the quote is too small for the
 * tolerance: a swap needs a positive `min_receive`, or none).
 */
export function minReceiveFor(amount_out_text: string, token_out: string, slippage: Slippage): string {
  const decimals = tokenDecimals(token_out);
  const units = minReceiveUnits(parseAmount(amount_out_text, decimals, 'amount_out'), slippage);
  if (units <= 0n) throw new RangeError(`a slippage of ${String(slippage)} on ${amount_out_text} ${token_out} leaves no minimum to receive: lower it or swap more`);
  return formatUnits(units, decimals);
}
