/**
 * What an account's history page costs the store alone: `npx tsx bench/history-read.ts [sqlite|postgres]
 * [transactions] [accounts] [reads]`. Appends and seals `transactions` transfers between `accounts`
 * accounts (as bench/seal-steps.ts does), then reads `reads` pages of 20 of random accounts' histories
 * and prints µs per page (JSON): the page's entries alone (what a page whose sealed records the read
 * cache holds costs the store), the entries with every record read (a page the cache holds none of),
 * and the account's newest row number alone (what a page kept whole costs).
 */
import os from 'node:os';
import pino from 'pino';
import { openBenchStore, transactionMaker } from './bench-store.js';
import { BlockProducer } from '../src/service/block-producer.js';

const [kind = 'sqlite', transactions_text = '300000', accounts_text = '1000', reads_text = '5000'] = process.argv.slice(2);
const count = Number(transactions_text);
const accounts = Number(accounts_text);
const reads = Number(reads_text);
const APPEND_BATCH = 2000;
const PAGE = 20;

const transaction = transactionMaker();

async function main(): Promise<void> {
  const { store, cleanup } = await openBenchStore(kind);
  try {
    const producer = new BlockProducer(store, { now_ms: () => Date.now() }, pino({ level: 'silent' }), { block_interval_ms: 1000, block_txs_max: 100_000 });
    await producer.ensureGenesis();
    const account = (index: number) => `account-${index}`;
    await store.appendPending(Array.from({ length: accounts }, (_, index) => ({ transaction: transaction('treasury', account(index), 'mint', 1_000_000n), idempotency: null })));
    for (let start = 0; start < count; start += APPEND_BATCH) {
      await store.appendPending(Array.from({ length: Math.min(APPEND_BATCH, count - start) }, (_, offset) => {
        const index = start + offset;
        return { transaction: transaction(account(index % accounts), account((index * 7 + 1) % accounts), 'transfer', 1n), idempotency: null };
      }));
    }
    await producer.drain();
    let rows = 0;
    let started = performance.now();
    for (let index = 0; index < reads; index += 1) rows += (await store.accountHistory(account((index * 7919) % accounts), null, PAGE)).length;
    const entries_ms = performance.now() - started;
    started = performance.now();
    for (let index = 0; index < reads; index += 1) {
      const entries = await store.accountHistory(account((index * 7919) % accounts), null, PAGE);
      await store.transactionsByHash(entries.map((entry) => entry.tx_hash));
    }
    const records_ms = performance.now() - started;
    started = performance.now();
    for (let index = 0; index < reads; index += 1) await store.newestAccountSeq(account((index * 7919) % accounts), null);
    const newest_ms = performance.now() - started;
    const per_page = (elapsed_ms: number) => Number(((elapsed_ms * 1000) / reads).toFixed(1));
    console.log(JSON.stringify({
      store: kind, transactions: count, accounts, reads, rows_per_page: rows / reads,
      us_per_page_entries: per_page(entries_ms), us_per_page_with_records: per_page(records_ms), us_per_newest_seq: per_page(newest_ms), load_average: Number(os.loadavg()[0]?.toFixed(2)),
    }));
  } finally {
    await cleanup();
  }
}

await main();
