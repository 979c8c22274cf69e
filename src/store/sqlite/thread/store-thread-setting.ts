/**
 * Whether the SQLite store runs on a thread of its own (SQLITE_STORE_THREAD). On its thread, SQLite's
 * work leaves the event loop (a group commit's or a block's commit no longer stops every other request,
 * and the loop's time per submission falls by about a quarter, per transaction of a batch by half), but
 * the work is not less: the handover adds to it. With a core to spare that is a gain; on two cores
 * shared with the load, as the benchmark runs, the thread competes with the loop for the same cores and
 * nothing is gained (docs/performance.md, "The SQLite store on a thread of its own").
 */

export const SQLITE_STORE_THREAD_SETTINGS = ['auto', 'on', 'off'] as const;
export type SqliteStoreThreadSetting = (typeof SQLITE_STORE_THREAD_SETTINGS)[number];

/** `auto` (the default) runs the store on its thread when the process may use at least this many CPUs. */
export const STORE_THREAD_CPUS_MIN = 3;

export function storeThreadWanted(setting: SqliteStoreThreadSetting, available_cpus: number): boolean {
  if (setting !== 'auto') return setting === 'on';
  return available_cpus >= STORE_THREAD_CPUS_MIN;
}
