/**
 * The offline audit of a ledger database (`tabula audit`): reads the chain from genesis in pages
 * through an AuditReader, replays it (chain-replay.ts), then checks what the store keeps beside the
 * chain: no transaction names a block that does not exist, every unsealed transaction is a pending one
 * that hashes to its hash, and the stored balances and accounts are exactly the replayed ones. Stops
 * at the first discrepancy. Each block's stored balance root is recomputed from the replayed balances. Memory: two pages of rows (one replayed, the next being read) plus the
 * replayed balances and accounts.
 */
import { PRICE_DECIMALS, USDG_SYMBOL } from '../domain/shared/tokens.js';
import { POOL_FEE_BPS_DEFAULT } from '../domain/market/pool.js';
import { transactionHash } from '../domain/hashing.js';
import { AccountTokenMap } from '../domain/account-token-map.js';
import type { Transaction } from '../domain/transaction.js';
import type { StoredBlockHeader } from '../service/ledger-store.js';
import { AUDIT_BLOCK_PAGE_MAX, AUDIT_ROW_PAGE_MAX, type AuditReader, type BalanceKey } from './audit-reader.js';
import { ChainReplay, discrepancy, type Discrepancy } from './chain-replay.js';
import { HistoryAudit } from './history-audit.js';

export type AuditSummary = {
  /** The newest block audited (null: the database holds no chain). */
  head: { number: number; hash: string } | null;
  blocks: number;
  transactions_replayed: number;
  unsealed_transactions: number;
  balances: number;
  accounts: number;
  /** Blocks whose stored balance root was recomputed from the replayed balances (older blocks have none). */
  balance_roots: number;
};

export type AuditResult = { ok: true; summary: AuditSummary } | { ok: false; discrepancy: Discrepancy; summary: AuditSummary };

export type AuditOptions = {
  /** Called after each page of the chain with the transactions replayed so far and the total the head block states. */
  on_progress?: (transactions_done: number, transactions_total: number) => void;
  /** NATIVE_PRICE_USD in 12-decimal units: the price before the first priced block (default 1 USD). */
  fallback_price_units?: bigint;
};

/** The largest block the service seals (BLOCK_TXS_MAX's upper bound in src/config.ts). */
const BLOCK_ROWS_MAX = 100_000;
/** A group of blocks is read with one query; a bad database may hold more rows than its blocks state, up to this. */
const GROUP_ROWS_MAX = AUDIT_ROW_PAGE_MAX + BLOCK_ROWS_MAX;

export async function auditLedger(reader: AuditReader, options: AuditOptions = {}): Promise<AuditResult> {
  const latest = await reader.latestBlock();
  const native = await reader.setting('native_symbol');
  const fee = await reader.setting('pool_fee_bps');
  const market = { fee_bps: fee === null ? POOL_FEE_BPS_DEFAULT : Number(fee), fallback_price_units: options.fallback_price_units ?? 10n ** BigInt(PRICE_DECIMALS) };
  const replay = new ChainReplay(native === null ? [USDG_SYMBOL] : [native, USDG_SYMBOL], market);
  const counts = { unsealed_transactions: 0, balances: 0, accounts: 0 };
  const summary = (): AuditSummary => ({
    head: replay.head === null ? null : { number: replay.head.number, hash: replay.head.hash },
    blocks: replay.head === null ? 0 : replay.head.number + 1,
    transactions_replayed: replay.transactions_replayed,
    balance_roots: replay.balance_roots_checked,
    ...counts,
  });
  const found = latest === null
    ? discrepancy('missing_genesis', null, null, 'the database holds no block: not a ledger, or an empty one')
    : await auditChain(reader, replay, latest, options)
      ?? await checkNoTransactionBeyond(reader, latest)
      ?? await checkUnsealed(reader, counts)
      ?? await checkBalances(reader, replay, counts)
      ?? await checkAccounts(reader, replay, counts);
  return found === null ? { ok: true, summary: summary() } : { ok: false, discrepancy: found, summary: summary() };
}

