/**
 * `tabula watch`: follows the event log (`GET /api/events`) through the SDK, which reconnects and
 * resumes by itself, printing one line per event (or the event object as one JSON line with `--json`)
 * until `--limit` events, Ctrl-C or SIGTERM (exit 0). `--verify` checks each event against the chain.
 */
import { VerificationError, type EventType, type TabulaEvent } from '@tabula/client';
import { UsageError } from './cli-config.js';
import type { Context } from './commands.js';
import { apiJson, apiRecord } from './output.js';
import { EXIT_VERIFICATION_FAILED } from './verify-command.js';

const EVENT_TYPES: readonly EventType[] = ['transaction.accepted', 'transaction.confirmed', 'transaction.failed', 'block.sealed'];
const LIMIT_MAX = 1_000_000_000;

type WatchOptions = { types?: EventType[]; account?: string; after?: number; limit: number | null; verify: boolean };

function optionsOf(context: Context): WatchOptions {
  const { values, positionals } = context;
  if (positionals.length > 0) throw new UsageError(`watch takes no positional arguments (got "${positionals.join(' ')}")`);
  const options: WatchOptions = { limit: null, verify: values.verify === true };
  if (typeof values.types === 'string') {
    const types = values.types.split(',').map((type) => type.trim()).filter((type) => type !== '');
    if (types.length === 0 || types.some((type) => !EVENT_TYPES.includes(type as EventType))) {
      throw new UsageError(`--types must be a comma-separated list of ${EVENT_TYPES.join(', ')}`);
    }
    options.types = types as EventType[];
  }
  if (typeof values.account === 'string') {
    if (values.account.trim() === '') throw new UsageError('--account must be a user id');
    options.account = values.account;
  }
  if (typeof values.after === 'string') options.after = count(values.after, '--after', 0);
  if (typeof values.limit === 'string') options.limit = count(values.limit, '--limit', 1);
  return options;
}

function count(text: string, name: string, min: number): number {
  const value = /^[0-9]{1,15}$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= (name === '--limit' ? LIMIT_MAX : Number.MAX_SAFE_INTEGER))) throw new UsageError(`${name} must be an integer ≥ ${min}`);
  return value;
}

/** One line for people: sequence, type, then the transaction (hash, amount, accounts, block) or the block. */
export function eventLine(event: TabulaEvent): string {
  const head = `${String(event.sequence).padStart(6)}  ${event.type.padEnd(21)}`;
  if (event.type === 'block.sealed') {
    const block = event.data;
    return `${head}  block ${block.number}  ${block.hash}  ${block.transactions_count} transaction${block.transactions_count === 1 ? '' : 's'}`;
  }
  const tx = event.data;
  const where = tx.block_number === null ? '' : `  block ${tx.block_number}`;
  const error = tx.error === null ? '' : `  (${tx.error})`;
  return `${head}  ${tx.tx_hash}  ${tx.amount_text} ${tx.token}  ${tx.from} → ${tx.to}${where}${error}`;
}

/** Prints events until `limit`, or until `stop` aborts (returns 0); a verification failure returns 3. */
export async function watchCommand(context: Context, stop: AbortSignal): Promise<number> {
  const options = optionsOf(context);
  const { out } = context;
  let printed = 0;
  try {
    const events = context.client.events({
      ...(options.types === undefined ? {} : { types: options.types }),
      ...(options.account === undefined ? {} : { account: options.account }),
      ...(options.after === undefined ? {} : { after: options.after }),
      verify: options.verify,
      signal: stop,
    });
    for await (const event of events) {
      out.stdout.write(`${out.json ? apiJson({ ...event, data: apiRecord(event.data) }) : eventLine(event)}\n`);
      printed += 1;
      if (options.limit !== null && printed >= options.limit) break;
    }
    return 0;
  } catch (error) {
    if (stop.aborted) return 0;
    if (!(error instanceof VerificationError)) throw error;
    out.stderr.write(`verification FAILED${error.block_number === null ? '' : ` at block ${error.block_number}`}: ${error.message}\n`);
    return EXIT_VERIFICATION_FAILED;
  }
}
