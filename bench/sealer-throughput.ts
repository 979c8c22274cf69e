/**
 * How fast one sealer and one instance's appends go on each store: `npx tsx bench/sealer-throughput.ts
 * [sqlite|postgres] [transactions] [accounts] [block_txs_max] [--without-balance-commitments]`. Appends
 * `transactions` pending transfers among `accounts` (default 1000) in batches of the submission
 * writer's size (after minting opening balances), then seals them with the block producer at
 * `block_txs_max` (default 10000) keeping the balance commitment as the service does (the flag leaves
 * it out, to measure its cost: the service itself always keeps it), and prints transactions per
 * second for both. PostgreSQL uses
 * TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) in a schema of its own, dropped
 * at the end. Numbers are for the machine it runs on; docs/operations.md says what they mean.
 */
import { openBenchStore, transactionMaker } from './bench-store.js';
import os from 'node:os';
import pino from 'pino';
import { BalanceCommitmentKeeper } from '../src/balance-commitments/balance-commitment-keeper.js';
import { BlockProducer } from '../src/service/block-producer.js';
import { DEFAULT_WRITER_LIMITS } from '../src/service/submission-writer.js';

const args = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const kind = args[0] ?? 'postgres';
const count = Number(args[1] ?? 50_000);
const ACCOUNTS = Number(args[2] ?? 1000);
const BLOCK_TXS_MAX = Number(args[3] ?? 10_000);
const COMMITMENTS = !process.argv.includes('--without-balance-commitments');
const clock = { now_ms: () => Date.now() };

const transaction = transactionMaker();

async function main(): Promise<void> {
  const { store, cleanup } = await openBenchStore(kind);
  try {
    const logger = pino({ level: 'silent' });
    const keeper = COMMITMENTS ? new BalanceCommitmentKeeper(store, logger) : undefined;
    // The time the sealer spends in the commitment's step (updating the tree, hashing the touched paths).
    const timing = { commitment_ms: 0 };
    const commitment = keeper === undefined ? undefined : {
      prepare: async (parent: number, balances: Parameters<BalanceCommitmentKeeper['prepare']>[1]) => {
        const started = performance.now();
        try {
          return await keeper.prepare(parent, balances);
        } finally {
          timing.commitment_ms += performance.now() - started;
        }
      },
      prove: keeper.prove.bind(keeper),
    };
    const producer = new BlockProducer(store, clock, logger, { block_interval_ms: 1000, block_txs_max: BLOCK_TXS_MAX }, commitment === undefined ? {} : { commitment });
    await producer.ensureGenesis();
    await keeper?.start();
    const account = (index: number) => `account-${index}`;
    for (let start = 0; start < ACCOUNTS; start += DEFAULT_WRITER_LIMITS.batch_size_max) {
      const size = Math.min(DEFAULT_WRITER_LIMITS.batch_size_max, ACCOUNTS - start);
      await store.appendPending(Array.from({ length: size }, (_, index) => ({ transaction: transaction('treasury', account(start + index), 'mint', 1_000_000n), idempotency: null })));
    }
    await producer.drain();

    const transfers = Array.from({ length: count }, (_, index) => transaction(account(index % ACCOUNTS), account((index * 7 + 1) % ACCOUNTS), 'transfer', BigInt(1 + (index % 50))));
    const append_started = performance.now();
    for (let start = 0; start < transfers.length; start += DEFAULT_WRITER_LIMITS.batch_size_max) {
      await store.appendPending(transfers.slice(start, start + DEFAULT_WRITER_LIMITS.batch_size_max).map((tx) => ({ transaction: tx, idempotency: null })));
    }
    const append_s = (performance.now() - append_started) / 1000;

    timing.commitment_ms = 0;
    const seal_started = performance.now();
    let blocks = 0;
    while ((await producer.sealNext()) !== null) blocks += 1;
    const seal_s = (performance.now() - seal_started) / 1000;
    console.log(JSON.stringify({
      store: kind, balance_commitments: COMMITMENTS, accounts: ACCOUNTS, transactions: count, append_batch: DEFAULT_WRITER_LIMITS.batch_size_max, appends_per_s: Math.round(count / append_s),
      block_txs_max: BLOCK_TXS_MAX, blocks, seals_per_s: Math.round(count / seal_s), ms_per_block: Math.round((seal_s * 1000) / blocks),
      commitment_ms_per_block: Math.round(timing.commitment_ms / blocks), commitment_share: Number((timing.commitment_ms / (seal_s * 1000)).toFixed(3)),
      load_average: os.loadavg().map((value) => Number(value.toFixed(1))),
    }));
  } finally {
    await cleanup();
  }
}

await main();
