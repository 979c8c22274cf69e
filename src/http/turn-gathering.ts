/**
 * The answers of a transaction or block lookup (from the sealed-record cache, or one store read, which on
 * SQLite answers at once) are written together at the end of the event loop's turn, as every answer that
 * reads the store's newest state already is (that read is shared per turn: src/store/coalesced-read.ts).
 * On loopback (a proxy or a client on the same host) writing a socket runs the reader's side of TCP in
 * the writer's system call, and wakes the reader when it sleeps: answers written one by one between the
 * turn's requests wake it for each, answers written in a burst find it awake. Measured on a 2-core
 * machine (docs/performance.md, "Answers from memory written at the end of the turn"): a cached
 * transaction's lookup went from 10–15k to 26–29k answers a second at 64 connections, a pending one's
 * (a client polling for its confirmation) from 7k to 17k. The first such answer of a turn is written at
 * once, so a lone request (nothing else in the turn) waits for nothing.
 */
export class TurnGathering {
  /** Settled at the end of the turn in which the first answer of it was written; null when none was yet. */
  private turn_end: Promise<void> | null = null;

  /** Null when the caller may write now (the first answer of this turn); otherwise the end of the turn, to write after. */
  wait(): Promise<void> | null {
    if (this.turn_end !== null) return this.turn_end;
    this.turn_end = new Promise<void>((resolve) => {
      setImmediate(() => {
        this.turn_end = null;
        resolve();
      });
    });
    return null;
  }
}
