/**
 * Exact amounts. Tabula writes amounts as JSON numbers whose text is the exact decimal of the base
 * units (`92233720368.54775807`); `JSON.parse` turns that into the nearest double, which differs once
 * an amount has more than about 15 significant digits. The SDK therefore also reads the source text
 * of the amount members of each record and hands it out beside the number as `<field>_text`.
 *
 * `topLevelNumberTexts` scans only the members of the top-level object (nested objects such as
 * `metadata` are skipped whole, strings are skipped with their escapes), so a metadata key called
 * `amount` is never mistaken for the record's; a list of records (an account's history) is read
 * record by record through `topLevelArrayItemTexts`. Both expect text that `JSON.parse` has accepted.
 */
const NUMBER_TEXT = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const WHITESPACE = /[ \t\n\r]*/y;
const VALUE_DELIMITERS = new Set([',', '}', ']', ' ', '\t', '\n', '\r']);

function skipWhitespace(text: string, index: number): number {
  WHITESPACE.lastIndex = index;
  WHITESPACE.exec(text);
  return WHITESPACE.lastIndex;
}

/** `index` is at an opening quote; returns the index just past the closing one. */
function stringEnd(text: string, index: number): number {
  let cursor = index + 1;
  while (cursor < text.length) {
    const char = text.charCodeAt(cursor);
    if (char === 0x5c) cursor += 2;
    else if (char === 0x22) return cursor + 1;
    else cursor += 1;
  }
  throw new SyntaxError('unterminated string');
}

/** `index` is at the first character of a value; returns the index just past it. */
function valueEnd(text: string, index: number): number {
  const first = text[index];
  if (first === '"') return stringEnd(text, index);
  if (first === '{' || first === '[') return containerEnd(text, index);
  let cursor = index;
  while (cursor < text.length && !VALUE_DELIMITERS.has(text[cursor] as string)) cursor += 1;
  return cursor;
}

function containerEnd(text: string, index: number): number {
  let depth = 0;
  let cursor = index;
  while (cursor < text.length) {
    const char = text[cursor];
    if (char === '"') {
      cursor = stringEnd(text, cursor);
      continue;
    }
    if (char === '{' || char === '[') depth += 1;
    if (char === '}' || char === ']') {
      depth -= 1;
      if (depth === 0) return cursor + 1;
    }
    cursor += 1;
  }
  throw new SyntaxError('unterminated object or array');
}

/** The source text of each top-level member named in `keys` whose value is a number. */
export function topLevelNumberTexts(text: string, keys: ReadonlySet<string>): Map<string, string> {
  const found = new Map<string, string>();
  let cursor = skipWhitespace(text, 0);
  if (text[cursor] !== '{') return found;
  cursor = skipWhitespace(text, cursor + 1);
  while (text[cursor] === '"') {
    const key_end = stringEnd(text, cursor);
    const key = JSON.parse(text.slice(cursor, key_end)) as string;
    const value_start = skipWhitespace(text, skipWhitespace(text, key_end) + 1);
    const value_end = valueEnd(text, value_start);
    const value = text.slice(value_start, value_end);
    if (keys.has(key) && NUMBER_TEXT.test(value)) found.set(key, value);
    cursor = skipWhitespace(text, value_end);
    if (text[cursor] !== ',') break;
    cursor = skipWhitespace(text, cursor + 1);
  }
  return found;
}

/** The source text of each element of the top-level member `key` when it is an array (none otherwise). */
export function topLevelArrayItemTexts(text: string, key: string): string[] {
  let cursor = skipWhitespace(text, 0);
  if (text[cursor] !== '{') return [];
  cursor = skipWhitespace(text, cursor + 1);
  while (text[cursor] === '"') {
    const key_end = stringEnd(text, cursor);
    const name = JSON.parse(text.slice(cursor, key_end)) as string;
    const value_start = skipWhitespace(text, skipWhitespace(text, key_end) + 1);
    if (name === key && text[value_start] === '[') return arrayItemTexts(text, value_start);
    cursor = skipWhitespace(text, valueEnd(text, value_start));
    if (text[cursor] !== ',') break;
    cursor = skipWhitespace(text, cursor + 1);
  }
  return [];
}

/** The source text of the top-level member `key` (any JSON value), or undefined when there is none. */
export function topLevelMemberText(text: string, key: string): string | undefined {
  let cursor = skipWhitespace(text, 0);
  if (text[cursor] !== '{') return undefined;
  cursor = skipWhitespace(text, cursor + 1);
  while (text[cursor] === '"') {
    const key_end = stringEnd(text, cursor);
    const name = JSON.parse(text.slice(cursor, key_end)) as string;
    const value_start = skipWhitespace(text, skipWhitespace(text, key_end) + 1);
    const value_end = valueEnd(text, value_start);
    if (name === key) return text.slice(value_start, value_end);
    cursor = skipWhitespace(text, value_end);
    if (text[cursor] !== ',') break;
    cursor = skipWhitespace(text, cursor + 1);
  }
  return undefined;
}

/** `index` is at an opening bracket; returns the source text of each element. */
function arrayItemTexts(text: string, index: number): string[] {
  const items: string[] = [];
  let cursor = skipWhitespace(text, index + 1);
  while (cursor < text.length && text[cursor] !== ']') {
    const item_end = valueEnd(text, cursor);
    items.push(text.slice(cursor, item_end));
    cursor = skipWhitespace(text, item_end);
    if (text[cursor] === ',') cursor = skipWhitespace(text, cursor + 1);
  }
  return items;
}

/**
 * Parses a JSON object and adds `<key>_text` (the exact decimal text) beside each named number
 * member. A number in exponent form is written out as a plain decimal.
 */
export function parseWithExactNumbers(text: string, keys: readonly string[]): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SyntaxError('not a JSON object');
  const record = value as Record<string, unknown>;
  const texts = topLevelNumberTexts(text, new Set(keys));
  for (const key of keys) {
    const exact = texts.get(key);
    if (exact !== undefined) record[`${key}_text`] = plainDecimal(exact);
  }
  return record;
}

/** `1.5e3` → `1500`, `12.50` stays `12.50`; plain decimals are returned as they are. */
export function plainDecimal(number_text: string): string {
  const match = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(number_text);
  if (match === null) throw new SyntaxError(`not a JSON number: ${number_text}`);
  const [, sign = '', whole = '', fraction = '', exponent_text] = match;
  if (exponent_text === undefined) return number_text;
  const exponent = Number(exponent_text);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 1000) throw new RangeError(`exponent out of range: ${number_text}`);
  const digits = whole + fraction;
  const point = whole.length + exponent;
  const padded = point <= 0 ? '0'.repeat(1 - point) + digits : point > digits.length ? digits + '0'.repeat(point - digits.length) : digits;
  const split = Math.max(point, 1);
  const integer_part = padded.slice(0, split).replace(/^0+(?=[0-9])/, '');
  const fraction_part = padded.slice(split);
  return `${sign}${integer_part}${fraction_part === '' ? '' : `.${fraction_part}`}`;
}
