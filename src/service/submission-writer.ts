/**
 * Group commit for submissions: appends that arrive while a commit is being written wait for the
 * next one and share it, so durability costs one fsync per batch rather than one per request. Each
 * caller's promise settles only after its own batch is committed. The items of one `appendMany`
 * call are never split between commits: they are stored together or not at all. A commit that meets a
 * storage fault refuses the appends queued behind it with the same fault.
 */
import { OverloadedError, StorageUnavailableError } from '../domain/shared/errors.js';
import type { AppendResult, LedgerStore, PendingAppend } from './ledger-store.js';

type Waiter = { items: readonly PendingAppend[]; resolve: (results: AppendResult[]) => void; reject: (error: unknown) => void };

export type SubmissionWriterLimits = {
  /** Appends written in one store commit at the most (a single larger `appendMany` gets a commit of its own). */
  batch_size_max: number;
  /** Appends waiting for a commit at the most; beyond it submissions are refused with 503. */
  queue_length_max: number;
};

export const DEFAULT_WRITER_LIMITS: SubmissionWriterLimits = { batch_size_max: 2000, queue_length_max: 20_000 };

export class SubmissionWriter {
  private readonly store: LedgerStore;
  private readonly limits: SubmissionWriterLimits;
  private queue: Waiter[] = [];
  /** Appends in `queue`, summed over its waiters. */
  private queued_items = 0;
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  /** Told after every commit (e.g. the event hub, which then reads the events the commit numbered). */
  private readonly on_committed: () => void;

  constructor(store: LedgerStore, limits: SubmissionWriterLimits = DEFAULT_WRITER_LIMITS, on_committed: () => void = () => undefined) {
    this.store = store;
    this.limits = limits;
    this.on_committed = on_committed;
  }

  /** Appends waiting for a commit (the pending queue depth of the write path). */
  get queue_length(): number {
    return this.queued_items;
  }

  append(item: PendingAppend): Promise<AppendResult> {
    return this.appendMany([item]).then((results) => results[0] as AppendResult);
  }

  /** Appends several items that are committed together, in order, in one store transaction. */
  appendMany(items: readonly PendingAppend[]): Promise<AppendResult[]> {
    if (items.length === 0) return Promise.resolve([]);
    if (this.queued_items + items.length > this.limits.queue_length_max) {
      return Promise.reject(new OverloadedError('service_overloaded', 'too many submissions are waiting to be written; retry shortly', 1));
    }
    const promise = new Promise<AppendResult[]>((resolve, reject) => this.queue.push({ items, resolve, reject }));
    this.queued_items += items.length;
    this.schedule();
    return promise;
  }

  /** Resolves once everything queued so far is committed. */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.flushing !== null) {
      if (this.flushing !== null) await this.flushing;
      else await this.flush();
    }
  }

  private schedule(): void {
    if (this.scheduled || this.flushing !== null) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private flush(): Promise<void> {
    const batch = this.takeBatch();
    if (batch.length === 0) return Promise.resolve();
    this.flushing = this.write(batch).finally(() => {
      this.flushing = null;
      if (this.queue.length > 0) this.schedule();
    });
    return this.flushing;
  }

  /** Whole waiters from the head of the queue, up to `batch_size_max` appends (at least one waiter). */
  private takeBatch(): Waiter[] {
    let count = 0;
    let taken = 0;
    while (taken < this.queue.length) {
      const size = (this.queue[taken] as Waiter).items.length;
      if (taken > 0 && count + size > this.limits.batch_size_max) break;
      count += size;
      taken += 1;
    }
    this.queued_items -= count;
    return this.queue.splice(0, taken);
  }

  private async write(batch: Waiter[]): Promise<void> {
    const items = batch.length === 1 ? (batch[0] as Waiter).items : batch.flatMap((waiter) => waiter.items);
    try {
      const results = await this.store.appendPending(items);
      this.on_committed();
      let offset = 0;
      for (const waiter of batch) {
        waiter.resolve(results.slice(offset, offset + waiter.items.length));
        offset += waiter.items.length;
      }
    } catch (error) {
      for (const waiter of batch) waiter.reject(error);
      if (error instanceof StorageUnavailableError) this.rejectQueued(error);
    }
  }

  /**
   * A storage fault (disk full, a lost or partitioned database) is the storage's, not this commit's: the
   * appends queued behind it would each wait for a commit of their own only to meet it again after
   * their own timeouts (three submissions through a partitioned instance got their 503 at 13, 23 and 23 s
   * with 3 s query deadlines). They are refused with it now; nothing of theirs was written.
   */
  private rejectQueued(error: StorageUnavailableError): void {
    const waiting = this.queue.splice(0);
    this.queued_items = 0;
    for (const waiter of waiting) waiter.reject(error);
  }
}
