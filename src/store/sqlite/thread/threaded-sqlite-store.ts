/**
 * The SQLite store on a thread of its own, as the service runs it: every statement, group commit and
 * block commit runs on a worker thread (store-thread.ts) that owns the connection, and the event loop
 * keeps HTTP, authentication, validation, hashing and deciding blocks. better-sqlite3 is synchronous,
 * so on the loop a group commit or a block's commit stopped every other request while SQLite worked
 * (docs/performance.md, "The SQLite store on a thread of its own").
 *
 * It is the same store: the thread runs sqlite-store.ts unchanged, one connection and its in-memory
 * copies, answering calls in the order they arrive; durability is its own (a group commit answers only
 * once its WAL is fsynced), so a 202 still follows a durable commit. What the loop pays per call is the
 * handover: the arguments and the answer copied between threads, and one message each way.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Block, BlockHeader } from '../../../domain/block.js';
import type { Candle, CandleInterval } from '../../../domain/market/candles.js';
import type { HistoryNode, NodeKey } from '../../../domain/shared/history-tree.js';
import type { Transaction } from '../../../domain/transaction.js';
import { StorageUnavailableError } from '../../../domain/shared/errors.js';
import type {
  AppendResult, BalanceChange, BalanceSnapshot, BlockCommit, HistoryEntry, IdempotencyRecord, LedgerStore, PendingAppend, PendingPosting, PricedBalances,
  StatsSnapshot, StoredBlockHeader, StoredEvent,
} from '../../../service/ledger-store.js';
import type { DeliveryAttempt, EndpointChanges, NewAttempt, WebhookEndpoint, WebhookStore } from '../../../webhooks/webhook-store.js';
import { CoalescedRead } from '../../coalesced-read.js';
import type { StorageHealthReporter } from '../../storage-faults.js';
import type { WalCheckpointLimits, WalCheckpointStats } from '../wal-checkpointer.js';
import { packCommit, unpackPostings, type PackedPostings } from './bulk-codecs.js';
import {
  decodeError, PostingsNotHeld, type StoreMethod, type StoreThreadData, type StoreThreadMessage, type StoreThreadRequest, type WebhookMethod,
} from './store-thread-protocol.js';
import { storeThreadScript } from './thread-script.js';

export type ThreadedSqliteStoreOptions = {
  path: string;
  health?: StorageHealthReporter | null;
  logger?: Logger | null;
  wal_checkpoints?: WalCheckpointLimits | null;
};

/** How long `close` waits for the thread to close the store and end before it is terminated. */
const CLOSE_TIMEOUT_MS = 15_000;

type Waiting = { resolve: (value: unknown) => void; reject: (error: Error) => void };
type Opened = Extract<StoreThreadMessage, { kind: 'opened' }>;

export class ThreadedSqliteStore implements LedgerStore {
  private readonly worker: Worker;
  private readonly health: StorageHealthReporter | null;
  private readonly logger: Logger | null;
  private readonly waiting = new Map<number, Waiting>();
  private next_id = 1;
  private appended_head: number;
  private wal_checkpoint_stats: WalCheckpointStats | null;
  /** Set once the thread is gone: every call fails with it. */
  private stopped: Error | null = null;
  private closing: Promise<void> | null = null;
  /** One question a turn of the loop, however many requests ask it (as the store does on its own thread). */
  private readonly latest_block_number = new CoalescedRead(() => this.call('latestBlockNumber'));
  private readonly newest_seq = new CoalescedRead(() => this.call('newestSeq'));
  private readonly webhook_store: WebhookStore;
  /** `pendingPostings` answers by the number the thread keeps them under, for the commit that passes them on. */
  private readonly served_postings = new WeakMap<readonly PendingPosting[], number>();

  private constructor(worker: Worker, opened: Opened, options: ThreadedSqliteStoreOptions) {
    this.worker = worker;
    this.health = options.health ?? null;
    this.logger = options.logger ?? null;
    this.appended_head = opened.appended_head;
    this.wal_checkpoint_stats = opened.wal_checkpoints;
    this.webhook_store = new ThreadedWebhookStore((method, args) => this.send('webhooks', method, args));
    worker.on('message', (message: StoreThreadMessage) => this.receive(message));
    worker.on('error', (error) => this.threadStopped(error));
    worker.on('exit', (code) => this.threadStopped(new Error(`the SQLite store's thread exited with code ${code}`)));
  }

