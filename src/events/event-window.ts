/**
 * The event hub's window: the newest encoded events, contiguous by sequence, at most `capacity` of them.
 *
 * Dropping the oldest is amortised. An append past the capacity clears the oldest entries where they lie
 * (so that their encoded bytes can be collected) and moves the window's first index forward; the array is
 * compacted only once as many entries as the capacity have been cleared. An append then costs what it
 * adds, not a copy of the whole window: the window used to be sliced anew after every load once full
 * (20,000 references copied per group commit while a stream was open). The array holds at most twice
 * the capacity in references, and at most the capacity in events.
 */
import { assert } from '../domain/shared/errors.js';
import type { EncodedEvent } from './event.js';

export class EventWindow {
  private readonly capacity: number;
  /** The kept events are entries[first] ... entries[entries.length - 1]; the entries before `first` are cleared. */
  private entries: (EncodedEvent | undefined)[] = [];
  private first = 0;
  /** The sequence of entries[first] (of the next event appended, when the window is empty). */
  private first_sequence: number;

  constructor(capacity: number, next_sequence: number) {
    assert(Number.isSafeInteger(capacity) && capacity > 0, 'the event window holds at least one event');
    this.capacity = capacity;
    this.first_sequence = next_sequence;
  }

  /** The oldest sequence the window can answer from (the next one to be appended, when empty). */
  start(): number {
    return this.first_sequence;
  }

  size(): number {
    return this.entries.length - this.first;
  }

  /** Adds the next event of the log (its sequence must follow the newest kept), dropping the oldest past the capacity. */
  append(event: EncodedEvent): void {
    assert(event.sequence === this.first_sequence + this.size(), `the event window is contiguous: expected event ${this.first_sequence + this.size()}, got ${event.sequence}`);
    this.entries.push(event);
    if (this.size() > this.capacity) this.dropOldest();
  }

  /** Up to `count` events after `after`, which must not be older than the window: `after + 1 >= start()`. */
  after(after: number, count: number): EncodedEvent[] {
    assert(after + 1 >= this.first_sequence, `event ${after + 1} is older than the window (${this.first_sequence})`);
    const from = this.first + after + 1 - this.first_sequence;
    return this.entries.slice(from, from + count) as EncodedEvent[];
  }

  /** Forgets every event: the next one appended is `next_sequence`. */
  clear(next_sequence: number): void {
    this.entries = [];
    this.first = 0;
    this.first_sequence = next_sequence;
  }

  private dropOldest(): void {
    this.entries[this.first] = undefined;
    this.first += 1;
    this.first_sequence += 1;
    if (this.first < this.capacity) return;
    this.entries = this.entries.slice(this.first);
    this.first = 0;
  }
}
