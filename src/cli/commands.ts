/** The CLI's API commands: submit, tx, balance, history, blocks, block, stats (each one SDK call or two); swap and price are in market-commands.ts. */
import type { AccountTransactionsPage, Balance, Block, BlockPage, JsonValue, Stats, TabulaClient, Transaction, TransactionType } from '@tabula/client';
import { UsageError } from './cli-config.js';
import { transactionHashArgument } from './command-line.js';
import { apiRecord, lines, print, when, type Output } from './output.js';

export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;
export type Context = { client: TabulaClient; out: Output; values: Values; positionals: string[] };

const TRANSACTION_TYPES: readonly TransactionType[] = ['transfer', 'mint', 'burn'];
const WAIT_TIMEOUT_MS = 120_000;

function text(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function required(values: Values, name: string): string {
  const value = text(values, name);
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function onePositional(context: Context, what: string): string {
  const [value] = context.positionals;
  if (value === undefined || context.positionals.length !== 1) throw new UsageError(`expected exactly one ${what}`);
  return value;
}

function integer(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,15}$/.test(value)) throw new UsageError(`${name} must be a non-negative integer`);
  return Number(value);
}

function metadataOf(values: Values): { [key: string]: JsonValue } | undefined {
  const raw = text(values, 'metadata');
  if (raw === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as { [key: string]: JsonValue };
  } catch {
    throw new UsageError('--metadata must be a JSON object, e.g. \'{"memo":"rent"}\'');
  }
}

export function transactionLines(tx: Transaction): string {
  const block = tx.block_number === null ? 'none yet' : `${tx.block_number} (${tx.block_hash}), position ${tx.position}`;
  return lines([
    ['tx_hash', tx.tx_hash],
    ['status', tx.error === null ? tx.status : `${tx.status} (${tx.error})`],
    ['type', tx.type],
    ['from', tx.from],
    ['to', tx.to],
    ['amount', `${tx.amount_text} ${tx.token}`],
    ...(tx.type === 'swap' ? swapRows(tx) : []),
    ['metadata', JSON.stringify(tx.metadata)],
    ['timestamp', when(tx.timestamp)],
    ['block', block],
    ['nonce', tx.nonce],
  ]);
}

/** A swap's own fields: its minimum and what it received. */
function swapRows(tx: Transaction): [string, string][] {
  const token_out = tx.token_out ?? '';
  const min_receive = tx.min_receive_text ?? (tx.min_receive == null ? null : String(tx.min_receive));
  const amount_out = tx.amount_out_text ?? (tx.amount_out == null ? null : String(tx.amount_out));
  return [
    ['min_receive', min_receive === null ? 'none' : `${min_receive} ${token_out}`],
    ['amount_out', amount_out === null ? 'none' : `${amount_out} ${token_out}`],
  ];
}

export async function submitCommand(context: Context): Promise<Transaction | null> {
  const { client, out, values } = context;
  const type = (text(values, 'type') ?? 'transfer') as TransactionType;
  if (!TRANSACTION_TYPES.includes(type)) throw new UsageError(`--type must be one of ${TRANSACTION_TYPES.join(', ')}`);
  const metadata = metadataOf(values);
  const request = {
    from: required(values, 'from'), to: required(values, 'to'), amount: required(values, 'amount'), token: required(values, 'token'), type,
    ...(metadata === undefined ? {} : { metadata }),
  };
  const key = text(values, 'idempotency-key');
  const receipt = await client.submitTransaction(request, key === undefined ? {} : { idempotencyKey: key });
  if (values.wait !== true) {
    print(out, receipt, () => lines([['tx_hash', receipt.tx_hash], ['status', receipt.status], ['timestamp', when(receipt.timestamp)], ['replayed', String(receipt.replayed)]]));
    return null;
  }
  const final = await client.waitForTransaction(receipt.tx_hash, { timeoutMs: WAIT_TIMEOUT_MS });
  print(out, final, () => transactionLines(final));
  return final;
}

export async function transactionCommand(context: Context): Promise<void> {
  const hash = transactionHashArgument(onePositional(context, 'transaction hash'));
  if (context.values.proof === true) {
    const proof = await context.client.getProof(hash);
    print(context.out, proof, () => lines([
      ['tx_hash', proof.tx_hash], ['block', `${proof.block_number} (${proof.block_hash})`], ['transactions_root', proof.transactions_root],
      ['leaf_index', `${proof.leaf_index} of ${proof.tree_size}`], ...proof.audit_path.map((step, index) => [`audit_path[${index}]`, step] as const),
    ]));
    return;
  }
  const tx = await context.client.getTransaction(hash);
  print(context.out, tx, () => transactionLines(tx));
}