  /** Opens the store on a new thread; fails as SqliteStore.open would (StorageOpenError for an operator's problem). */
  static async open(options: ThreadedSqliteStoreOptions): Promise<ThreadedSqliteStore> {
    const data: StoreThreadData = { path: options.path, wal_checkpoints: options.wal_checkpoints };
    const script = await storeThreadScript();
    const worker = new Worker(script.url, { workerData: data, ...(script.exec_argv === undefined ? {} : { execArgv: script.exec_argv }) });
    const opened = await new Promise<Opened>((resolve, reject) => {
      const settle = () => {
        worker.off('message', receive);
        worker.off('error', fail);
        worker.off('exit', exited);
      };
      const fail = (error: Error) => {
        settle();
        reject(error);
      };
      const exited = (code: number) => fail(new Error(`the SQLite store's thread exited with code ${code} before it opened the store`));
      const receive = (message: StoreThreadMessage) => {
        if (message.kind === 'log') return writeLog(options.logger ?? null, message.line);
        settle();
        if (message.kind === 'opened') return resolve(message);
        if (message.kind === 'open_failed') return reject(decodeError(message.error));
        reject(new Error(`the SQLite store's thread said ${message.kind} before it opened the store`));
      };
      worker.on('message', receive);
      worker.on('error', fail);
      worker.on('exit', exited);
    }).catch(async (error: unknown) => {
      await worker.terminate();
      throw error;
    });
    return new ThreadedSqliteStore(worker, opened, options);
  }

  private receive(message: StoreThreadMessage): void {
    switch (message.kind) {
      case 'answer':
      case 'failed': {
        const waiting = this.waiting.get(message.id);
        if (waiting === undefined) return;
        this.waiting.delete(message.id);
        // Before the caller resumes: the submission writer reads the head right after its append.
        if (message.appended_head > this.appended_head) this.appended_head = message.appended_head;
        if (message.kind === 'answer') waiting.resolve(message.value);
        else waiting.reject(decodeError(message.error));
        return;
      }
      case 'write_failed':
        this.health?.writeFailed(message.operation, decodeError(message.error));
        return;
      case 'writes_recovered':
        this.health?.writeSucceeded();
        return;
      case 'log':
        writeLog(this.logger, message.line);
        return;
      case 'wal_checkpoints':
        this.wal_checkpoint_stats = message.stats;
        return;
      case 'opened':
      case 'open_failed':
      case 'closed':
        return;
    }
  }

  /** The thread ended without being asked (a crash, or memory exhausted): every call from now on fails as a storage fault. */
  private threadStopped(error: Error): void {
    if (this.stopped !== null) return;
    const closing = this.closing !== null;
    this.stopped = closing ? new Error('the store is closed') : new StorageUnavailableError(`the store's thread stopped: ${error.message}`, { cause: error });
    if (!closing) {
      this.logger?.error({ err: error }, "the SQLite store's thread stopped: every read and write fails until the service is restarted");
      this.health?.writeFailed('run the store', error);
    }
    for (const waiting of this.waiting.values()) waiting.reject(this.stopped);
    this.waiting.clear();
  }

