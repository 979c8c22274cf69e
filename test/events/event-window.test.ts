// The event hub's window keeps the newest events, contiguous and at most its capacity, and answers any
// cursor inside it exactly, across the compactions that make dropping the oldest cheap.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../../src/domain/shared/errors.js';
import type { EncodedEvent } from '../../src/events/event.js';
import { EventWindow } from '../../src/events/event-window.js';

const event = (sequence: number): EncodedEvent => ({ sequence, id: `event-${sequence}`, type: 'block.sealed', occurred_at: 1_700_000_000, accounts: [], json: `{"sequence":${sequence}}` });

const sequences = (events: readonly EncodedEvent[]) => events.map((item) => item.sequence);

function filled(capacity: number, first: number, count: number): EventWindow {
  const window = new EventWindow(capacity, first);
  for (let sequence = first; sequence < first + count; sequence += 1) window.append(event(sequence));
  return window;
}

describe('the event window', () => {
  it('answers after a cursor from its first event, and nothing past its newest', () => {
    const window = filled(10, 5, 4); // 5..8
    expect(window.start()).toBe(5);
    expect(window.size()).toBe(4);
    expect(sequences(window.after(4, 100))).toEqual([5, 6, 7, 8]);
    expect(sequences(window.after(6, 1))).toEqual([7]);
    expect(window.after(8, 100)).toEqual([]);
  });

  it('drops the oldest past its capacity, and answers exactly across compactions', () => {
    const window = filled(4, 1, 11); // keeps 8..11; compacted once 4 were dropped
    expect(window.size()).toBe(4);
    expect(window.start()).toBe(8);
    expect(sequences(window.after(7, 100))).toEqual([8, 9, 10, 11]);
    expect(sequences(window.after(9, 1))).toEqual([10]);
  });

  it('refuses an event that does not follow its newest, and a cursor older than it', () => {
    const window = filled(4, 1, 3);
    expect(() => window.append(event(5))).toThrow(InvariantViolation);
    expect(() => window.append(event(3))).toThrow(InvariantViolation);
    const full = filled(2, 1, 5); // keeps 4..5
    expect(() => full.after(2, 10)).toThrow(InvariantViolation);
  });

  it('starts over at the sequence it is told when cleared', () => {
    const window = filled(4, 1, 6);
    window.clear(20);
    expect(window.size()).toBe(0);
    expect(window.start()).toBe(20);
    expect(window.after(19, 10)).toEqual([]);
    window.append(event(20));
    expect(sequences(window.after(19, 10))).toEqual([20]);
  });

  it('holds the newest `capacity` events of any run of appends, reads and clears (model check)', () => {
    type Step = { kind: 'append'; count: number } | { kind: 'read'; back: number; count: number } | { kind: 'clear'; skip: number };
    const step = fc.oneof(
      fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 9 }) }),
      fc.record({ kind: fc.constant('read' as const), back: fc.integer({ min: 0, max: 12 }), count: fc.integer({ min: 1, max: 12 }) }),
      fc.record({ kind: fc.constant('clear' as const), skip: fc.integer({ min: 0, max: 5 }) }),
    );
    fc.assert(fc.property(fc.integer({ min: 1, max: 7 }), fc.array(step, { maxLength: 60 }), (capacity, steps: Step[]) => {
      const window = new EventWindow(capacity, 1);
      let model: number[] = [];
      let next = 1;
      for (const item of steps) {
        if (item.kind === 'append') {
          for (let index = 0; index < item.count; index += 1) {
            window.append(event(next));
            model.push(next);
            next += 1;
          }
          model = model.slice(-capacity);
        } else if (item.kind === 'clear') {
          next += item.skip;
          window.clear(next);
          model = [];
        } else {
          const after = Math.max(window.start() - 1, next - 1 - item.back);
          expect(sequences(window.after(after, item.count))).toEqual(model.filter((sequence) => sequence > after).slice(0, item.count));
        }
        expect(window.size()).toBe(model.length);
        expect(window.start()).toBe(model[0] ?? next);
      }
    }), { numRuns: 300 });
  });
});
