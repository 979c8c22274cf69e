/**
 * Checkpoints the SQLite store's WAL on a worker thread with a connection of its own, so that copying
 * the WAL's pages back into the database file, and the two fsyncs that make the copy durable, never
 * stop the event loop.
 *
 * By default SQLite checkpoints inside the commit that takes the WAL past 1,000 pages: better-sqlite3
 * runs the commit on the event loop, so that commit also copies every page the WAL holds and fsyncs
 * the WAL and the database file. Under batch load every group commit dirties thousands of index pages
 * (the `tx_hash` index and the per-account indexes are written at random places), so every commit
 * paid for a checkpoint: 36 µs of a transaction's 50 µs in the commit at 200,000 rows (measured; see
 * docs/performance.md, "SQLite's checkpoints off the event loop").
 *
 * The store's connection runs with `wal_autocheckpoint = 0`; after each append and block commit it
 * tells this checkpointer, which starts a PASSIVE checkpoint on the worker each time the WAL file has
 * grown by `start_bytes` (and, for writes that never say, once a second). A PASSIVE checkpoint never blocks a
 * writer, so commits go on meanwhile; their frames are left for the next checkpoint, and the WAL can
 * only start over from its beginning once a checkpoint has copied every frame with no commit in
 * between. So that the WAL stays bounded, a large write (an append, a block) waits, without holding
 * the event loop, while the WAL is past `limit_bytes` and not yet fully copied. `journal_size_limit` makes
 * SQLite truncate the file back to `start_bytes` when it starts over, so its size is what is in use.
 *
 * Durability is SQLite's own: the worker's connection is synchronous=FULL (the WAL fsynced before the
 * copy, the database after it), and SQLite reuses the WAL only after that. If the worker fails (it
 * cannot start, or dies), the store's connection goes back to SQLite's own checkpoints in the commit.
 */
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { SQLITE_DRIVER_PATH } from './sqlite-driver.js';

export type WalCheckpointLimits = {
  /** A checkpoint starts each time the WAL file has grown by this much (SQLite's own default is 1,000 pages, about 4 MiB). */
  start_bytes: number;
  /** Past this size, appends and block commits wait until a checkpoint has copied the whole WAL. */
  limit_bytes: number;
  /** How often writes that do not report their commits (webhooks, settings) are caught up with. */
  tick_ms: number;
  /** After a failed checkpoint (a full disk, say), none is started for this long. */
  retry_ms: number;
  /** Rounds of checkpoints a write waits for at most before it goes ahead anyway. */
  wait_rounds_max: number;
};

export const DEFAULT_WAL_CHECKPOINT_LIMITS: WalCheckpointLimits = {
  start_bytes: 4 * 2 ** 20,
  limit_bytes: 64 * 2 ** 20,
  tick_ms: 1000,
  retry_ms: 1000,
  wait_rounds_max: 8,
};

/** What the metrics report (src/metrics). */
export type WalCheckpointStats = {
  /** Checkpoints that copied every frame the WAL held when they started, and those that could not (a reader held some). */
  completed: number;
  partial: number;
  failed: number;
  /** Appends and block commits that waited for a checkpoint because the WAL was past its limit. */
  write_waits: number;
  /** The WAL file's size after the last commit reported. */
  wal_bytes: number;
  /** False once the worker failed and SQLite checkpoints in the commit again. */
  off_loop: boolean;
};

/**
 * How long `close` waits for the worker to end by itself before it terminates it. The worker reads the
 * close message only once its script has run, which takes milliseconds; the bound is for a worker that
 * hangs.
 */
const WORKER_CLOSE_TIMEOUT_MS = 10_000;

type CheckpointReply = { id: number; busy: number; log: number; checkpointed: number } | { id: number; error: { code: string | null; message: string } };