/** Blocks 0..latest in pages; each page's transactions read a group of blocks at a time. */
async function auditChain(reader: AuditReader, replay: ChainReplay, latest: StoredBlockHeader, options: AuditOptions): Promise<Discrepancy | null> {
  let from = 0;
  const history = new HistoryAudit(reader);
  while (from <= latest.number) {
    const headers = await reader.blocks(from, Math.min(AUDIT_BLOCK_PAGE_MAX, latest.number - from + 1));
    if (headers.length === 0) return discrepancy('block_number_mismatch', from, null, `block ${from} is missing`);
    const balance_roots = await reader.balanceRoots(from, (headers.at(-1) as StoredBlockHeader).number);
    const groups = groupsOf(headers);
    let next = readGroup(reader, groups[0] as StoredBlockHeader[]);
    for (const [index, group] of groups.entries()) {
      const rows = await next;
      // The next group is read while this one is replayed: a database server works on it meanwhile.
      const following = groups[index + 1];
      if (following !== undefined) next = readGroup(reader, following);
      const found = replayGroup(replay, group, rows, balance_roots);
      if (found !== null) return found;
      options.on_progress?.(replay.transactions_replayed, latest.totals.transactions);
    }
    // The page's blocks replayed (their hashes recomputed): the history tree over them must match.
    const tree = await history.page(headers);
    if (tree !== null) return tree;
    from = (headers.at(-1) as StoredBlockHeader).number + 1;
  }
  return null;
}

/** Every transaction row naming one of the group's blocks; a failure is observed here and thrown to whoever awaits it. */
function readGroup(reader: AuditReader, group: readonly StoredBlockHeader[]): Promise<Transaction[]> {
  const read = reader.blockTransactions((group[0] as StoredBlockHeader).number, (group.at(-1) as StoredBlockHeader).number, GROUP_ROWS_MAX);
  read.catch(() => undefined);
  return read;
}

