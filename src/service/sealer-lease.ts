/**
 * The right to seal blocks. Several instances may serve one database; only the holder of the lease
 * runs the block producer's loop, and the others ask again every second so that one of them takes
 * over soon after the holder dies. The lease only saves wasted work: what makes two blocks with one
 * number, a broken parent link or a transaction sealed twice impossible is the store's constraints.
 */
export interface SealerLease {
  /** Becomes or stays the holder when it can; resolves true while this instance holds the lease. */
  acquire(): Promise<boolean>;
  /** Whether this instance held the lease at the last `acquire` and has not heard otherwise since. */
  held(): boolean;
  /** Gives the lease up so that another instance can take over at once (at shutdown). */
  release(): Promise<void>;
}

/** The lease of a store that only one process can open (SQLite): that process always holds it. */
export class SoleSealerLease implements SealerLease {
  async acquire(): Promise<boolean> {
    return true;
  }

  held(): boolean {
    return true;
  }

  async release(): Promise<void> {}
}
