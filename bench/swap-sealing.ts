/**
 * Swap-heavy sealing (issue 16): how fast the sealer seals swaps against the pool, next to the same
 * number of transfers. `npx tsx bench/swap-sealing.ts [sqlite|postgres|both] [transactions] [accounts]
 * [block_txs_max]` (defaults: both, 50000, 1000, 10000), or `npm run bench -- --scenario swaps`.
 *
 * For each workload, a fresh ledger (SQLite file, or a PostgreSQL schema of its own on
 * TEST_DATABASE_URL / BENCH_DATABASE_URL, dropped at the end): `accounts` accounts get opening balances
 * in both tokens and `@pool` gets liquidity (1,000,000 TAB against 1,500,000 USDG), then `transactions`
 * pending transactions are appended — transfers among the accounts (in both tokens), or swaps by the
 * same accounts, both directions, a quarter of them paying out to another account — and sealed by the
 * block producer at `block_txs_max`, keeping the balance commitment as the service does. Every one of
 * them must confirm (the amounts are small next to the balances and reserves), so both workloads do
 * the same amount of ledger work per transaction apart from the pool. Both workloads are first run
 * once, smaller, as a warm-up, then twice each (transfer, swap, swap, transfer), the faster run of each
 * kept. Prints tx/s for each, the ratio,
 * and where the seal's time went, store call by store call.
 */
import { openBenchStore, timedStore } from './bench-store.js';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { BalanceCommitmentKeeper } from '../src/balance-commitments/balance-commitment-keeper.js';
import { pendingTransaction } from '../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../src/domain/transaction.js';
import { BlockProducer } from '../src/service/block-producer.js';
import type { LedgerStore } from '../src/service/ledger-store.js';
import { DEFAULT_WRITER_LIMITS } from '../src/service/submission-writer.js';

export type SwapStoreKind = 'sqlite' | 'postgres';
export type SwapWorkload = 'transfer' | 'swap';

export type SwapSealingOptions = {
  transactions: number;
  accounts: number;
  block_txs_max: number;
  /** A postgres:// URL (for `postgres`). */
  database_url: string;
};

export type WorkloadResult = {
  workload: SwapWorkload;
  transactions: number;
  confirmed: number;
  blocks: number;
  seal_s: number;
  transactions_per_s: number;
  ms_per_block: number;
  /** Wall time of each store call the producer made, ms in all. */
  steps_ms: Record<string, number>;
};

export type SwapSealingResult = {
  store: SwapStoreKind;
  transactions: number;
  accounts: number;
  block_txs_max: number;
  transfer: WorkloadResult;
  swap: WorkloadResult;
  /** transfer tx/s ÷ swap tx/s (the faster run of each): how many times longer sealing swaps takes (the target is ≤ 2). */
  slowdown: number;
  /** Every measured run, in order ("transfer 21037"). */
  runs_transactions_per_s: string[];
  load_average: number[];
};

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const TAB = 10n ** 8n;
const USDG = 10n ** 6n;
const POOL_TAB = 1_000_000n * TAB;
const POOL_USDG = 1_500_000n * USDG;
const OPENING_TAB = 100_000n * TAB;
const OPENING_USDG = 150_000n * USDG;
const WARMUP_TRANSACTIONS = 5000;

export async function measureSwapSealing(kind: SwapStoreKind, options: SwapSealingOptions): Promise<SwapSealingResult> {
  // A warm-up of both workloads on throwaway ledgers, so that neither measured one pays for compiling the
  // seal path (measured cold, whichever went first looked up to 1.5× slower).
  const warmup = { ...options, transactions: Math.min(WARMUP_TRANSACTIONS, options.transactions) };
  await measureWorkload(kind, 'transfer', warmup);
  await measureWorkload(kind, 'swap', warmup);
  // Then each workload twice, in turn and in both orders (transfer, swap, swap, transfer), keeping the
  // faster run of each: on a shared machine the load changes from one minute to the next.
  const runs: WorkloadResult[] = [];
  for (const workload of ['transfer', 'swap', 'swap', 'transfer'] as const) runs.push(await measureWorkload(kind, workload, options));
  const best = (workload: SwapWorkload) => runs.filter((run) => run.workload === workload).reduce((a, b) => (b.transactions_per_s > a.transactions_per_s ? b : a));
  const transfer = best('transfer');
  const swap = best('swap');
  return {
    store: kind, transactions: options.transactions, accounts: options.accounts, block_txs_max: options.block_txs_max,
    transfer, swap, slowdown: Number((transfer.transactions_per_s / swap.transactions_per_s).toFixed(2)),
    runs_transactions_per_s: runs.map((run) => `${run.workload} ${run.transactions_per_s}`),
    load_average: os.loadavg().map((value) => Number(value.toFixed(1))),
  };
}

