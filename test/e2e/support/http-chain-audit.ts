/**
 * A third-party audit of the chain through the public HTTP API only: walks every block from genesis,
 * recomputes each transactions_root, block hash and parent link, recomputes every tx_hash from the
 * transaction record (amount read from the exact JSON text), replays every transaction in block order
 * on an independent balance model to check each `confirmed`/`failed` decision, and then compares the
 * model with the balances and statistics the service reports.
 *
 * Only the hashing primitives come from src/domain (they are the documented encoding); the ledger
 * rules, the market's pool formula and its price included (docs/api.md, Market), are re-implemented here. Problems are collected, not thrown, so a test shows all of them.
 */
import { blockHash, transactionHash, transactionsRoot } from '../../../src/domain/hashing.js';
import type { JsonValue } from '../../../src/domain/shared/canonical-json.js';
import {
  type ApiClient,
  type BlockHeaderRecord,
  type BlockPageRecord,
  type BlockRecord,
  type StatsRecord,
  type TransactionRecord,
  decimalToUnits,
  HASH_PATTERN,
  mapLimit,
  rawMembers,
} from './http.js';

export const ZERO_HASH = `0x${'0'.repeat(64)}`;
export const UNITS_MAX = 2n ** 63n - 1n;
const USD_DECIMALS = 6;
const PRICE_DECIMALS = 12;
const POOL = '@pool';

export type AuditOptions = {
  native_symbol?: string;
  /** NATIVE_PRICE_USD as exact decimal text. */
  native_price?: string;
  /** Also compare /api/stats with the replay (assumes every block is within the last 24 h). */
  check_stats?: boolean;
  /** Also compare every participant's /api/balance with the replay. */
  check_balances?: boolean;
  /** POOL_FEE_BPS of the ledger (default 30). */
  pool_fee_bps?: number;
};

export type AuditedTransaction = {
  record: TransactionRecord;
  amount_text: string;
  amount_units: bigint;
  /** A swap's minimum, in base units of the token received (null: none, or not a swap). */
  min_receive_units: bigint | null;
  /** The record's `amount_out`, exact text ('null' when it has none). */
  amount_out_text: string;
  /** What the replay's pool gave a confirmed swap. */
  expected_amount_out_units: bigint | null;
  block_number: number;
  position: number;
  /** What the independent replay decided. */
  expected_status: 'confirmed' | 'failed';
  expected_error: string | null;
};

export type AuditResult = {
  latest_block_number: number;
  blocks: BlockRecord[];
  /** Every transaction in chain order (block, then position). */
  transactions: AuditedTransaction[];
  by_hash: Map<string, AuditedTransaction>;
  /** Replayed balances: `balances.get(user)?.get(token)`. */
  balances: Map<string, Map<string, bigint>>;
  stats: StatsRecord;
  problems: string[];
};

