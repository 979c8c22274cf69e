/**
 * Keeps the balance tree of this instance in memory, at the newest sealed block: built from the
 * stored balances at start, advanced by the sealer before each block is written (the root goes into
 * the block's commit), and brought up to date from the store by an instance that does not seal (or
 * after a failed seal) from the pairs the newer blocks touched. Trees are persistent: a proof is made
 * from the current state while the next block is prepared beside it.
 *
 * The keeper owns its trees (src/domain/balance-tree.ts): it releases a state's tree when a newer state
 * replaces it, and a prepared tree when the block it was prepared for is never written. Every read of
 * a tree happens in the same synchronous step as reading `this.state`, so no tree is read after an
 * `await` that may have replaced (and released) it.
 */
import type { Logger } from 'pino';
import { balanceEntryJson, balanceKey, type BalanceEntry, type BalanceProofJson } from '../domain/shared/balance-commitment.js';
import { BalanceTree, balanceRootHex, type BalanceTreeMemory } from '../domain/balance-tree.js';
import { sha256 } from '../domain/hashing.js';
import type { BalanceCommitment, PreparedBalanceRoot } from '../service/balance-commitment.js';
import type { BalanceChange, LedgerStore } from '../service/ledger-store.js';

/** An instance this many blocks behind rebuilds the tree from every balance instead of replaying the changes. */
const CATCH_UP_BLOCKS_MAX = 1000;

type State = { block_number: number; tree: BalanceTree };

export class BalanceCommitmentKeeper implements BalanceCommitment {
  private readonly store: LedgerStore;
  private readonly logger: Logger;
  private state: State | null = null;
  /** The tree of a block prepared and not written yet. */
  private prepared: BalanceTree | null = null;
  private syncing: Promise<void> | null = null;

  constructor(store: LedgerStore, logger: Logger) {
    this.store = store;
    this.logger = logger;
  }

  /**
   * Builds the tree from the stored balances and stores the newest block's root when it has none (a
   * ledger sealed before balance commitments: its older blocks keep none). Call after genesis.
   */
  async start(): Promise<void> {
    const started_ms = performance.now();
    const built = await this.rebuild();
    const stored = await this.store.claimBalanceRoot(built.block_number, built.balance_root);
    if (stored !== built.balance_root) {
      this.logger.error({ block_number: built.block_number, stored, computed: built.balance_root }, 'the stored balance root differs from the stored balances: run the audit');
    }
    this.logger.info({ block_number: built.block_number, balance_root: built.balance_root, duration_ms: Math.round(performance.now() - started_ms) }, 'balance tree built');
  }

  async prepare(parent_number: number, balances: readonly BalanceChange[]): Promise<PreparedBalanceRoot> {
    if (this.state?.block_number !== parent_number) await this.sync();
    const base = this.state;
    if (base === null || base.block_number !== parent_number) {
      throw new Error(`the balance tree is at block ${base?.block_number ?? 'none'}, not at block ${parent_number}: another instance sealed meanwhile`);
    }
    // A block prepared before and never written (its write failed): nothing will read its tree.
    this.prepared?.release();
    const next: State = { block_number: parent_number + 1, tree: base.tree.update(balances.map((balance) => this.entry(balance))) };
    this.prepared = next.tree;
    return { balance_root: balanceRootHex(next.tree), written: () => this.advance(next) };
  }

  async prove(user_id: string, tokens: readonly string[]): Promise<BalanceProofJson> {
    // The newest sealed block as of this request, or a newer one if another instance sealed meanwhile.
    const latest = await this.store.latestBlockNumber();
    if (this.state === null || latest === null || this.state.block_number < latest) await this.sync();
    const state = this.state as State;
    const entries = tokens.map((token) => {
      const key = balanceKey(sha256, user_id, token);
      return balanceEntryJson(token, key, state.tree.prove(key));
    });
    return { block_number: state.block_number, balance_root: balanceRootHex(state.tree), entries };
  }

  /** The nodes the trees hold (the current state's and a prepared block's, sharing most of them). */
  memory(): BalanceTreeMemory | null {
    return this.state?.tree.memory() ?? null;
  }

  /** Makes `next` the state if it is newer (releasing the one it replaces); else releases `next`. */
  private advance(next: State): void {
    if (this.prepared === next.tree) this.prepared = null;
    const previous = this.state;
    if (previous !== null && previous.block_number >= next.block_number) {
      next.tree.release();
      return;
    }
    this.state = next;
    previous?.tree.release();
  }

  private replace(state: State): void {
    const previous = this.state;
    this.state = state;
    if (previous !== null && previous.tree !== state.tree) previous.tree.release();
  }

  /** One catch-up at a time; callers that arrive meanwhile share it. */
  private sync(): Promise<void> {
    if (this.syncing === null) {
      this.syncing = this.catchUp().finally(() => {
        this.syncing = null;
      });
    }
    return this.syncing;
  }

  private async catchUp(): Promise<void> {
    const latest = await this.store.latestBlockNumber();
    const current = this.state;
    if (current === null || latest === null || latest - current.block_number > CATCH_UP_BLOCKS_MAX || latest < current.block_number) {
      await this.rebuild();
      return;
    }
    if (latest === current.block_number) return;
    const changes = await this.store.balanceChangesSince(current.block_number);
    // The pairs those blocks' transactions name, with their stored balance (a zero removes the leaf). A
    // pair without a row is left out: rows are never deleted, so it was absent before too.
    const base = this.state;
    if (base === null || base.block_number !== current.block_number) return; // the state moved on meanwhile: it is newer
    const next: State = { block_number: changes.block_number, tree: base.tree.update(changes.balances.map((change) => this.entry(change))) };
    const balance_root = balanceRootHex(next.tree);
    this.advance(next);
    await this.checkStoredRoot(next.block_number, balance_root);
  }

  private async rebuild(): Promise<{ block_number: number; balance_root: string }> {
    const snapshot = await this.store.balanceState();
    const block_number = snapshot?.block_number ?? -1;
    const tree = BalanceTree.empty(sha256).update((snapshot?.balances ?? []).map((balance) => this.entry(balance)));
    const balance_root = balanceRootHex(tree);
    this.replace({ block_number, tree });
    if (block_number >= 0) await this.checkStoredRoot(block_number, balance_root);
    return { block_number, balance_root };
  }

  /** A stored root that differs from the stored balances is a corrupted database: said loudly, the audit tells where. */
  private async checkStoredRoot(block_number: number, computed: string): Promise<void> {
    const stored = await this.store.balanceRoot(block_number);
    if (stored !== null && stored !== computed) {
      this.logger.error({ block_number, stored, computed }, 'the stored balance root differs from the stored balances: run the audit');
    }
  }

  private entry(balance: BalanceChange): BalanceEntry {
    return { key: balanceKey(sha256, balance.user_id, balance.token), units: balance.units };
  }
}