async function measureWorkload(kind: SwapStoreKind, workload: SwapWorkload, options: SwapSealingOptions): Promise<WorkloadResult> {
  const { store, cleanup } = await openBenchStore(kind, options.database_url);
  try {
    const logger = pino({ level: 'silent' });
    const keeper = new BalanceCommitmentKeeper(store, logger);
    const spent = new Map<string, number>();
    const outcomes = new Map<string, number>();
    const producer = new BlockProducer(timedStore(store, spent), { now_ms: () => Date.now() }, logger, { block_interval_ms: 1000, block_txs_max: options.block_txs_max }, {
      commitment: keeper,
      observer: {
        blockSealed: (summary) => {
          for (const { type, status, error, count } of summary.outcomes) {
            const key = `${type} ${status} ${error}`;
            outcomes.set(key, (outcomes.get(key) ?? 0) + count);
          }
        },
      },
    });
    await producer.ensureGenesis();
    await keeper.start();
    const maker = transactionMaker();
    const account = (index: number) => `account-${index}`;
    const seed: Transaction[] = [maker.make('treasury', '@pool', 'mint', 'TAB', POOL_TAB), maker.make('treasury', '@pool', 'mint', 'USDG', POOL_USDG)];
    for (let index = 0; index < options.accounts; index += 1) {
      seed.push(maker.make('treasury', account(index), 'mint', 'TAB', OPENING_TAB), maker.make('treasury', account(index), 'mint', 'USDG', OPENING_USDG));
    }
    await append(store, seed);
    await producer.drain();
    outcomes.clear();

    const pending = Array.from({ length: options.transactions }, (_, index) => {
      const from = account(index % options.accounts);
      const other = account((index * 7 + 1) % options.accounts);
      // Both tokens, both directions: the direction flips every pass over the accounts and every other transaction.
      const token = (index + Math.floor(index / options.accounts)) % 2 === 0 ? 'TAB' : 'USDG';
      // 0.01–0.5 TAB or 0.01–0.75 USDG: small next to balances and reserves, so everything confirms.
      const amount = token === 'TAB' ? BigInt(1 + (index % 50)) * (TAB / 100n) : BigInt(1 + (index % 75)) * (USDG / 100n);
      return workload === 'transfer'
        ? maker.make(from, other, 'transfer', token, amount)
        : maker.make(from, index % 4 === 0 ? other : from, 'swap', token, amount);
    });
    await append(store, pending);

    spent.clear();
    const started = performance.now();
    let blocks = 0;
    while ((await producer.sealNext()) !== null) blocks += 1;
    const seal_s = (performance.now() - started) / 1000;
    const confirmed = outcomes.get(`${workload} confirmed none`) ?? 0;
    if (confirmed !== options.transactions) throw new Error(`${workload}: ${confirmed} of ${options.transactions} confirmed: ${JSON.stringify(Object.fromEntries(outcomes))}`);
    return {
      workload, transactions: options.transactions, confirmed, blocks, seal_s: Number(seal_s.toFixed(2)),
      transactions_per_s: Math.round(options.transactions / seal_s), ms_per_block: Math.round((seal_s * 1000) / blocks),
      steps_ms: Object.fromEntries([...spent].sort(([, a], [, b]) => b - a).map(([name, ms]) => [name, Math.round(ms)])),
    };
  } finally {
    await cleanup();
  }
}

function transactionMaker() {
  let nonce = 0;
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    make(from: string, to: string, type: TransactionType, token: string, amount_units: bigint): Transaction {
      nonce += 1;
      const preimage = { from, to, amount_units, token, type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp, ...(type === 'swap' ? { min_receive_units: null } : {}) };
      return pendingTransaction(preimage, type === 'swap' ? (token === 'TAB' ? 'USDG' : 'TAB') : null);
    },
  };
}

async function append(store: LedgerStore, transactions: Transaction[]): Promise<void> {
  for (let start = 0; start < transactions.length; start += DEFAULT_WRITER_LIMITS.batch_size_max) {
    await store.appendPending(transactions.slice(start, start + DEFAULT_WRITER_LIMITS.batch_size_max).map((transaction) => ({ transaction, idempotency: null })));
  }
}

/** One line per workload and the ratio, for the console. */
export function describeSwapSealing(result: SwapSealingResult): string {
  const line = (entry: WorkloadResult) => `${entry.workload}s ${entry.transactions_per_s.toLocaleString('en-US')} tx/s (${entry.blocks} blocks, ${entry.ms_per_block} ms each)`;
  return `${result.store}: ${line(result.transfer)}; ${line(result.swap)}; swaps take ${result.slowdown}× as long (target ≤ 2×)`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
  const which = args[0] ?? 'both';
  const kinds: SwapStoreKind[] = which === 'both' ? ['sqlite', 'postgres'] : [which as SwapStoreKind];
  if (!kinds.every((kind) => kind === 'sqlite' || kind === 'postgres')) throw new Error(`store must be sqlite, postgres or both (got ${which})`);
  const options: SwapSealingOptions = {
    transactions: Number(args[1] ?? 50_000),
    accounts: Number(args[2] ?? 1000),
    block_txs_max: Number(args[3] ?? 10_000),
    database_url: process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? DEFAULT_DATABASE_URL,
  };
  for (const kind of kinds) {
    const result = await measureSwapSealing(kind, options);
    console.log(JSON.stringify(result));
    console.error(describeSwapSealing(result));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
