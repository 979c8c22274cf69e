/**
 * The CLI's market commands: `tabula swap` (a quote, a slippage tolerance turned into an exact
 * `min_receive`, the submission) and `tabula price` (the current price, or candles with --history).
 */
import { CANDLE_LIMIT_MAX, parseSlippage, type CandleInterval, type PriceHistory, type Quote, type Stats, type Transaction } from '@tabula/client';
import { UsageError } from './cli-config.js';
import { transactionLines, type Context, type Values } from './commands.js';
import { apiRecord, lines, print } from './output.js';

/** The tolerance `tabula swap` applies without --slippage or --min-receive. */
export const SLIPPAGE_DEFAULT = '0.5%';
const CANDLE_INTERVALS: readonly CandleInterval[] = ['1m', '1h', '1d'];
const WAIT_TIMEOUT_MS = 120_000;
const AMOUNT = /^(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)$/;

function text(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The `sub` of the bearer token, read without checking the signature (the service checks it): the
 * account a swap pays from unless --from says otherwise. Null for no token or one that is not a JWT.
 */
export function tokenSubject(token: string | undefined): string | null {
  const payload = token?.split('.')[1];
  if (payload === undefined) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims.sub === 'string' && claims.sub !== '' ? claims.sub : null;
  } catch {
    return null;
  }
}

/**
 * `--slippage` is a percentage, `0.5%` (a bare `0.5` is refused: it reads as 0.5 % to some and 50 % to
 * others); returned as the SDK's string form.
 */
export function slippageFlag(value: string): string {
  const trimmed = value.trim();
  if (!trimmed.endsWith('%')) throw new UsageError(`--slippage must be a percentage such as 0.5% (got "${value}")`);
  try {
    parseSlippage(trimmed);
  } catch (error) {
    throw new UsageError(`--slippage ${value}: ${(error as Error).message}`);
  }
  return trimmed;
}

function quoteRows(amount: string, token: string, quote: Quote): [string, string][] {
  return [
    ['pay', `${amount} ${token.toUpperCase()}`],
    ['quote', `${quote.amount_out_text} ${quote.token_out}`],
    ['price', `${quote.price_text} → ${quote.price_after_text} USD`],
    ['fee', `${quote.fee_text} ${token.toUpperCase()}`],
  ];
}

/** `tabula swap <amount> <token> [--from <user>] [--to <user>] [--slippage 0.5%|--min-receive <decimal>] [--wait]`. */
export async function swapCommand(context: Context, token_text: string | undefined): Promise<Transaction | null> {
  const { client, out, values, positionals } = context;
  const [amount, token] = positionals;
  if (amount === undefined || token === undefined || positionals.length !== 2) throw new UsageError('expected <amount> <token>, e.g. tabula swap 10 TAB');
  if (!AMOUNT.test(amount)) throw new UsageError(`the amount must be a positive decimal, e.g. 10 or 0.5 (got "${amount}")`);
  if (!/^[A-Za-z]{1,16}$/.test(token)) throw new UsageError(`the token must be a symbol such as TAB or USDG (got "${token}")`);
  const slippage_text = text(values, 'slippage');
  const min_receive_text = text(values, 'min-receive');
  if (slippage_text !== undefined && min_receive_text !== undefined) throw new UsageError('--slippage and --min-receive exclude each other');
  if (min_receive_text !== undefined && !AMOUNT.test(min_receive_text)) throw new UsageError(`--min-receive must be a positive decimal (got "${min_receive_text}")`);
  const from = text(values, 'from') ?? tokenSubject(token_text);
  if (from === null || from === '') throw new UsageError('--from is required (the token names no subject to pay from)');
  const to = text(values, 'to') ?? from;
  const key = text(values, 'idempotency-key');
  const bound = min_receive_text === undefined ? { slippage: slippageFlag(slippage_text ?? SLIPPAGE_DEFAULT) } : { minReceive: min_receive_text };
  const receipt = await client.swap({ from, to, amount, token, ...bound }, key === undefined ? {} : { idempotencyKey: key });
  const { quote, min_receive, ...submitted } = receipt;
  const plan: [string, string][] = [
    ...(quote === null ? [] : quoteRows(amount, token, quote)),
    ['min_receive', min_receive === null ? 'none' : `${min_receive}${quote === null ? '' : ` ${quote.token_out} (slippage ${String(bound.slippage)})`}`],
  ];
  const swap_plan = { quote: quote === null ? null : apiRecord(quote), min_receive };
  if (values.wait !== true) {
    print(out, { ...swap_plan, receipt: submitted }, () => lines([
      ...plan, ['tx_hash', submitted.tx_hash], ['status', submitted.status], ['replayed', String(submitted.replayed)],
    ]));
    return null;
  }
  const final = await client.waitForTransaction(receipt.tx_hash, { timeoutMs: WAIT_TIMEOUT_MS });
  print(out, { ...swap_plan, transaction: apiRecord(final) }, () => `${lines(plan)}\n${transactionLines(final)}`);
  return final;
}

