/**
 * Request bodies are JSON whose numbers are never rounded. `JSON.parse` turns
 * `"amount": 90000000000.00000762` into 90000000000, and no check of the parsed value can see it.
 * So a body that may hold such a number is read a second time, losslessly, keeping each number's text:
 * an `amount` is then taken as the decimal text it was written with (the amount parser reads decimal
 * strings exactly), and any other number a double cannot hold (in `metadata`, say) is refused with
 * 400 `number_not_exact`, asking for a string. Only a number with 16 or more significant digits can be
 * rounded by a double, or one whose exponent has three digits (`1e-400` reads as 0), so bodies with
 * neither take the fast path alone.
 */
import { parse as parseLossless } from 'lossless-json';
import { HttpProblem } from './problem.js';

/** A run of 16 digits (a decimal point may stand among them), or a three-digit exponent. */
const MAY_BE_ROUNDED = /[0-9](?:\.?[0-9]){15}|[0-9][eE][+-]?[0-9]{3}/;
const NUMBER_TEXT = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
/** The fields whose numbers are decimal amounts, kept as their exact text when a double cannot hold them. */
const DECIMAL_FIELDS: ReadonlySet<string> = new Set(['amount']);
const PATH_SHOWN_MAX = 200;
/**
 * Nesting read exactly at the most. A transaction nests a few levels above its metadata, whose own
 * limit is 32 levels; deeper bodies are refused whole rather than read by a recursive parser.
 */
export const EXACT_BODY_DEPTH_MAX = 64;

/** A number of the body as written, and whether a double holds it exactly. */
class NumberText {
  constructor(readonly text: string, readonly exact: boolean) {}
}

/** Whether `text` may hold a number that `JSON.parse` would round (a cheap test on the raw text). */
export function mayHoldInexactNumber(text: string): boolean {
  return MAY_BE_ROUNDED.test(text);
}

/**
 * Whether the double nearest to the JSON number `text` is the number `text` says, digit for digit (as
 * the shortest text that reads back as that double, the one JSON.stringify writes). An overflow to
 * infinity counts as exact here: the checks after parsing refuse it already.
 */
export function isExactDouble(text: string): boolean {
  const value = Number(text);
  if (!Number.isFinite(value)) return true;
  return decimalKey(text) === decimalKey(String(value));
}

/** The decimal value of a number's text, written one way: sign, digits without surrounding zeros, exponent. */
function decimalKey(text: string): string {
  const match = NUMBER_TEXT.exec(text);
  if (match === null) return text;
  const fraction = match[3] ?? '';
  let digits = `${match[2]}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  let exponent = Number(match[4] ?? '0') - fraction.length;
  const trailing = /0+$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  return `${match[1]}${digits}e${exponent}`;
}

/**
 * Applies the exact reading of `text` to `parsed` (what the secure JSON parser made of the same text):
 * inexact amounts become their decimal text, any other inexact number throws `number_not_exact`.
 */
export function keepNumbersExact(text: string, parsed: unknown): unknown {
  if (depthOf(parsed) > EXACT_BODY_DEPTH_MAX) {
    throw new HttpProblem('validation_failed', `the body nests deeper than ${EXACT_BODY_DEPTH_MAX} levels`, {}, [
      { field: 'body', message: `nests deeper than ${EXACT_BODY_DEPTH_MAX} levels` },
    ]);
  }
  return patch(parsed, readExactly(text), [], false);
}

/** The lossless reading of `text`, whose numbers are `NumberText`s. */
function readExactly(text: string): unknown {
  try {
    return parseLossless(text, null, (number_text) => new NumberText(number_text, isExactDouble(number_text)));
  } catch (error) {
    // The lossless reader refuses a key given twice with different values, which JSON.parse reads as
    // the last one: which of the two the client meant cannot be told, so say so rather than "not JSON".
    const duplicate = error instanceof SyntaxError ? /^Duplicate key '(.*)' encountered/s.exec(error.message) : null;
    if (duplicate === null) throw error;
    throw new HttpProblem('malformed_json', `the body gives the key "${(duplicate[1] ?? '').slice(0, PATH_SHOWN_MAX)}" twice in one object, with different values: send it once`);
  }
}

/** Walks what was written beside what was parsed: amounts become their text, other numbers must be exact. */
function patch(parsed: unknown, exact: unknown, path: string[], in_decimal_field: boolean): unknown {
  if (exact instanceof NumberText) {
    // Beyond a double's range (1e400): left as parsed (Infinity), for the checks that refuse it.
    if (in_decimal_field) return Number.isFinite(Number(exact.text)) ? exact.text : parsed;
    if (!exact.exact) throw inexact(path, exact.text);
    return parsed;
  }
  if (Array.isArray(exact) && Array.isArray(parsed)) {
    exact.forEach((item, index) => { parsed[index] = patch(parsed[index], item, [...path, String(index)], false); });
    return parsed;
  }
  if (isObject(exact) && isObject(parsed)) {
    for (const [key, item] of Object.entries(exact)) {
      if (!Object.hasOwn(parsed, key)) continue;
      parsed[key] = patch(parsed[key], item, [...path, key], DECIMAL_FIELDS.has(key) && !path.includes('metadata'));
    }
  }
  return parsed;
}

/** How deeply `value` nests (a scalar: 0), found without recursion so that no depth can overflow the stack. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: item, depth } = stack.pop() as { value: unknown; depth: number };
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > EXACT_BODY_DEPTH_MAX) return deepest;
    for (const child of Object.values(item)) stack.push({ value: child, depth: depth + 1 });
  }
  return deepest;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function inexact(path: readonly string[], text: string): HttpProblem {
  const field = path.join('.').slice(0, PATH_SHOWN_MAX) || 'body';
  const shown = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return new HttpProblem('number_not_exact', `${field}: the number ${shown} cannot be held exactly by a JSON number (a double); send it as a string`, {}, [
    { field, message: 'send this number as a string to keep it exact' },
  ]);
}