export async function auditChain(client: ApiClient, options: AuditOptions = {}): Promise<AuditResult> {
  const native = options.native_symbol ?? 'TAB';
  const decimals = new Map<string, number>([[native, 8], ['USDG', 6]]);
  const configured_price_units = decimalToUnits(options.native_price ?? '1', PRICE_DECIMALS);
  const fee_bps = BigInt(options.pool_fee_bps ?? 30);
  const other = (token: string): string => (token === native ? 'USDG' : native);
  const problems: string[] = [];
  const problem = (message: string): void => {
    if (problems.length < 200) problems.push(message);
  };

  const stats_response = await client.stats();
  if (stats_response.status !== 200) throw new Error(`GET /api/stats answered ${stats_response.status}`);
  const stats = stats_response.body;
  const latest = stats.latest_block_number;

  // Block headers through the list (newest first, 100 a page), to compare with the single lookups.
  const listed = new Map<number, BlockHeaderRecord>();
  for (let offset = 0; ; offset += 100) {
    const page = await client.get<BlockPageRecord>(`/api/blocks?limit=100&offset=${offset}`);
    if (page.status !== 200) throw new Error(`GET /api/blocks answered ${page.status}: ${page.text}`);
    for (const header of page.body.blocks) listed.set(header.number, header);
    if (page.body.blocks.length < 100) break;
  }

  const numbers = Array.from({ length: latest + 1 }, (_, number) => number);
  const blocks = await mapLimit(numbers, 8, async (number) => {
    const response = await client.block(number);
    if (response.status !== 200) throw new Error(`GET /api/blocks/${number} answered ${response.status}: ${response.text}`);
    return response.body;
  });

  const transactions: AuditedTransaction[] = [];
  const by_hash = new Map<string, AuditedTransaction>();
  let parent: BlockRecord | null = null;
  for (const block of blocks) {
    const at = `block ${block.number}`;
    const { transactions: hashes, ...header } = block;
    if (block.number !== (parent === null ? 0 : parent.number + 1)) problem(`${at}: number is not consecutive`);
    if (block.parent_hash !== (parent === null ? ZERO_HASH : parent.hash)) problem(`${at}: parent_hash does not link to block ${parent?.number ?? 'none'}`);
    if (!HASH_PATTERN.test(block.hash)) problem(`${at}: hash ${block.hash} is not 0x + 64 lowercase hex`);
    if (parent !== null && block.timestamp < parent.timestamp) problem(`${at}: timestamp goes backwards`);
    if (!Number.isInteger(block.timestamp)) problem(`${at}: timestamp is not integer seconds`);
    if (block.transactions_count !== hashes.length) problem(`${at}: transactions_count ${block.transactions_count} ≠ ${hashes.length} listed`);
    if (block.number > 0 && hashes.length === 0) problem(`${at}: an empty block after genesis`);
    const root = transactionsRoot(hashes);
    if (root !== block.transactions_root) problem(`${at}: transactions_root ${block.transactions_root} ≠ recomputed ${root}`);
    const hash = blockHash({ number: block.number, parent_hash: block.parent_hash, timestamp: block.timestamp, transactions_root: block.transactions_root, native_price: block.native_price ?? null });
    if (hash !== block.hash) problem(`${at}: hash ${block.hash} ≠ recomputed ${hash}`);
    const from_list = listed.get(block.number);
    if (from_list === undefined) problem(`${at}: missing from /api/blocks`);
    else if (sortedJson(from_list) !== sortedJson(header)) problem(`${at}: /api/blocks shows ${JSON.stringify(from_list)} but /api/blocks/${block.number} ${JSON.stringify(header)}`);

    const records = await mapLimit(hashes, 16, async (tx_hash) => {
      const response = await client.transaction(tx_hash);
      if (response.status !== 200) throw new Error(`GET /api/transactions/${tx_hash} answered ${response.status}: ${response.text}`);
      const members = rawMembers(response.text);
      return { record: response.body, amount_text: members.get('amount') ?? '', min_receive_text: members.get('min_receive') ?? 'null', amount_out_text: members.get('amount_out') ?? 'null' };
    });
    records.forEach(({ record, amount_text, min_receive_text, amount_out_text }, position) => {
      const where = `${at} position ${position} (${record.tx_hash})`;
      if (record.tx_hash !== hashes[position]) problem(`${where}: record has tx_hash ${record.tx_hash}`);
      if (by_hash.has(record.tx_hash)) problem(`${where}: transaction appears twice in the chain`);
      if (record.block_number !== block.number) problem(`${where}: block_number ${String(record.block_number)}`);
      if (record.block_hash !== block.hash) problem(`${where}: block_hash ${String(record.block_hash)}`);
      if (record.position !== position) problem(`${where}: position ${String(record.position)}`);
      if (record.status !== 'confirmed' && record.status !== 'failed') problem(`${where}: status ${record.status} inside a block`);
      if (record.timestamp > block.timestamp) problem(`${where}: submitted (${record.timestamp}) after its block (${block.timestamp})`);
      const token_decimals = decimals.get(record.token);
      let amount_units = 0n;
      let min_receive_units: bigint | null = null;
      if (token_decimals === undefined) problem(`${where}: unknown token ${record.token}`);
      else {
        try {
          amount_units = decimalToUnits(amount_text, token_decimals);
          if (record.type === 'swap' && min_receive_text !== 'null') min_receive_units = decimalToUnits(min_receive_text, decimals.get(other(record.token)) ?? 0);
        } catch (error) {
          problem(`${where}: amount ${amount_text} or min_receive ${min_receive_text}: ${(error as Error).message}`);
        }
      }
      if (record.type !== 'swap' && (min_receive_text !== 'null' || amount_out_text !== 'null' || record.token_out !== null)) {
        problem(`${where}: a ${record.type} with swap fields`);
      }
      const recomputed = transactionHash({
        from: record.from,
        to: record.to,
        amount_units,
        token: record.token,
        type: record.type,
        metadata: record.metadata as { [key: string]: JsonValue },
        nonce: record.nonce,
        timestamp: record.timestamp,
        min_receive_units,
      });
      if (recomputed !== record.tx_hash) problem(`${where}: tx_hash ≠ recomputed ${recomputed}`);
      const audited: AuditedTransaction = {
        record,
        amount_text,
        amount_units,
        min_receive_units,
        amount_out_text,
        expected_amount_out_units: null,
        block_number: block.number,
        position,
        expected_status: 'confirmed',
        expected_error: null,
      };
      transactions.push(audited);
      by_hash.set(record.tx_hash, audited);
    });
    parent = block;
  }

  // The independent replay: the ledger's rules, written out again.
  const balances = new Map<string, Map<string, bigint>>();
  const get = (user: string, token: string): bigint => balances.get(user)?.get(token) ?? 0n;
  const set = (user: string, token: string, units: bigint): void => {
    const account = balances.get(user) ?? new Map<string, bigint>();
    account.set(token, units);
    balances.set(user, account);
  };
  const participants = new Set<string>();
  const traders = new Set<string>();
  let swap_volume_usdg_units = 0n;
  const poolPriceUnits = (): bigint => {
    const native_reserve = get(POOL, native);
    const usdg_reserve = get(POOL, 'USDG');
    if (native_reserve === 0n || usdg_reserve === 0n) return configured_price_units;
    return (usdg_reserve * 10n ** BigInt(PRICE_DECIMALS + 8 - 6)) / native_reserve;
  };
  const isSystem = (user: string): boolean => user.startsWith('@');
  const replaySwap = (tx: AuditedTransaction): void => {
    const { from, to, token } = tx.record;
    const token_out = other(token);
    const reserve_in = get(POOL, token);
    const reserve_out = get(POOL, token_out);
    const decide = (error: string): void => {
      tx.expected_status = 'failed';
      tx.expected_error = error;
    };
    if (reserve_in === 0n || reserve_out === 0n) return decide('pool_empty');
    if (get(from, token) < tx.amount_units) return decide('insufficient_funds');
    const kept = tx.amount_units * (10000n - fee_bps);
    const amount_out = (reserve_out * kept) / (reserve_in * 10000n + kept);
    if (amount_out === 0n) return decide('amount_out_zero');
    if (tx.min_receive_units !== null && amount_out < tx.min_receive_units) return decide('slippage_exceeded');
    if (reserve_in + tx.amount_units > UNITS_MAX || get(to, token_out) + amount_out > UNITS_MAX) return decide('balance_overflow');
    set(from, token, get(from, token) - tx.amount_units);
    set(POOL, token, reserve_in + tx.amount_units);
    set(POOL, token_out, reserve_out - amount_out);
    set(to, token_out, get(to, token_out) + amount_out);
    tx.expected_amount_out_units = amount_out;
    participants.add(from).add(to);
    swap_volume_usdg_units += token === 'USDG' ? tx.amount_units : amount_out;
  };
  const replayPosting = (tx: AuditedTransaction): void => {
    const { from, to, token, type } = tx.record;
    const debit = type === 'transfer' || type === 'burn';
    const credit = type === 'transfer' || type === 'mint';
    if (debit && get(from, token) < tx.amount_units) {
      tx.expected_status = 'failed';
      tx.expected_error = 'insufficient_funds';
    } else if (credit && get(to, token) + tx.amount_units > UNITS_MAX) {
      tx.expected_status = 'failed';
      tx.expected_error = 'balance_overflow';
    } else {
      if (debit) set(from, token, get(from, token) - tx.amount_units);
      if (credit) set(to, token, get(to, token) + tx.amount_units);
      for (const user of [from, to]) if (!isSystem(user)) participants.add(user);
      if (type === 'transfer') for (const user of [from, to]) if (!isSystem(user)) traders.add(user);
    }
  };
  let next = 0;
  for (const block of blocks) {
    for (; next < transactions.length && transactions[next]?.block_number === block.number; next += 1) {
      const tx = transactions[next] as AuditedTransaction;
      const { from, to, token, type } = tx.record;
      if (type === 'swap') replaySwap(tx);
      else replayPosting(tx);
      if (tx.record.status !== tx.expected_status || tx.record.error !== tx.expected_error) {
        problem(`${tx.record.tx_hash} (block ${tx.block_number} position ${tx.position}, ${type} ${tx.amount_text} ${token} ${from}→${to}): `
          + `service says ${tx.record.status}/${String(tx.record.error)}, replay says ${tx.expected_status}/${String(tx.expected_error)}`);
      }
      if (type === 'swap') {
        const decimals_out = decimals.get(other(token)) ?? 0;
        const amount_out = tx.amount_out_text === 'null' ? null : decimalToUnits(tx.amount_out_text, decimals_out);
        if (amount_out !== tx.expected_amount_out_units || tx.record.token_out !== other(token)) {
          problem(`${tx.record.tx_hash}: swap gave ${String(tx.record.amount_out)} ${String(tx.record.token_out)}, replay says ${String(tx.expected_amount_out_units)} units of ${other(token)}`);
        }
      }
    }
    if (block.native_price != null && decimalToUnits(block.native_price, PRICE_DECIMALS) !== poolPriceUnits()) {
      problem(`block ${block.number}: native_price ${block.native_price} but the replayed pool gives ${poolPriceUnits()} units`);
    }
  }
  for (const [user, account] of balances) {
    for (const [token, units] of account) if (units < 0n) problem(`replay: ${user} has a negative ${token} balance`);
  }

  const price_units = poolPriceUnits();
  const usdMicros = (native_units: bigint, usdg_units: bigint): bigint =>
    roundHalfAway(native_units * price_units, 8 + PRICE_DECIMALS - USD_DECIMALS) + usdg_units;

  if (options.check_balances !== false) {
    const users = [...new Set(transactions.flatMap((tx) => [tx.record.from, tx.record.to]))].filter((user) => !isSystem(user));
    await mapLimit(users, 16, async (user) => {
      const response = await client.balance(user);
      if (response.status !== 200) {
        problem(`GET /api/balance/${user} answered ${response.status}`);
        return;
      }
      const members = rawMembers(response.text);
      const native_units = decimalToUnits(members.get('native') ?? 'NaN', 8);
      const usdg_units = decimalToUnits(members.get('usdg') ?? 'NaN', 6);
      const total_micros = decimalToUnits(members.get('total_usd') ?? 'NaN', USD_DECIMALS);
      if (response.body.user_id !== user) problem(`balance of ${user}: user_id ${response.body.user_id}`);
      if (native_units !== get(user, native)) problem(`balance of ${user}: native ${members.get('native')} but replay says ${get(user, native)} units`);
      if (usdg_units !== get(user, 'USDG')) problem(`balance of ${user}: usdg ${members.get('usdg')} but replay says ${get(user, 'USDG')} units`);
      const expected_total = usdMicros(get(user, native), get(user, 'USDG'));
      if (total_micros !== expected_total) problem(`balance of ${user}: total_usd ${members.get('total_usd')} but expected ${expected_total} micro-dollars`);
    });
  }

  if (options.check_stats !== false) {
    const expected = {
      total_transactions: transactions.length,
      total_users: participants.size,
      active_users_24h: traders.size,
      latest_block_number: latest,
    };
    const actual = {
      total_transactions: stats.total_transactions,
      total_users: stats.total_users,
      active_users_24h: stats.active_users_24h,
      latest_block_number: stats.latest_block_number,
    };
    if (JSON.stringify(actual) !== JSON.stringify(expected)) problem(`stats ${JSON.stringify(actual)} but replay says ${JSON.stringify(expected)}`);
    const members = rawMembers(stats_response.text);
    const volume_micros = decimalToUnits(members.get('trading_volume_24h') ?? 'NaN', USD_DECIMALS);
    const expected_volume = swap_volume_usdg_units;
    if (volume_micros !== expected_volume) problem(`stats: trading_volume_24h ${members.get('trading_volume_24h')} but replay says ${expected_volume} micro-dollars`);
    if (decimalToUnits(members.get('native_price') ?? 'NaN', 12) !== price_units) problem(`stats: native_price ${members.get('native_price')}`);
  }

  return { latest_block_number: latest, blocks, transactions, by_hash, balances, stats, problems };
}

/** JSON with object keys sorted, to compare records whatever their key order. */
function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item);
}

function roundHalfAway(value: bigint, drop_decimals: number): bigint {
  const divisor = 10n ** BigInt(drop_decimals);
  const half = divisor / 2n;
  return value >= 0n ? (value + half) / divisor : -((-value + half) / divisor);
}
