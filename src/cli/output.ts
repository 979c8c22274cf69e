/** What the CLI prints: aligned `key  value` lines for people, or the API's JSON with `--json`. */
import { ExactNumber, stringifyExact } from '../views/exact-json.js';

export type Sink = { write(text: string): unknown; isTTY?: boolean };
export type Output = { json: boolean; stdout: Sink; stderr: Sink };

/**
 * The record as the API sends it: each SDK helper `<field>_text` becomes the exact number `<field>`
 * again (so `--json` never prints a rounded amount).
 */
export function apiJson(record: object): string {
  return stringifyExact(apiRecord(record));
}

/** `record` with each `<field>_text` folded back into an exact `<field>`, for records inside a list (a history page). */
export function apiRecord(record: object): Record<string, unknown> {
  const fields = record as Record<string, unknown>;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key.endsWith('_text') && key.slice(0, -'_text'.length) in fields) continue;
    const exact = fields[`${key}_text`];
    result[key] = typeof exact === 'string' ? new ExactNumber(exact) : value;
  }
  return result;
}

export function lines(rows: readonly (readonly [string, string])[]): string {
  const width = Math.max(...rows.map(([key]) => key.length));
  return rows.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join('\n');
}

export function when(timestamp_s: number): string {
  return `${timestamp_s} (${new Date(timestamp_s * 1000).toISOString().replace('.000Z', 'Z')})`;
}

/** Prints `record` as JSON with `--json`, else the human rendering. */
export function print(out: Output, record: object, human: () => string): void {
  out.stdout.write(`${out.json ? apiJson(record) : human()}\n`);
}
