/**
 * Proofs over the history tree (src/domain/shared/history-tree.ts): history roots, block inclusion and
 * consistency between two sizes, each from the O(log n) stored nodes it needs, read in one query.
 */
import { InvalidRequestError, NotFoundError } from '../domain/shared/errors.js';
import { runHashSteps } from '../domain/shared/hash-steps.js';
import { sha256 } from '../domain/hashing.js';
import { toHashHex } from '../domain/shared/hex.js';
import { compositesSteps, consistencyPlan, inclusionPlan, nodeKeyId, nodesNeeded, rootPlan, type Composite } from '../domain/shared/history-tree.js';
import type { BlockHeader } from '../domain/block.js';
import type { LedgerStore } from './ledger-store.js';

export type HistoryInclusion = { size: number; history_root: string; leaf_index: number; audit_path: string[] };
export type BlockHistoryProof = { block_number: number; block_hash: string; size: number; leaf_index: number; audit_path: string[] };
export type ConsistencyProof = { from: number; to: number; proof: string[] };
export type HistoryHead = { size: number; history_root: string; block: BlockHeader };

export class HistoryService {
  constructor(private readonly store: LedgerStore) {}

  /** The number of blocks the history holds (what `size` defaults to). */
  async size(): Promise<number> {
    return this.store.historySize();
  }

  /** `size` checked against the sealed history; null means the latest. */
  async resolveSize(size: number | null): Promise<number> {
    const latest = await this.store.historySize();
    if (size === null) {
      if (latest === 0) throw new NotFoundError('history_size_not_reached', 'no block is sealed yet');
      return latest;
    }
    if (!Number.isSafeInteger(size) || size < 1) throw new InvalidRequestError('invalid_history_size', 'a history size is an integer ≥ 1', 'size');
    if (size > latest) throw new NotFoundError('history_size_not_reached', `the history holds ${latest} blocks, not ${size}`);
    return size;
  }

  async head(size: number | null): Promise<HistoryHead> {
    const resolved = await this.resolveSize(size);
    const [root] = await this.composites([rootPlan(resolved)]);
    const block = await this.store.getBlock(resolved - 1);
    if (block === null || root === undefined) throw new Error(`block ${resolved - 1} of the history is missing`);
    const { transactions: _transactions, ...header } = block;
    return { size: resolved, history_root: toHashHex(root), block: header };
  }

  /** Inclusion of block `number` in the history of `size` blocks (null: the latest), with that history's root. */
  async inclusion(number: number, size: number | null): Promise<HistoryInclusion> {
    const resolved = await this.resolveSize(size);
    if (number >= resolved) throw new InvalidRequestError('block_not_in_history', `block ${number} is not in the history of ${resolved} blocks`, 'size');
    const plan = inclusionPlan(number, resolved);
    const [root, ...path] = await this.composites([rootPlan(resolved), ...plan]);
    return { size: resolved, history_root: toHashHex(root as Uint8Array), leaf_index: number, audit_path: path.map(toHashHex) };
  }

  async blockProof(number: number, size: number | null): Promise<BlockHistoryProof> {
    const block = await this.store.getBlock(number);
    if (block === null) throw new NotFoundError('block_not_found', `no block has number ${number}`);
    const inclusion = await this.inclusion(number, size);
    return { block_number: number, block_hash: block.hash, size: inclusion.size, leaf_index: number, audit_path: inclusion.audit_path };
  }

  async consistency(from: number, to: number): Promise<ConsistencyProof> {
    if (!Number.isSafeInteger(from) || from < 1 || !Number.isSafeInteger(to) || from > to) {
      throw new InvalidRequestError('invalid_history_size', '`from` and `to` are integers with 1 ≤ from ≤ to', 'from');
    }
    await this.resolveSize(to);
    const proof = await this.composites(consistencyPlan(from, to));
    return { from, to, proof: proof.map(toHashHex) };
  }

  /** The hashes of `composites`, from one read of the nodes they need. */
  private async composites(composites: readonly Composite[]): Promise<Uint8Array[]> {
    const nodes = await this.store.historyNodes(nodesNeeded(composites));
    return runHashSteps(compositesSteps(composites, new Map(nodes.map((node) => [nodeKeyId(node), node.hash]))), sha256);
  }
}