export async function balanceCommand(context: Context): Promise<void> {
  const balance: Balance = await context.client.getBalance(onePositional(context, 'user id'));
  print(context.out, balance, () => lines([
    ['user', balance.user_id], ['native', balance.native_text], ['usdg', balance.usdg_text], ['total_usd', balance.total_usd_text],
  ]));
}

export async function historyCommand(context: Context): Promise<void> {
  const user_id = onePositional(context, 'user id');
  const limit = integer(text(context.values, 'limit'), '--limit');
  const cursor = text(context.values, 'cursor');
  const page: AccountTransactionsPage = await context.client.listAccountTransactions(user_id, {
    ...(limit === undefined ? {} : { limit }), ...(cursor === undefined ? {} : { cursor }),
  });
  print(context.out, { ...page, transactions: page.transactions.map(apiRecord) }, () => historyLines(page));
}

/** One line per transaction, newest first, then where the next page starts. */
function historyLines(page: AccountTransactionsPage): string {
  if (page.transactions.length === 0) return `no transactions of ${page.user_id}${page.next_cursor === null ? '' : ` (next page: --cursor ${page.next_cursor})`}`;
  const header = `${'tx_hash'.padEnd(66)}  ${'time'.padEnd(20)}  ${'status'.padEnd(9)}  ${'type'.padEnd(8)}  ${'amount'.padStart(25)}  from → to`;
  const rows = page.transactions.map((tx) => {
    const time = new Date(tx.timestamp * 1000).toISOString().replace('.000Z', 'Z');
    const amount = `${tx.amount_text} ${tx.token}`;
    const error = tx.error === null ? '' : `  (${tx.error})`;
    return `${tx.tx_hash}  ${time.padEnd(20)}  ${tx.status.padEnd(9)}  ${tx.type.padEnd(8)}  ${amount.padStart(25)}  ${tx.from} → ${tx.to}${error}`;
  });
  const count = `${page.transactions.length} transaction${page.transactions.length === 1 ? '' : 's'} of ${page.user_id}, newest first`;
  const footer = page.next_cursor === null ? `${count}; no older ones` : `${count}; older ones: --cursor ${page.next_cursor}`;
  return [header, ...rows, footer].join('\n');
}

export async function blocksCommand(context: Context): Promise<void> {
  const limit = integer(text(context.values, 'limit'), '--limit');
  const offset = integer(text(context.values, 'offset'), '--offset');
  const page: BlockPage = await context.client.listBlocks({ ...(limit === undefined ? {} : { limit }), ...(offset === undefined ? {} : { offset }) });
  print(context.out, page, () => {
    const rows = page.blocks.map((block) => `${String(block.number).padStart(8)}  ${block.hash}  ${String(block.transactions_count).padStart(6)}  ${new Date(block.timestamp * 1000).toISOString()}`);
    const header = `${'number'.padStart(8)}  ${'hash'.padEnd(66)}  ${'txs'.padStart(6)}  time`;
    return [header, ...rows, `${page.blocks.length} of ${page.total} blocks (offset ${page.offset})`].join('\n');
  });
}

export async function blockCommand(context: Context): Promise<void> {
  const which = onePositional(context, 'block number (or "latest")');
  const number = which === 'latest' ? (await context.client.getStats()).latest_block_number : integer(which, 'the block number');
  const block: Block = await context.client.getBlock(number as number);
  print(context.out, block, () => lines([
    ['number', String(block.number)], ['hash', block.hash], ['parent_hash', block.parent_hash], ['timestamp', when(block.timestamp)],
    ['transactions_root', block.transactions_root], ['transactions', String(block.transactions_count)],
    ...block.transactions.map((hash, index) => [`  ${index}`, hash] as const),
  ]));
}

export async function statsCommand(context: Context): Promise<void> {
  const stats: Stats = await context.client.getStats();
  print(context.out, stats, () => lines([
    ['total_transactions', String(stats.total_transactions)], ['total_users', String(stats.total_users)],
    ['native_price', stats.native_price_text], ['trading_volume_24h', stats.trading_volume_24h_text],
    ['active_users_24h', String(stats.active_users_24h)], ['latest_block_number', String(stats.latest_block_number)],
  ]));
}