  private send(target: 'store' | 'webhooks', method: string, args: unknown[], transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (this.stopped !== null) return Promise.reject(this.stopped);
    const id = this.next_id;
    this.next_id += 1;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ kind: 'call', id, target, method, args } as StoreThreadRequest, transfer);
    });
  }

  private call<M extends StoreMethod>(method: M, ...args: Parameters<LedgerStore[M]>): ReturnType<LedgerStore[M]> {
    return this.send('store', method, args) as ReturnType<LedgerStore[M]>;
  }

  appendPending(batch: readonly PendingAppend[]): Promise<AppendResult[]> { return this.call('appendPending', batch); }
  findIdempotency(caller: string, key: string): Promise<IdempotencyRecord | null> { return this.call('findIdempotency', caller, key); }
  countIdempotencyKeys(caller: string, keys: readonly string[]): Promise<number> { return this.call('countIdempotencyKeys', caller, keys); }
  pruneIdempotency(before_s: number): Promise<number> { return this.call('pruneIdempotency', before_s); }
  getTransaction(tx_hash: string): Promise<Transaction | null> { return this.call('getTransaction', tx_hash); }
  accountHistory(user_id: string, before_seq: number | null, limit: number): Promise<HistoryEntry[]> { return this.call('accountHistory', user_id, before_seq, limit); }
  newestAccountSeq(user_id: string, before_seq: number | null): Promise<number | null> { return this.call('newestAccountSeq', user_id, before_seq); }
  newestSeq(): Promise<number | null> { return this.newest_seq.get(); }
  transactionsByHash(tx_hashes: readonly string[]): Promise<Transaction[]> { return this.call('transactionsByHash', tx_hashes); }
  latestBlock(): Promise<StoredBlockHeader | null> { return this.call('latestBlock'); }
  latestBlockNumber(): Promise<number | null> { return this.latest_block_number.get(); }
  pendingTransactions(limit: number): Promise<Transaction[]> { return this.call('pendingTransactions', limit); }
  /** As columns (bulk-codecs.ts); the thread keeps them for the commit that names them. */
  async pendingPostings(limit: number): Promise<PendingPosting[]> {
    const packed = (await this.send('store', 'pendingPostings', [limit])) as PackedPostings;
    const postings = unpackPostings(packed);
    this.served_postings.set(postings, packed.served_id);
    return postings;
  }
  pendingCount(): Promise<number> { return this.call('pendingCount'); }
  pendingCountUpTo(limit: number): Promise<number> { return this.call('pendingCountUpTo', limit); }
  balancesOf(keys: ReadonlyArray<{ user_id: string; token: string }>): Promise<BalanceChange[]> { return this.call('balancesOf', keys); }
  knownUsers(user_ids: readonly string[]): Promise<Set<string>> { return this.call('knownUsers', user_ids); }
  /** As columns (bulk-codecs.ts), its postings by number when they are an answer the thread kept. */
  async commitBlock(commit: BlockCommit): Promise<void> {
    const served_id = commit.postings === undefined ? null : this.served_postings.get(commit.postings) ?? null;
    const packed = packCommit(commit, served_id);
    try {
      await this.send('store', 'commitBlock', [packed.value], packed.transfer);
    } catch (error) {
      if (!(error instanceof PostingsNotHeld)) throw error;
      const whole = packCommit(commit, null);
      await this.send('store', 'commitBlock', [whole.value], whole.transfer);
    }
  }
  candlesAt(keys: ReadonlyArray<{ interval: CandleInterval; start: number }>): Promise<Candle[]> { return this.call('candlesAt', keys); }
  candles(interval: CandleInterval, limit: number): Promise<Candle[]> { return this.call('candles', interval, limit); }
  historyNodes(keys: readonly NodeKey[]): Promise<HistoryNode[]> { return this.call('historyNodes', keys); }
  historySize(): Promise<number> { return this.call('historySize'); }
  appendHistory(leaves: ReadonlyArray<{ number: number; hash: string }>): Promise<void> { return this.call('appendHistory', leaves); }
  balances(user_id: string): Promise<Map<string, bigint>> { return this.call('balances', user_id); }
  pricedBalances(user_id: string): Promise<PricedBalances> { return this.call('pricedBalances', user_id); }
  balanceState(): Promise<BalanceSnapshot | null> { return this.call('balanceState'); }
  balanceChangesSince(after_block: number): Promise<BalanceSnapshot> { return this.call('balanceChangesSince', after_block); }
  balanceRoot(block_number: number): Promise<string | null> { return this.call('balanceRoot', block_number); }
  claimBalanceRoot(block_number: number, root: string): Promise<string> { return this.call('claimBalanceRoot', block_number, root); }
  getBlock(number: number): Promise<Block | null> { return this.call('getBlock', number); }
  listBlocks(from_number: number, limit: number): Promise<BlockHeader[]> { return this.call('listBlocks', from_number, limit); }
  blockTransactionHashes(number: number): Promise<string[]> { return this.call('blockTransactionHashes', number); }
  statsSnapshot(window_start_s: number): Promise<StatsSnapshot | null> { return this.call('statsSnapshot', window_start_s); }
  readEvents(after: number, limit: number): Promise<StoredEvent[]> { return this.call('readEvents', after, limit); }
  eventHead(): Promise<number> { return this.call('eventHead'); }
  getSetting(name: string): Promise<string | null> { return this.call('getSetting', name); }
  claimSetting(name: string, value: string): Promise<string> { return this.call('claimSetting', name, value); }
  ping(): Promise<void> { return this.call('ping'); }

  /** The head as of the last answer the thread gave: an append's own is in the answer that resolves it. */
  appendedEventHead(): number {
    return this.appended_head;
  }

  /** The webhook tables, on the same thread and connection. */
  webhooks(): WebhookStore {
    return this.webhook_store;
  }

  /** The checkpoints' counts as the thread last told them (it tells of a change within a quarter of a second). */
  walCheckpoints(): WalCheckpointStats | null {
    return this.wal_checkpoint_stats;
  }

  close(): Promise<void> {
    this.closing ??= this.closeThread();
    return this.closing;
  }

  private async closeThread(): Promise<void> {
    if (this.stopped !== null) return;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage({ kind: 'close' } satisfies StoreThreadRequest);
    const timer = setTimeout(() => void this.worker.terminate(), CLOSE_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
}

/** The webhook store's calls, sent to the thread. */
class ThreadedWebhookStore implements WebhookStore {
  private readonly send: (method: WebhookMethod, args: unknown[]) => Promise<unknown>;

  constructor(send: (method: WebhookMethod, args: unknown[]) => Promise<unknown>) {
    this.send = send;
  }

  private call<M extends WebhookMethod>(method: M, ...args: Parameters<WebhookStore[M]>): ReturnType<WebhookStore[M]> {
    return this.send(method, args) as ReturnType<WebhookStore[M]>;
  }

  createEndpoint(endpoint: WebhookEndpoint, endpoints_max: number): Promise<boolean> { return this.call('createEndpoint', endpoint, endpoints_max); }
  getEndpoint(id: string): Promise<WebhookEndpoint | null> { return this.call('getEndpoint', id); }
  listEndpoints(after_id: string | null, limit: number): Promise<WebhookEndpoint[]> { return this.call('listEndpoints', after_id, limit); }
  updateEndpoint(id: string, changes: EndpointChanges): Promise<WebhookEndpoint | null> { return this.call('updateEndpoint', id, changes); }
  deleteEndpoint(id: string): Promise<boolean> { return this.call('deleteEndpoint', id); }
  claimDue(token: string, now_ms: number, lease_until_ms: number, head: number, limit: number, failing_limit: number): Promise<WebhookEndpoint[]> {
    return this.call('claimDue', token, now_ms, lease_until_ms, head, limit, failing_limit);
  }
  hasActiveEndpoints(): Promise<boolean> { return this.call('hasActiveEndpoints'); }
  updateLeased(id: string, token: string, lease_until_ms: number, changes: EndpointChanges, attempt?: NewAttempt): Promise<boolean> {
    return this.call('updateLeased', id, token, lease_until_ms, changes, ...(attempt === undefined ? [] : [attempt]) as [NewAttempt?]);
  }
  releaseLease(id: string, token: string): Promise<void> { return this.call('releaseLease', id, token); }
  releaseLeasesOf(prefix: string): Promise<void> { return this.call('releaseLeasesOf', prefix); }
  recordAttempt(attempt: NewAttempt): Promise<void> { return this.call('recordAttempt', attempt); }
  listAttempts(endpoint_id: string, before_id: number | null, limit: number): Promise<DeliveryAttempt[]> { return this.call('listAttempts', endpoint_id, before_id, limit); }
}

/** Writes a line the thread's logger produced through the loop's logger, at its level. */
function writeLog(logger: Logger | null, line: string): void {
  if (logger === null) return;
  const { level, msg, time: _time, ...fields } = JSON.parse(line) as { level: number; msg?: string; time?: number } & Record<string, unknown>;
  const name = PINO_LEVELS[level] ?? 'info';
  (logger as unknown as Record<string, ((object: object, message?: string) => void) | undefined>)[name]?.(fields, msg);
}

/** pino's levels by number (its defaults, which the thread's logger uses). */
const PINO_LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
