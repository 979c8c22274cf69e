/**
 * JSON with exact decimal numbers. Amounts are bigint base units inside; on the wire they are JSON
 * numbers whose text is the exact decimal (e.g. 90071992.54740993), which a double would round.
 * `ExactNumber` values serialize through a per-process marker that is then replaced by the bare text.
 */
import { randomBytes } from 'node:crypto';

const MARKER = `~exact-${randomBytes(12).toString('hex')}~`;
const MARKED = new RegExp(`"${MARKER}(-?[0-9]+(?:\\.[0-9]+)?)"`, 'g');

export class ExactNumber {
  readonly text: string;
  constructor(text: string) {
    if (!/^-?[0-9]+(?:\.[0-9]+)?$/.test(text)) throw new TypeError(`not a decimal: ${text}`);
    this.text = text;
  }

  toJSON(): string {
    return MARKER + this.text;
  }
}

export function stringifyExact(value: unknown): string {
  return JSON.stringify(value).replace(MARKED, '$1');
}