/**
 * The worker: CommonJS, evaluated (so the same code runs from src under the tests and from dist), with
 * the SQLite driver the main thread loads (./sqlite-driver.ts), from where it resolved it.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver_path);
const db = new Database(workerData.database_path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('synchronous = FULL');
parentPort.on('message', (id) => {
  if (id === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ id, busy: row.busy, log: row.log, checkpointed: row.checkpointed });
  } catch (error) {
    parentPort.postMessage({ id, error: { code: typeof error.code === 'string' ? error.code : null, message: String(error.message) } });
  }
});
`;

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly wal_path: string;
  private readonly limits: WalCheckpointLimits;
  private readonly logger: Logger | null;
  /** Called once if the worker fails: the store's connection checkpoints in the commit again. */
  private readonly fall_back: () => void;
  private readonly tick: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private pending_reply: ((reply: CheckpointReply) => void) | null = null;
  private next_id = 1;
  /** Commits reported so far: a checkpoint that saw none during its run has copied the whole WAL. */
  private commits = 0;
  private caught_up = true;
  /** The last checkpoint could not copy every frame: a reader's snapshot still needs some. */
  private held_by_reader = false;
  /** The WAL's size when the last checkpoint started. */
  private checkpoint_start_bytes = 0;
  /** The WAL's size at the last tick: writes that do not report their commits show as a change of it. */
  private polled_bytes = 0;
  /** No checkpoint starts before this moment (`performance.now()`) after one failed. */
  private retry_after_ms = 0;
  private closed = false;
  private exited = false;
  private readonly stats: WalCheckpointStats = { completed: 0, partial: 0, failed: 0, write_waits: 0, wal_bytes: 0, off_loop: true };

  constructor(database_path: string, limits: WalCheckpointLimits, logger: Logger | null, fall_back: () => void) {
    this.wal_path = `${database_path}-wal`;
    this.limits = limits;
    this.logger = logger;
    this.fall_back = fall_back;
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver_path: SQLITE_DRIVER_PATH, database_path } });
    this.worker.unref();
    this.worker.on('message', (reply: CheckpointReply) => this.pending_reply?.(reply));
    this.worker.on('error', (error) => this.workerFailed(error));
    this.worker.on('exit', (code) => {
      this.exited = true;
      this.workerFailed(new Error(`the checkpoint worker exited with code ${code}`));
    });
    this.tick = setInterval(() => this.poll(), limits.tick_ms);
    this.tick.unref();
  }

  snapshot(): WalCheckpointStats {
    return { ...this.stats };
  }

  /** After a commit: the WAL has grown; start a checkpoint if it grew by its start size since the last one and none runs. */
  committed(): void {
    if (!this.stats.off_loop) return;
    this.commits += 1;
    this.caught_up = false;
    this.stats.wal_bytes = walBytes(this.wal_path);
    if (this.mayStart() && this.grownSinceLastCheckpoint()) void this.start();
  }

  /** No checkpoint runs, the checkpointer is open, and no pause after a failed one is under way. */
  private mayStart(): boolean {
    return this.running === null && !this.closed && performance.now() >= this.retry_after_ms;
  }

  /**
   * Whether the WAL has grown by `start_bytes` since the last checkpoint started (or, when it has started
   * over since, past `start_bytes` in all): small commits add up to one checkpoint per `start_bytes` of
   * WAL, not one each (a message to the worker and a copy with two fsyncs per commit, measured).
   */
  private grownSinceLastCheckpoint(): boolean {
    const bytes = this.stats.wal_bytes;
    // The file only shrinks when the WAL starts over (journal_size_limit): then all of it is new.
    const base = bytes < this.checkpoint_start_bytes ? 0 : this.checkpoint_start_bytes;
    return bytes > this.limits.start_bytes && bytes - base >= this.limits.start_bytes;
  }

  /** Once a second: catches up with writes that do not report their commits, and retries a partial checkpoint. */
  private poll(): void {
    const bytes = walBytes(this.wal_path);
    const changed = bytes !== this.polled_bytes;
    this.polled_bytes = bytes;
    this.stats.wal_bytes = bytes;
    if (this.mayStart() && bytes > this.limits.start_bytes && (changed || !this.caught_up)) void this.start();
  }

  /** Before a large write: resolves at once unless the WAL is past its limit and not yet fully copied. */
  async ready(): Promise<void> {
    let rounds = 0;
    while (this.stats.off_loop && !this.caught_up && this.stats.wal_bytes > this.limits.limit_bytes && rounds < this.limits.wait_rounds_max) {
      if (rounds === 0) this.stats.write_waits += 1;
      rounds += 1;
      if (this.running === null && !this.mayStart()) return;
      await (this.running ?? this.start());
      // A reader (a backup, an audit) holds part of the WAL: no checkpoint can copy it before it is done.
      if (this.held_by_reader) return;
    }
  }

  /** Stops the worker (its connection closes); the store's own close then checkpoints what is left. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.tick);
    await this.running;
    await this.stopWorker();
  }

  /**
   * Asks the worker to close its connection and end, and waits until it has. It is not terminated:
   * terminated while it loads the SQLite driver (better-sqlite3 13, on Node 22 and later, loads its
   * Node-API addon at the first `new Database`), the addon's start fails and aborts the whole process
   * (`FATAL ERROR: Error::New napi_get_last_error_info`; a store closed right after it opened, as tests
   * and a failed start do). The message is read only once the worker's script has run.
   */
  private async stopWorker(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage('close');
    const timer = setTimeout(() => void this.worker.terminate(), WORKER_CLOSE_TIMEOUT_MS);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
  }

  private start(): Promise<void> {
    const commits_at_start = this.commits;
    this.checkpoint_start_bytes = this.stats.wal_bytes;
    const id = this.next_id;
    this.next_id += 1;
    // Held while a checkpoint runs (a write may be waiting for it), let go of when idle.
    this.worker.ref();
    const running = new Promise<CheckpointReply>((resolve) => {
      this.pending_reply = resolve;
      this.worker.postMessage(id);
    }).then((reply) => this.finished(reply, commits_at_start));
    this.running = running;
    return running;
  }

  private finished(reply: CheckpointReply, commits_at_start: number): void {
    this.running = null;
    this.pending_reply = null;
    this.worker.unref();
    if ('error' in reply) {
      this.stats.failed += 1;
      // What it did not copy is still to copy: the next tick after the pause tries again.
      this.caught_up = false;
      this.retry_after_ms = performance.now() + this.limits.retry_ms;
      this.logger?.warn(
        { code: reply.error.code, err_message: reply.error.message, wal_bytes: this.stats.wal_bytes, retry_ms: this.limits.retry_ms },
        'a WAL checkpoint failed; nothing is lost, the WAL grows until the next one, tried after retry_ms',
      );
      return;
    }
    const complete = reply.busy === 0 && reply.log === reply.checkpointed;
    this.held_by_reader = !complete;
    if (complete) this.stats.completed += 1;
    else this.stats.partial += 1;
    // Commits that came in meanwhile are the next checkpoint's, once they add up to `start_bytes` (or a write waits for it).
    if (complete && this.commits === commits_at_start) this.caught_up = true;
  }

  private workerFailed(error: Error): void {
    if (this.closed || !this.stats.off_loop) return;
    this.stats.off_loop = false;
    clearInterval(this.tick);
    this.pending_reply?.({ id: 0, error: { code: null, message: error.message } });
    this.logger?.error({ err: error }, 'the WAL checkpoint worker failed: SQLite checkpoints in the commit again, on the event loop');
    this.fall_back();
  }
}

function walBytes(wal_path: string): number {
  try {
    return fs.statSync(wal_path).size;
  } catch {
    return 0;
  }
}