/** Consecutive headers whose stated transactions add up to a page (a larger block is a group of its own). */
function groupsOf(headers: readonly StoredBlockHeader[]): StoredBlockHeader[][] {
  const groups: StoredBlockHeader[][] = [];
  let current: StoredBlockHeader[] = [];
  let rows = 0;
  for (const header of headers) {
    const size = Math.max(0, header.transactions_count);
    if (current.length > 0 && rows + size > AUDIT_ROW_PAGE_MAX) {
      groups.push(current);
      current = [];
      rows = 0;
    }
    current.push(header);
    rows += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** Hands each header the rows that name it; a row naming a block not among the headers is a discrepancy. */
function replayGroup(replay: ChainReplay, headers: readonly StoredBlockHeader[], rows: readonly Transaction[], balance_roots: ReadonlyMap<number, string>): Discrepancy | null {
  let next = 0;
  for (const header of headers) {
    const stray = rows[next];
    if (stray !== undefined && (stray.block_number as number) < header.number) return unknownBlock(stray);
    const start = next;
    while (next < rows.length && rows[next]?.block_number === header.number) next += 1;
    const found = replay.block(header, rows.slice(start, next), balance_roots.get(header.number) ?? null);
    if (found !== null) return found;
  }
  const stray = rows[next];
  if (stray !== undefined) return unknownBlock(stray);
  if (rows.length >= GROUP_ROWS_MAX) {
    const last = headers.at(-1) as StoredBlockHeader;
    return discrepancy('transactions_count_mismatch', last.number, null, `blocks ${(headers[0] as StoredBlockHeader).number}..${last.number} are named by more transactions than they state`);
  }
  return null;
}

function unknownBlock(tx: Transaction): Discrepancy {
  return discrepancy('transaction_in_unknown_block', tx.block_number, tx.tx_hash, `the transaction names block ${tx.block_number}, which is not in the chain`);
}

async function checkNoTransactionBeyond(reader: AuditReader, latest: StoredBlockHeader): Promise<Discrepancy | null> {
  const [beyond] = await reader.blockTransactions(latest.number + 1, Number.MAX_SAFE_INTEGER, 1);
  return beyond === undefined ? null : unknownBlock(beyond);
}

/** Every transaction without a block is pending, has no outcome, hashes to its hash, and is queued for the sealer. */
async function checkUnsealed(reader: AuditReader, counts: { unsealed_transactions: number }): Promise<Discrepancy | null> {
  for (let after = 0; ;) {
    const page = await reader.unsealedTransactions(after, AUDIT_ROW_PAGE_MAX);
    for (const { transaction: tx, queued } of page) {
      if (tx.status !== 'pending' || tx.position !== null || tx.error !== null) {
        return discrepancy('unsealed_transaction_invalid', null, tx.tx_hash, `the transaction is in no block, but is stored as ${tx.status}${tx.error === null ? '' : ` (${tx.error})`}`);
      }
      if (transactionHash(tx) !== tx.tx_hash) {
        return discrepancy('transaction_hash_mismatch', null, tx.tx_hash, 'the pending transaction does not hash to its tx_hash: its record was altered');
      }
      if (!queued) {
        return discrepancy('transaction_not_queued', null, tx.tx_hash, "the transaction is in no block and not in the sealer's queue: it would never be sealed");
      }
    }
    counts.unsealed_transactions += page.length;
    const last = page.at(-1);
    if (last === undefined || page.length < AUDIT_ROW_PAGE_MAX) return null;
    after = last.seq;
  }
}

/** The stored balances are exactly the replayed ones (a stored zero counts as a missing row). */
async function checkBalances(reader: AuditReader, replay: ChainReplay, counts: { balances: number }): Promise<Discrepancy | null> {
  const seen = new AccountTokenMap<true>();
  for (let after: BalanceKey | null = null; ;) {
    const page = await reader.balances(after, AUDIT_ROW_PAGE_MAX);
    for (const stored of page) {
      const replayed = replay.book.get(stored.user_id, stored.token);
      if (stored.units !== replayed) return balanceDiffers(replay, stored.user_id, stored.token, stored.units, replayed);
      seen.set(stored.user_id, stored.token, true);
    }
    counts.balances += page.length;
    const last = page.at(-1);
    if (last === undefined || page.length < AUDIT_ROW_PAGE_MAX) break;
    after = { user_id: last.user_id, token: last.token };
  }
  for (const balance of replay.book.changed()) {
    if (balance.units !== 0n && seen.get(balance.user_id, balance.token) === undefined) {
      return balanceDiffers(replay, balance.user_id, balance.token, 0n, balance.units);
    }
  }
  return null;
}

/** Names the block of the account's last confirmed transaction: where the stored balance last had a reason to change. */
function balanceDiffers(replay: ChainReplay, user_id: string, token: string, stored: bigint, replayed: bigint): Discrepancy {
  const block = replay.accounts.get(user_id)?.last_block ?? null;
  const where = block === null ? 'no confirmed transaction names the account' : `the account's last confirmed transaction is in block ${block}`;
  return discrepancy('balance_mismatch', block, null, `balance of ${user_id} in ${token} is stored as ${stored} base units, but the replay gives ${replayed} (${where})`);
}

/** The stored accounts are exactly those of the confirmed transactions, each with its last transfer's block time. */
async function checkAccounts(reader: AuditReader, replay: ChainReplay, counts: { accounts: number }): Promise<Discrepancy | null> {
  const seen = new Set<string>();
  for (let after: string | null = null; ;) {
    const page = await reader.accounts(after, AUDIT_ROW_PAGE_MAX);
    for (const stored of page) {
      const replayed = replay.accounts.get(stored.user_id);
      if (replayed === undefined) return accountDiffers(stored.user_id, 'is stored, but no confirmed transaction names it');
      if (replayed.last_transfer_at !== stored.last_transfer_at) {
        return accountDiffers(stored.user_id, `has last_transfer_at ${stored.last_transfer_at}, but the replay gives ${replayed.last_transfer_at}`);
      }
      seen.add(stored.user_id);
    }
    counts.accounts += page.length;
    const last = page.at(-1);
    if (last === undefined || page.length < AUDIT_ROW_PAGE_MAX) break;
    after = last.user_id;
  }
  for (const user_id of replay.accounts.keys()) {
    if (!seen.has(user_id)) return accountDiffers(user_id, 'took part in a confirmed transaction, but is not stored (total_users and active users count it)');
  }
  return null;
}

function accountDiffers(user_id: string, what: string): Discrepancy {
  return discrepancy('account_mismatch', null, null, `account ${user_id} ${what}`);
}
