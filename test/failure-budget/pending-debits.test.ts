/** What each sender has pending, in memory: exact at one event sequence whatever order commits are reported in. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FLOORS_MAX, PendingDebits, SequencedPendingDebits, WAITING_DELTAS_MAX, type PendingDelta } from '../../src/failure-budget/pending-debits.js';

const change = (user_id: string, units: bigint) => ({ user_id, token: 'TAB', units });

describe('pending debits', () => {
  it('adds appended debits and takes sealed ones off, and refuses (as a bug) to go below zero', () => {
    const debits = new PendingDebits();
    debits.addAll([change('alice', 5n), change('alice', 2n ** 70n)]);
    debits.add('alice', 'TAB', -5n);
    expect(debits.get('alice', 'TAB')).toBe(2n ** 70n);
    debits.add('alice', 'TAB', -(2n ** 70n));
    expect(debits.size).toBe(0);
    expect(() => debits.add('alice', 'TAB', -1n)).toThrow(/never has more debits sealed than appended/);
  });
});

describe('pending debits at an event sequence', () => {
  it('knows nothing until read whole, and ignores reports until then', () => {
    const figure = new SequencedPendingDebits();
    figure.committed({ before: 0, after: 3, changes: [change('alice', 3n)] });
    expect(figure.known_sequence).toBeNull();
    figure.reset([change('alice', 7n)], 10);
    expect([figure.known_sequence, figure.get('alice', 'TAB')]).toEqual([10, 7n]);
  });

  it('applies a change that starts where it stands, keeps a later one until the gap is filled, and ignores an earlier one', () => {
    const figure = new SequencedPendingDebits();
    figure.reset([], 10);
    figure.committed({ before: 15, after: 20, changes: [change('bob', 5n)] });
    expect([figure.known_sequence, figure.get('bob', 'TAB')]).toEqual([10, 0n]);
    figure.committed({ before: 10, after: 15, changes: [change('alice', 5n)] });
    expect([figure.known_sequence, figure.get('alice', 'TAB'), figure.get('bob', 'TAB')]).toEqual([20, 5n, 5n]);
    // Already counted (a catch-up read covered it): ignored.
    figure.committed({ before: 12, after: 15, changes: [change('alice', 5n)] });
    expect([figure.known_sequence, figure.get('alice', 'TAB')]).toEqual([20, 5n]);
  });

  it('keeps no more than WAITING_DELTAS_MAX changes waiting; the rest is left to a later read', () => {
    const figure = new SequencedPendingDebits();
    figure.reset([], 0);
    for (let index = 1; index <= WAITING_DELTAS_MAX + 5; index += 1) figure.committed({ before: index, after: index + 1, changes: [change('alice', 1n)] });
    figure.committed({ before: 0, after: 1, changes: [change('alice', 1n)] });
    expect(figure.known_sequence).toBe(WAITING_DELTAS_MAX + 1);
    expect(figure.get('alice', 'TAB')).toBe(BigInt(WAITING_DELTAS_MAX + 1));
  });

  it('ends where the database ends, whatever order the commits are reported in (property)', () => {
    // A run of commits: appends add, blocks take off what was appended before them.
    const commits = fc.array(fc.record({ appended: fc.bigInt({ min: 0n, max: 1000n }), sealed_share: fc.integer({ min: 0, max: 100 }) }), { minLength: 1, maxLength: 40 });
    fc.assert(fc.property(commits, fc.infiniteStream(fc.nat()), (runs, shuffle) => {
      let pending = 0n;
      let sequence = 0;
      const deltas: PendingDelta[] = [];
      for (const run of runs) {
        const sealed = (pending * BigInt(run.sealed_share)) / 100n;
        const changes = [change('alice', run.appended), change('alice', -sealed)];
        pending += run.appended - sealed;
        deltas.push({ before: sequence, after: sequence + 1, changes });
        sequence += 1;
      }
      const order = [...deltas];
      const picks = shuffle.take(order.length);
      let index = 0;
      for (const pick of picks) {
        const other = pick % order.length;
        [order[index], order[other]] = [order[other] as PendingDelta, order[index] as PendingDelta];
        index += 1;
      }
      const figure = new SequencedPendingDebits();
      figure.reset([], 0);
      for (const delta of order) figure.committed(delta);
      expect(figure.known_sequence).toBe(sequence);
      expect(figure.get('alice', 'TAB')).toBe(pending);
    }));
  });

  it('keeps a floor of balance less pending: lowered by every debit appended since, never raised by sealing', () => {
    const figure = new SequencedPendingDebits();
    figure.reset([change('alice', 30n)], 10);
    figure.readFloor('alice', 'TAB', 100n, 10);
    expect(figure.floor('alice', 'TAB')).toBe(70n);
    // Appended (by anyone) lowers it; a sealed debit or a failure leaves it (available did not fall).
    figure.committed({ before: 10, after: 12, changes: [change('alice', 20n), change('bob', 5n)] });
    figure.committed({ before: 12, after: 20, changes: [change('alice', -50n)] });
    expect([figure.floor('alice', 'TAB'), figure.floor('bob', 'TAB'), figure.get('alice', 'TAB')]).toEqual([50n, undefined, 0n]);
    // A catch-up's appended and sealed entries of one account are taken apart, never netted.
    figure.committed({ before: 20, after: 30, changes: [change('alice', 15n), change('alice', -15n)] });
    expect(figure.floor('alice', 'TAB')).toBe(35n);
  });

  it('keeps a floor only when read where it stands, never for a system account, and forgets them all on a reset or past FLOORS_MAX', () => {
    const figure = new SequencedPendingDebits();
    figure.reset([], 10);
    figure.readFloor('alice', 'TAB', 100n, 9);
    figure.readFloor('@pool', 'TAB', 100n, 10);
    expect([figure.floor('alice', 'TAB'), figure.floor('@pool', 'TAB')]).toEqual([undefined, undefined]);
    figure.readFloor('alice', 'TAB', 100n, 10);
    figure.reset([], 11);
    expect(figure.floor('alice', 'TAB')).toBeUndefined();
    for (let index = 0; index < FLOORS_MAX; index += 1) figure.readFloor(`user-${index}`, 'TAB', 1n, 11);
    expect(figure.floor('user-0', 'TAB')).toBe(1n);
    figure.readFloor('alice', 'TAB', 100n, 11);
    expect([figure.floor('user-0', 'TAB'), figure.floor('alice', 'TAB')]).toEqual([undefined, 100n]);
  });
});
