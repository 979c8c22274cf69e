// The event hub fills its window only while it is read: with nobody reading, a change moves the head
// forward from the store's head alone; reads stay exact either way.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { BlockHeader } from '../../src/domain/block.js';
import { TokenRegistry } from '../../src/domain/shared/tokens.js';
import { DEFAULT_EVENT_HUB_OPTIONS, EventHub } from '../../src/events/event-hub.js';
import { systemClock } from '../../src/service/clock.js';
import type { LedgerStore, StoredEvent } from '../../src/service/ledger-store.js';

function header(number: number): BlockHeader {
  return {
    number, hash: `0x${String(number).padStart(64, '0')}`, parent_hash: `0x${'00'.repeat(32)}`, timestamp: Math.floor(Date.now() / 1000),
    transactions_count: 0, transactions_root: `0x${'ab'.repeat(32)}`,
  };
}

/** An event log in memory that counts its reads: `append` adds block.sealed events. */
function eventLog() {
  const events: StoredEvent[] = [];
  const counts = { read_events: 0, event_head: 0 };
  const store = {
    eventHead: async () => {
      counts.event_head += 1;
      return events.length;
    },
    readEvents: async (after: number, limit: number) => {
      counts.read_events += 1;
      return events.filter((event) => event.sequence > after).slice(0, limit);
    },
  } as unknown as LedgerStore;
  const append = (count: number) => {
    for (let index = 0; index < count; index += 1) events.push({ sequence: events.length + 1, type: 'block.sealed', block: header(events.length + 1) });
  };
  return { store, counts, append };
}

async function startedHub(store: LedgerStore, window_idle_ms: number, window_events_max = DEFAULT_EVENT_HUB_OPTIONS.window_events_max) {
  const hub = new EventHub(store, new TokenRegistry('TAB'), systemClock, pino({ level: 'silent' }), { ...DEFAULT_EVENT_HUB_OPTIONS, poll_interval_ms: 60_000, window_idle_ms, window_events_max });
  await hub.start();
  return hub;
}

/** Lets the hub's refresh (started by `changed`) finish. */
async function settled(hub: EventHub, head: number): Promise<void> {
  for (let turn = 0; turn < 100 && hub.head() < head; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  expect(hub.head()).toBe(head);
}

const sequences = (events: ReadonlyArray<{ sequence: number }>) => events.map((event) => event.sequence);

describe('the event hub', () => {
  it('moves its head without reading events while nobody reads, then serves every event from the store and fills again', async () => {
    const { store, counts, append } = eventLog();
    append(3);
    const hub = await startedHub(store, 10_000);
    const heads: number[] = [];
    hub.onAdvance((head) => heads.push(head));
    append(5);
    hub.changed();
    await settled(hub, 8);
    expect(counts.read_events).toBe(0); // nobody has read yet: the head alone
    expect(heads).toEqual([8]);
    // Exact all the same: from the store, never past the hub's head.
    append(2);
    expect(sequences(await hub.read(0, 100))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(counts.read_events).toBe(1);
    // Read recently: the next change loads the new events into the window, and reads of them cost no store read.
    hub.changed();
    await settled(hub, 10);
    const loaded = counts.read_events;
    expect(sequences(await hub.read(8, 100))).toEqual([9, 10]);
    expect(sequences(await hub.read(9, 100))).toEqual([10]);
    expect(counts.read_events).toBe(loaded);
    await hub.stop();
  });

  it('empties its window once idle and stays exact across it', async () => {
    const { store, counts, append } = eventLog();
    const hub = await startedHub(store, 0); // idle as soon as a refresh starts after a read
    append(2);
    expect(sequences(await hub.read(0, 100))).toEqual([]); // nothing loaded yet: the head is 0
    hub.changed();
    await settled(hub, 2);
    append(3);
    hub.changed();
    await settled(hub, 5);
    const before = counts.read_events;
    expect(sequences(await hub.read(1, 100))).toEqual([2, 3, 4, 5]);
    expect(sequences(await hub.read(4, 1))).toEqual([5]);
    expect(counts.read_events).toBe(before + 2); // both from the store: the window was emptied
    await hub.stop();
  });

  it('takes the head a change tells instead of reading it, and reads nothing for a change it has already loaded', async () => {
    const { store, counts, append } = eventLog();
    const hub = await startedHub(store, 10_000);
    const started = { ...counts };
    // Idle: the head a change tells (PostgreSQL's NOTIFY carries it) moves the head with no store read.
    append(5);
    hub.changed(5);
    await settled(hub, 5);
    expect(counts).toEqual(started);
    // The same commit told again (its writer and its NOTIFY both tell of it): nothing to read.
    hub.changed(5);
    hub.changed(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(counts).toEqual(started);
    // A change that tells no head is read from the store, as before.
    append(1);
    hub.changed();
    await settled(hub, 6);
    expect(counts.event_head).toBe(started.event_head + 1);
    // Read recently: the window fills from the store on a change; its echo with the head costs nothing.
    expect(sequences(await hub.read(0, 100))).toEqual([1, 2, 3, 4, 5, 6]);
    append(2);
    hub.changed();
    await settled(hub, 8);
    const filled = counts.read_events;
    hub.changed(8);
    await new Promise((resolve) => setImmediate(resolve));
    expect(counts.read_events).toBe(filled);
    expect(sequences(await hub.read(6, 100))).toEqual([7, 8]);
    await hub.stop();
  });

  it('keeps only its newest window_events_max events: older cursors are read from the store, exactly', async () => {
    const { store, counts, append } = eventLog();
    const hub = await startedHub(store, 10_000, 4);
    expect(await hub.read(0, 100)).toEqual([]); // a reader: the window fills from now on
    for (let load = 1; load <= 5; load += 1) {
      append(3);
      hub.changed();
      await settled(hub, load * 3);
    }
    const loaded = counts.read_events;
    expect(sequences(await hub.read(11, 100))).toEqual([12, 13, 14, 15]);
    expect(sequences(await hub.read(12, 2))).toEqual([13, 14]);
    expect(counts.read_events).toBe(loaded); // 12..15 are the window's
    expect(sequences(await hub.read(10, 2))).toEqual([11, 12]);
    expect(counts.read_events).toBe(loaded + 1); // 11 is older than the window: from the store
    expect(sequences(await hub.read(0, 3))).toEqual([1, 2, 3]);
    await hub.stop();
  });
});