function candleTable(history: PriceHistory): string {
  if (history.candles.length === 0) return `no ${history.interval} candles yet`;
  const columns = ['open', 'high', 'low', 'close', 'volume_usd'] as const;
  const rows = history.candles.map((candle) => [
    new Date(candle.start * 1000).toISOString().replace('.000Z', 'Z'),
    ...columns.map((column) => candle[`${column}_text`]),
  ]);
  const header = ['start', ...columns];
  const widths = header.map((title, index) => Math.max(title.length, ...rows.map((row) => (row[index] as string).length)));
  const format = (row: readonly string[]): string => row.map((cell, index) => (index === 0 ? cell.padEnd(widths[index] as number) : cell.padStart(widths[index] as number))).join('  ');
  return [format(header), ...rows.map(format), `${history.candles.length} ${history.interval} candle${history.candles.length === 1 ? '' : 's'}, oldest first`].join('\n');
}

/** `tabula price`: the current price; `tabula price --history <1m|1h|1d> [--limit <n>]`: candles. */
export async function priceCommand(context: Context): Promise<void> {
  const { client, out, values, positionals } = context;
  if (positionals.length !== 0) throw new UsageError('tabula price takes no arguments (see --history)');
  const interval = text(values, 'history');
  const limit_text = text(values, 'limit');
  if (interval === undefined) {
    if (limit_text !== undefined) throw new UsageError('--limit goes with --history');
    const stats: Stats = await client.getStats();
    const { native_price, native_price_text, latest_block_number, trading_volume_24h, trading_volume_24h_text } = stats;
    print(out, { native_price, native_price_text, latest_block_number, trading_volume_24h, trading_volume_24h_text }, () => lines([
      ['price', `${stats.native_price_text} USD per native token`], ['as_of_block', String(stats.latest_block_number)], ['volume_24h', `${stats.trading_volume_24h_text} USD`],
    ]));
    return;
  }
  if (!CANDLE_INTERVALS.includes(interval as CandleInterval)) throw new UsageError(`--history must be one of ${CANDLE_INTERVALS.join(', ')} (got "${interval}")`);
  let limit: number | undefined;
  if (limit_text !== undefined) {
    limit = /^[0-9]{1,4}$/.test(limit_text) ? Number(limit_text) : Number.NaN;
    if (!(limit >= 1 && limit <= CANDLE_LIMIT_MAX)) throw new UsageError(`--limit must be an integer from 1 to ${CANDLE_LIMIT_MAX}`);
  }
  const history = await client.priceHistory({ interval: interval as CandleInterval, ...(limit === undefined ? {} : { limit }) });
  print(out, { interval: history.interval, candles: history.candles.map(apiRecord) }, () => candleTable(history));
}
