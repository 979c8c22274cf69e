/** Exact amounts: decimal text or JSON numbers parsed to bigint base units, formatted back, and rescaled between decimals. */
import { InvalidRequestError } from './errors.js';

/** Largest amount or balance the stores can hold: a signed 64-bit integer of base units. */
export const UNITS_MAX = 9_223_372_036_854_775_807n;

/**
 * Decimal digits a JSON number (a double) carries exactly, whatever they are. A JSON number with more
 * may not be what the client wrote, so such amounts must be sent as decimal strings (no silent rounding).
 */
export const NUMBER_SIGNIFICANT_DIGITS_MAX = 15;
const DECIMAL_TEXT_LENGTH_MAX = 64;
const DECIMAL_PATTERN = /^([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]{1,4}))?$/;

/**
 * Parses a request amount (JSON number or decimal string) into base units of a token with `decimals`
 * fractional digits. Rejects anything that is not an exact, positive amount within the storage range.
 */
export function parseAmount(value: unknown, decimals: number, field = 'amount'): bigint {
  const text = amountText(value, field);
  const match = DECIMAL_PATTERN.exec(text);
  if (match === null) {
    throw new InvalidRequestError('invalid_amount', `${field} must be a positive decimal number`, field);
  }
  const integerDigits = match[1] ?? '';
  const fractionDigits = match[2] ?? '';
  const exponent = Number(match[3] ?? '0');
  const units = scaleToUnits(integerDigits + fractionDigits, exponent - fractionDigits.length, decimals, field);
  if (units <= 0n) {
    throw new InvalidRequestError('amount_not_positive', `${field} must be greater than zero`, field);
  }
  if (units > UNITS_MAX) {
    throw new InvalidRequestError('amount_out_of_range', `${field} exceeds the largest storable amount`, field);
  }
  return units;
}

function amountText(value: unknown, field: string): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new InvalidRequestError('invalid_amount', `${field} must be a finite number`, field);
    }
    if (value <= 0) {
      throw new InvalidRequestError('amount_not_positive', `${field} must be greater than zero`, field);
    }
    const text = String(value);
    if (significantDigits(text) > NUMBER_SIGNIFICANT_DIGITS_MAX) {
      throw new InvalidRequestError(
        'amount_not_exact',
        `${field} has more than ${NUMBER_SIGNIFICANT_DIGITS_MAX} significant digits, which a JSON number cannot carry exactly; send it as a decimal string`,
        field,
      );
    }
    return text;
  }
  if (typeof value === 'string') {
    if (value.length === 0 || value.length > DECIMAL_TEXT_LENGTH_MAX) {
      throw new InvalidRequestError('invalid_amount', `${field} must be a decimal string of 1 to ${DECIMAL_TEXT_LENGTH_MAX} characters`, field);
    }
    // A negative decimal ("-1") is not positive; "--1" or "-abc" is no number at all (invalid_amount, below).
    if (value.startsWith('-') && DECIMAL_PATTERN.test(value.slice(1))) {
      throw new InvalidRequestError('amount_not_positive', `${field} must be greater than zero`, field);
    }
    return value;
  }
  throw new InvalidRequestError('invalid_amount', `${field} must be a number or a decimal string`, field);
}

export function significantDigits(numberText: string): number {
  const mantissa = numberText.split(/[eE]/)[0] ?? '';
  const digits = mantissa.replace('.', '').replace(/^0+/, '');
  return digits.replace(/0+$/, '').length;
}

/** digits × 10^exponent, expressed in base units (× 10^decimals); must be an integer. */
function scaleToUnits(digits: string, exponent: number, decimals: number, field: string): bigint {
  const shift = exponent + decimals;
  const trimmed = digits.replace(/^0+/, '') || '0';
  if (shift >= 0) {
    if (trimmed !== '0' && trimmed.length + shift > 40) {
      throw new InvalidRequestError('amount_out_of_range', `${field} exceeds the largest storable amount`, field);
    }
    return BigInt(trimmed) * 10n ** BigInt(shift);
  }
  const cut = -shift;
  const kept = trimmed.length > cut ? trimmed.slice(0, trimmed.length - cut) : '0';
  const dropped = trimmed.length > cut ? trimmed.slice(trimmed.length - cut) : trimmed;
  if (/[1-9]/.test(dropped)) {
    throw new InvalidRequestError(
      'amount_too_precise',
      `${field} has more fractional digits than the token's ${decimals} decimals`,
      field,
    );
  }
  return BigInt(kept);
}

/** Base units → exact decimal text with no trailing zeros ("1.5", "0.00000001", "42"). */
export function formatUnits(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, '0');
  const integerPart = digits.slice(0, digits.length - decimals);
  const fractionPart = digits.slice(digits.length - decimals).replace(/0+$/, '');
  const text = fractionPart.length > 0 ? `${integerPart}.${fractionPart}` : integerPart;
  return negative ? `-${text}` : text;
}

/** Rounds `units` (with `fromDecimals`) to `toDecimals`, half away from zero. */
export function rescaleUnits(units: bigint, fromDecimals: number, toDecimals: number): bigint {
  if (toDecimals >= fromDecimals) return units * 10n ** BigInt(toDecimals - fromDecimals);
  const divisor = 10n ** BigInt(fromDecimals - toDecimals);
  const half = divisor / 2n;
  return units >= 0n ? (units + half) / divisor : -((-units + half) / divisor);
}
