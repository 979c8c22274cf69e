/**
 * Keeps the balance tree of this instance in memory, at the newest sealed block: built from the
 * stored balances at start, advanced by the sealer before each block is written (the root goes into
 * the block's commit), and brought up to date from the store by an instance that does not seal (or
 * after a failed seal) from the pairs the newer blocks touched. Trees are immutable: a proof is made
 * from the state it started with while the next block is prepared.
 */
import type { Logger } from 'pino';
import {
  BalanceTree, balanceEntryJson, balanceKey, balanceRootHex, type BalanceEntry, type BalanceProofJson,
} from '../domain/balance-commitment.js';
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
  private syncing: Promise<State> | null = null;

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
    const state = await this.rebuild();
    const root = balanceRootHex(state.tree);
    const stored = await this.store.claimBalanceRoot(state.block_number, root);
    if (stored !== root) this.logger.error({ block_number: state.block_number, stored, computed: root }, 'the stored balance root differs from the stored balances: run the audit');
    this.logger.info({ block_number: state.block_number, balance_root: root, duration_ms: Math.round(performance.now() - started_ms) }, 'balance tree built');
  }

  async prepare(parent_number: number, balances: readonly BalanceChange[]): Promise<PreparedBalanceRoot> {
    const base = await this.stateAt(parent_number);
    const next: State = { block_number: parent_number + 1, tree: base.tree.update(balances.map((balance) => this.entry(balance))) };
    return { balance_root: balanceRootHex(next.tree), written: () => this.advance(next) };
  }

  async prove(user_id: string, tokens: readonly string[]): Promise<BalanceProofJson> {
    // The newest sealed block as of this request, or a newer one if another instance sealed meanwhile.
    const latest = await this.store.latestBlockNumber();
    const state = this.state !== null && latest !== null && this.state.block_number >= latest ? this.state : await this.sync();
    const entries = tokens.map((token) => {
      const key = balanceKey(sha256, user_id, token);
      return balanceEntryJson(token, key, state.tree.prove(key));
    });
    return { block_number: state.block_number, balance_root: balanceRootHex(state.tree), entries };
  }

  /** The state after block `block_number`, brought up to date from the store when this instance is behind. */
  private async stateAt(block_number: number): Promise<State> {
    if (this.state !== null && this.state.block_number === block_number) return this.state;
    const state = await this.sync();
    if (state.block_number !== block_number) {
      throw new Error(`the balance tree is at block ${state.block_number}, not at block ${block_number}: another instance sealed meanwhile`);
    }
    return state;
  }

  private advance(next: State): void {
    if (this.state === null || this.state.block_number < next.block_number) this.state = next;
  }

  /** One catch-up at a time; callers that arrive meanwhile share it. */
  private sync(): Promise<State> {
    if (this.syncing === null) {
      this.syncing = this.catchUp().finally(() => {
        this.syncing = null;
      });
    }
    return this.syncing;
  }

  private async catchUp(): Promise<State> {
    const current = this.state;
    const latest = await this.store.latestBlockNumber();
    if (current === null || latest === null || latest - current.block_number > CATCH_UP_BLOCKS_MAX || latest < current.block_number) return this.rebuild();
    if (latest === current.block_number) return current;
    const changes = await this.store.balanceChangesSince(current.block_number);
    // The pairs those blocks' transactions name, with their stored balance (a zero removes the leaf). A
    // pair without a row is left out: rows are never deleted, so it was absent before too.
    const next: State = { block_number: changes.block_number, tree: current.tree.update(changes.balances.map((change) => this.entry(change))) };
    await this.checkStoredRoot(next);
    this.advance(next);
    return this.state as State;
  }

  private async rebuild(): Promise<State> {
    const snapshot = await this.store.balanceState();
    const block_number = snapshot?.block_number ?? -1;
    const tree = BalanceTree.empty(sha256).update((snapshot?.balances ?? []).map((balance) => this.entry(balance)));
    const state: State = { block_number, tree };
    if (block_number >= 0) await this.checkStoredRoot(state);
    this.state = state;
    return state;
  }

  /** A stored root that differs from the stored balances is a corrupted database: said loudly, the audit tells where. */
  private async checkStoredRoot(state: State): Promise<void> {
    const stored = await this.store.balanceRoot(state.block_number);
    const computed = balanceRootHex(state.tree);
    if (stored !== null && stored !== computed) {
      this.logger.error({ block_number: state.block_number, stored, computed }, 'the stored balance root differs from the stored balances: run the audit');
    }
  }

  private entry(balance: BalanceChange): BalanceEntry {
    return { key: balanceKey(sha256, balance.user_id, balance.token), units: balance.units };
  }
}
