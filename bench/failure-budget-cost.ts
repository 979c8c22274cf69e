/**
 * What the failure budget's checks (src/failure-budget) cost each append on the submit path:
 * `npx tsx bench/failure-budget-cost.ts [sqlite] [postgres]`. Appends, in rounds that rotate their
 * order, the same number of mints (never checked: the baseline), covered transfers from funded
 * accounts, and uncovered transfers charged to a budget, one per commit (single submissions) and 100
 * per commit (group commit), and prints the median microseconds per transaction of each and the
 * difference to the baseline. PostgreSQL uses TEST_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test) in a schema of its own, dropped at the end. The machine's
 * load average is printed with the figures: on a shared machine they move with it.
 */
import { openBenchStore } from './bench-store.js';
import os from 'node:os';
import path from 'node:path';
import { genesisBlock } from '../src/domain/block.js';
import { pendingTransaction } from '../src/domain/hashing.js';
import type { Transaction, TransactionType } from '../src/domain/transaction.js';
import type { LedgerStore, PendingAppend } from '../src/service/ledger-store.js';
import { buildBlock } from '../src/domain/block.js';

const kinds = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['sqlite', 'postgres'];
const ACCOUNTS = 200;
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const SHAPES = [{ name: 'single', batch: 1, commits: 150 }, { name: 'group-100', batch: 100, commits: 15 }] as const;
const VARIANTS = ['mint (unchecked)', 'covered transfer', 'uncovered transfer'] as const;
type Variant = (typeof VARIANTS)[number];

let nonce = 0;
function transaction(from: string, to: string, type: TransactionType): Transaction {
  nonce += 1;
  return pendingTransaction({ from, to, amount_units: 1n, token: 'TAB', type, metadata: {}, nonce: nonce.toString(16).padStart(32, '0'), timestamp: Math.floor(Date.now() / 1000) });
}

function item(variant: Variant, index: number): PendingAppend {
  const failure_budget = { subject: `subject-${index % ACCOUNTS}`, per_hour: 1_000_000 };
  if (variant === 'mint (unchecked)') return { transaction: transaction('treasury', `funded-${index % ACCOUNTS}`, 'mint'), idempotency: null, failure_budget };
  if (variant === 'covered transfer') return { transaction: transaction(`funded-${index % ACCOUNTS}`, 'bob', 'transfer'), idempotency: null, failure_budget };
  return { transaction: transaction(`broke-${index % ACCOUNTS}`, 'bob', 'transfer'), idempotency: null, failure_budget };
}

/** Genesis, then one block that gives every funded account a large balance. */
async function fund(store: LedgerStore): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const genesis = genesisBlock(now);
  const totals = { transactions: 0, users: 0, transfer_volume_units: {} };
  await store.commitBlock({ header: genesis, totals, outcomes: [], balances: [], new_users: [], active_users: [] });
  const mints = Array.from({ length: ACCOUNTS }, (_, index) => transaction('treasury', `funded-${index}`, 'mint'));
  await store.appendPending(mints.map((tx) => ({ transaction: tx, idempotency: null })));
  const header = buildBlock(genesis, mints.map((tx) => tx.tx_hash), now);
  await store.commitBlock({
    header, totals, new_users: [], active_users: [],
    outcomes: mints.map((tx, position) => ({ tx_hash: tx.tx_hash, position, status: 'confirmed', error: null })),
    balances: mints.map((tx) => ({ user_id: tx.to, token: 'TAB', units: 1_000_000_000n })),
  });
}

/** Microseconds per transaction for `commits` appends of `batch` items of `variant`. */
async function measure(store: LedgerStore, variant: Variant, batch: number, commits: number): Promise<number> {
  let index = 0;
  const started = performance.now();
  for (let commit = 0; commit < commits; commit += 1) {
    await store.appendPending(Array.from({ length: batch }, () => item(variant, (index += 1))));
  }
  return ((performance.now() - started) * 1000) / (batch * commits);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

async function run(kind: string): Promise<void> {
  const { store, cleanup } = await openBenchStore(kind);
  try {
    await fund(store);
    for (const shape of SHAPES) {
      const samples = new Map<Variant, number[]>(VARIANTS.map((variant) => [variant, []]));
      await measure(store, 'covered transfer', shape.batch, Math.ceil(shape.commits / 5));
      for (let round = 0; round < ROUNDS; round += 1) {
        for (let turn = 0; turn < VARIANTS.length; turn += 1) {
          const variant = VARIANTS[(round + turn) % VARIANTS.length] as Variant;
          samples.get(variant)?.push(await measure(store, variant, shape.batch, shape.commits));
        }
      }
      const baseline = median(samples.get('mint (unchecked)') ?? []);
      for (const variant of VARIANTS) {
        const us = median(samples.get(variant) ?? []);
        console.log(JSON.stringify({
          store: kind, shape: shape.name, variant, us_per_transaction: Math.round(us), vs_unchecked_us: Math.round(us - baseline),
          vs_unchecked_percent: Math.round(((us - baseline) / baseline) * 1000) / 10, rounds: ROUNDS, load_average: os.loadavg().map((value) => Math.round(value * 100) / 100),
        }));
      }
    }
  } finally {
    await cleanup();
  }
}

for (const kind of kinds) await run(kind);
