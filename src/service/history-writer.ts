/**
 * Keeps the history tree (src/domain/shared/history-tree.ts) up to date: which stored nodes appending a block
 * reads and which it writes (the stores run this inside the block's own transaction, in one call), and
 * filling in, at start, the tree of a ledger whose blocks predate it.
 */
import { runHashSteps } from '../domain/shared/hash-steps.js';
import { sha256 } from '../domain/hashing.js';
import { hexToBytes } from '../domain/shared/hex.js';
import { appendSiblings, appendSteps, nodeKeyId, type HistoryNode, type NodeKey } from '../domain/shared/history-tree.js';
import { assert } from '../domain/shared/errors.js';
import type { LedgerStore } from './ledger-store.js';

export type HistoryLeaf = { number: number; hash: string };

/** Blocks appended to the history tree in one store transaction when filling it in. */
export const HISTORY_FILL_BATCH = 1000;

/** The stored nodes that appending block `number` reads. */
export function historySiblingKeys(number: number): NodeKey[] {
  return appendSiblings(number);
}

/**
 * The nodes that appending `leaf` writes, given the stored nodes `historySiblingKeys(leaf.number)`
 * found. A missing sibling means the tree lags the chain: an invariant violation, never a 4xx.
 */
export function historyNodesToWrite(leaf: HistoryLeaf, found: readonly HistoryNode[]): HistoryNode[] {
  const by_id = new Map(found.map((node) => [nodeKeyId(node), node.hash]));
  const siblings = historySiblingKeys(leaf.number).map((key) => {
    const hash = by_id.get(nodeKeyId(key));
    assert(hash !== undefined, `history node ${nodeKeyId(key)} must exist before block ${leaf.number} is appended`);
    return hash;
  });
  return runHashSteps(appendSteps(leaf.number, hexToBytes(leaf.hash), siblings), sha256);
}

/** Appends to the history tree every block it lacks (a ledger that predates it); returns how many. */
export async function fillHistory(store: LedgerStore): Promise<number> {
  const latest = await store.latestBlockNumber();
  if (latest === null) return 0;
  let size = await store.historySize();
  const start = size;
  while (size <= latest) {
    const last = Math.min(latest, size + HISTORY_FILL_BATCH - 1);
    const headers = (await store.listBlocks(last, last - size + 1)).reverse();
    assert(headers[0]?.number === size && headers.length === last - size + 1, `blocks ${size}..${last} must all exist`);
    await store.appendHistory(headers.map((header) => ({ number: header.number, hash: header.hash })));
    size = last + 1;
  }
  return size - start;
}
