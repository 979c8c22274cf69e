/**
 * The balance commitment's own cost, without a store: `npx tsx bench/balance-tree.ts [accounts] [touched] [blocks]`
 * builds the tree of `accounts` balances (what a start does), then applies `blocks` updates of
 * `touched` balances each (what the sealer does per block; each older tree released, as the keeper
 * does) and proves one key, printing the times of the build, of one update (the mean) and of the proof,
 * with the arena's live nodes and its arrays' size and the process's peak RSS (what many blocks of churn cost in memory).
 */
import { readFileSync } from 'node:fs';
import { balanceKey, type BalanceEntry } from '../src/domain/shared/balance-commitment.js';
import { BalanceTree } from '../src/domain/balance-tree.js';
import { sha256 } from '../src/domain/hashing.js';

const accounts = Number(process.argv[2] ?? 1_000_000);
const touched = Number(process.argv[3] ?? 200_000);
const blocks = Number(process.argv[4] ?? 1);

function entries(count: number, offset: number, units: bigint): BalanceEntry[] {
  return Array.from({ length: count }, (_, index) => ({ key: balanceKey(sha256, `account-${(index * 7919 + offset) % accounts}`, 'TAB'), units: units + BigInt(index) }));
}

/** VmHWM: the most resident memory the process has had, MiB (Linux). */
function peakRssMiB(): number | null {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return match === null ? null : Math.round(Number(match[1]) / 1024);
}

const build_started = performance.now();
let tree = BalanceTree.empty(sha256).update(entries(accounts, 0, 1n));
const build_ms = performance.now() - build_started;
let last: BalanceEntry[] = [];
let update_ms = 0;
for (let block = 0; block < blocks; block += 1) {
  last = entries(touched, 13 + block * 101, 5n + BigInt(block));
  const update_started = performance.now();
  const next = tree.update(last);
  update_ms += performance.now() - update_started;
  tree.release();
  tree = next;
}
const prove_started = performance.now();
const path = tree.prove((last[0] as BalanceEntry).key);
const prove_ms = performance.now() - prove_started;
console.log(JSON.stringify({
  accounts, touched, blocks, build_ms: Math.round(build_ms), update_ms: Number((update_ms / blocks).toFixed(2)), prove_ms: Number(prove_ms.toFixed(2)),
  proof_siblings: path.siblings.length, live_nodes: tree.memory().live_nodes, arrays_mib: Number((tree.memory().arrays_bytes / 2 ** 20).toFixed(1)), heap_mb: Math.round(process.memoryUsage().heapUsed / 1e6), peak_rss_mib: peakRssMiB(),
}));
