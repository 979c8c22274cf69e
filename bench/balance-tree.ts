/**
 * The balance commitment's own cost, without a store: `npx tsx bench/balance-tree.ts [accounts] [touched]`
 * builds the tree of `accounts` balances (what a start does), then applies one block's update of
 * `touched` balances (what the sealer does per block) and proves one key, printing the times.
 */
import { BalanceTree, balanceKey, type BalanceEntry } from '../src/domain/balance-commitment.js';
import { sha256 } from '../src/domain/hashing.js';

const accounts = Number(process.argv[2] ?? 1_000_000);
const touched = Number(process.argv[3] ?? 200_000);

function entries(count: number, offset: number, units: bigint): BalanceEntry[] {
  return Array.from({ length: count }, (_, index) => ({ key: balanceKey(sha256, `account-${(index * 7919 + offset) % accounts}`, 'TAB'), units: units + BigInt(index) }));
}

const build_started = performance.now();
const tree = BalanceTree.empty(sha256).update(entries(accounts, 0, 1n));
const build_ms = performance.now() - build_started;
const block = entries(touched, 13, 5n);
const update_started = performance.now();
const next = tree.update(block);
const update_ms = performance.now() - update_started;
const prove_started = performance.now();
const path = next.prove((block[0] as BalanceEntry).key);
const prove_ms = performance.now() - prove_started;
console.log(JSON.stringify({
  accounts, touched, build_ms: Math.round(build_ms), update_ms: Math.round(update_ms), prove_ms: Number(prove_ms.toFixed(2)),
  proof_siblings: path.siblings.length, heap_mb: Math.round(process.memoryUsage().heapUsed / 1e6),
}));
