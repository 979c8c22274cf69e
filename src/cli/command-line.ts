/**
 * The CLI's argument parsing: Node's `parseArgs`, strict, and refusing an option given twice. Left to
 * itself `parseArgs` keeps the last of two (`--amount 1 … --amount 2` submitted 2 without a word),
 * which a command that moves money must not guess at: it is bad usage (exit 2).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { isHash } from '../domain/shared/hex.js';
import { UsageError } from './cli-config.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** A transaction hash given on the command line (any case, as the SDK takes it), checked before anything is sent. */
export function transactionHashArgument(value: string): string {
  if (!isHash(value.toLowerCase())) throw new UsageError(`not a transaction hash (0x + 64 hex digits): ${value}`);
  return value;
}

export function parseCommandLine<T extends Options>(args: string[], options: T, allow_positionals = true) {
  const parsed = parseArgs({ args, options, allowPositionals: allow_positionals, strict: true, tokens: true });
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || options[token.name]?.multiple === true) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once`);
    seen.add(token.name);
  }
  return { values: parsed.values, positionals: parsed.positionals };
}
