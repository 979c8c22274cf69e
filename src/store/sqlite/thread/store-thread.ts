/**
 * The SQLite store's own thread: it opens the store (sqlite-store.ts, unchanged: one connection, its
 * in-memory copies of the pending rows, its checkpoint worker) and answers the event loop's calls in
 * the order they arrive, so every read, group commit and block commit runs here and none holds the
 * loop. What the store tells its health reporter and logger goes back to the loop as messages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import type { StorageHealthReporter } from '../../storage-faults.js';
import { SqliteStore } from '../sqlite-store.js';
import type { WalCheckpointStats } from '../wal-checkpointer.js';
import type { PendingPosting } from '../../../service/ledger-store.js';
import { packPostings, unpackCommit, type PackedCommit } from './bulk-codecs.js';
import { encodeError, PostingsNotHeld, STORE_METHODS, WEBHOOK_METHODS, type StoreThreadData, type StoreThreadMessage, type StoreThreadRequest } from './store-thread-protocol.js';

/** Answers of `pendingPostings` kept for the commits that name them (the producer asks one at a time). */
const SERVED_POSTINGS_KEPT = 4;
/** How often the checkpoints' counts are compared with what the loop was last told. */
const CHECKPOINT_STATS_INTERVAL_MS = 250;

if (parentPort === null) throw new Error('store-thread.ts runs as a worker thread');
const port = parentPort;
const data = workerData as StoreThreadData;
const post = (message: StoreThreadMessage) => port.postMessage(message);

/** Tells the loop of every failed write, and of the first success after failures (what StorageHealth acts on). */
function healthReporter(): StorageHealthReporter {
  let failing = false;
  return {
    writeFailed(operation, error) {
      failing = true;
      post({ kind: 'write_failed', operation, error: encodeError(error) });
    },
    writeSucceeded() {
      if (!failing) return;
      failing = false;
      post({ kind: 'writes_recovered' });
    },
  };
}

/** Log lines as pino writes them, for the loop's logger to write again (threaded-sqlite-store.ts). */
const logger = pino({ level: 'trace', base: null }, { write: (line: string) => post({ kind: 'log', line }) });

function open(): SqliteStore | null {
  try {
    return SqliteStore.open({ path: data.path, health: healthReporter(), logger, ...(data.wal_checkpoints === undefined ? {} : { wal_checkpoints: data.wal_checkpoints }) });
  } catch (error) {
    post({ kind: 'open_failed', error: encodeError(error) });
    return null;
  }
}

const store = open();
if (store !== null) serve(store);

function serve(opened: SqliteStore): void {
  const webhooks = opened.webhooks();
  const store_methods = new Set<string>(STORE_METHODS);
  const webhook_methods = new Set<string>(WEBHOOK_METHODS);
  let told = JSON.stringify(opened.walCheckpoints());
  const stats_timer = setInterval(() => {
    const stats: WalCheckpointStats | null = opened.walCheckpoints();
    const text = JSON.stringify(stats);
    if (text === told) return;
    told = text;
    post({ kind: 'wal_checkpoints', stats });
  }, CHECKPOINT_STATS_INTERVAL_MS);
  stats_timer.unref();

  port.on('message', (request: StoreThreadRequest) => {
    if (request.kind === 'close') {
      clearInterval(stats_timer);
      void opened.close().finally(() => {
        post({ kind: 'closed' });
        port.close();
      });
      return;
    }
    const { id } = request;
    answer(request).then(
      ({ value, transfer }) => port.postMessage({ kind: 'answer', id, value, appended_head: opened.appendedEventHead() } satisfies StoreThreadMessage, transfer),
      (error: unknown) => post({ kind: 'failed', id, error: encodeError(error), appended_head: opened.appendedEventHead() }),
    );
  });

  /** Postings answered for sealing, by answer number, until the commit that names them (a few at the most). */
  const served = new Map<number, readonly PendingPosting[]>();
  let served_last = 0;

  async function answer(request: Extract<StoreThreadRequest, { kind: 'call' }>): Promise<{ value: unknown; transfer: ArrayBuffer[] }> {
    // Only the interfaces' methods: the list is the protocol, not whatever the objects happen to have.
    const known = request.target === 'store' ? store_methods.has(request.method) : webhook_methods.has(request.method);
    if (!known) throw new Error(`the store thread has no method ${request.target}.${request.method}`);
    if (request.target === 'store' && request.method === 'pendingPostings') return pendingPostings(request.args[0] as number);
    if (request.target === 'store' && request.method === 'commitBlock') return { value: await commitBlock(request.args[0] as PackedCommit), transfer: [] };
    const target = (request.target === 'store' ? opened : webhooks) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    return { value: await (target[request.method] as (...args: unknown[]) => Promise<unknown>).apply(target, request.args), transfer: [] };
  }

  async function pendingPostings(limit: number): Promise<{ value: unknown; transfer: ArrayBuffer[] }> {
    const postings = await opened.pendingPostings(limit);
    served_last += 1;
    served.set(served_last, postings);
    for (const kept of served.keys()) if (served.size > SERVED_POSTINGS_KEPT) served.delete(kept);
    return packPostings(postings, served_last);
  }

  async function commitBlock(packed: PackedCommit): Promise<void> {
    const commit = unpackCommit(packed, (served_id) => served.get(served_id) ?? null);
    if (commit === null) throw new PostingsNotHeld();
    if (packed.postings !== null && 'served_id' in packed.postings) served.delete(packed.postings.served_id);
    await opened.commitBlock(commit);
  }

  post({ kind: 'opened', wal_checkpoints: opened.walCheckpoints(), appended_head: opened.appendedEventHead() });
}
