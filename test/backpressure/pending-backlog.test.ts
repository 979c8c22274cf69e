/** The pending backlog's bookkeeping: the store's count, plus appends since, plus admissions in flight. */
import { describe, expect, it } from 'vitest';
import { PendingBacklog } from '../../src/backpressure/pending-backlog.js';
import { OverloadedError } from '../../src/domain/shared/errors.js';

describe('PendingBacklog', () => {
  it('counts admissions in flight, so that requests admitted together cannot pass the bound together', async () => {
    let stored = 0;
    const backlog = new PendingBacklog(async () => stored, { pending_max: 10, refresh_ms: 60_000, retry_after_s: 1 });
    await backlog.refresh();
    backlog.admit(6);
    expect(() => backlog.admit(5)).toThrow(OverloadedError);
    backlog.admit(4);
    expect(backlog.estimate).toBe(10);
    // The six were stored, the four refused by the store: four places come free.
    backlog.settle(6, 6);
    backlog.settle(4, 0);
    stored = 6;
    expect(backlog.estimate).toBe(6);
    await backlog.refresh();
    expect(backlog.estimate).toBe(6);
    expect(backlog.refused).toBe(5);
    try {
      backlog.admit(5);
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ code: 'pending_backlog_full', retry_after_s: 1 });
    }
  });

  it('keeps its estimate when the store cannot count', async () => {
    const backlog = new PendingBacklog(async () => { throw new Error('down'); }, { pending_max: 3, refresh_ms: 60_000, retry_after_s: 1 });
    backlog.admit(2);
    backlog.settle(2, 2);
    await backlog.refresh();
    expect(backlog.estimate).toBe(2);
  });

  it('frees a sealed block\'s places at once, before the store is counted again', async () => {
    let stored = 0;
    let answer: (() => void) | null = null;
    const backlog = new PendingBacklog(() => new Promise<number>((resolve) => { const now = stored; answer = () => resolve(now); }), { pending_max: 3, refresh_ms: 60_000, retry_after_s: 1 });
    const first = backlog.refresh();
    answer!();
    await first;
    backlog.admit(3);
    backlog.settle(3, 3);
    stored = 3;
    expect(() => backlog.admit(1)).toThrow(OverloadedError);
    // The block is sealed; the count it triggers has not come back yet.
    stored = 0;
    const counting = backlog.sealed(3);
    expect(backlog.estimate).toBe(0);
    backlog.admit(2);
    backlog.settle(2, 2);
    stored = 2;
    answer!();
    await counting;
    expect(backlog.estimate).toBe(2);
  });

  it('counts again when a block is sealed while a count that may predate it is being read', async () => {
    let stored = 3;
    const answers: Array<() => void> = [];
    const backlog = new PendingBacklog(() => new Promise<number>((resolve) => { const now = stored; answers.push(() => resolve(now)); }), { pending_max: 3, refresh_ms: 60_000, retry_after_s: 1 });
    // A timed count starts and reads 3; then the block is sealed before that answer arrives.
    const timed = backlog.refresh();
    stored = 0;
    const after_seal = backlog.sealed(3);
    answers.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    // The stale 3 is not taken as the truth: a second count is read, and both callers wait for it.
    expect(answers).toHaveLength(1);
    answers.shift()!();
    await Promise.all([timed, after_seal]);
    expect(backlog.estimate).toBe(0);
    backlog.admit(3);
  });

  it('counts again after a block when appends were stored while the last count was read, so that they are not counted twice', async () => {
    let stored = 0;
    const answers: Array<() => void> = [];
    const backlog = new PendingBacklog(() => new Promise<number>((resolve) => { answers.push(() => resolve(stored)); }), { pending_max: 3, refresh_ms: 60_000, retry_after_s: 1 });
    // A timed count is asked for; three appends are stored before it answers, and it sees them.
    const timed = backlog.refresh();
    backlog.admit(3);
    backlog.settle(3, 3);
    stored = 3;
    answers.shift()!();
    await timed;
    expect(backlog.estimate).toBe(6);
    // The block seals the three: the estimate, twice too high, is not kept; the store is counted.
    stored = 0;
    const after_seal = backlog.sealed(3);
    expect(answers).toHaveLength(1);
    answers.shift()!();
    await after_seal;
    expect(backlog.estimate).toBe(0);
    backlog.admit(3);
    // A count that no append overlapped is trusted: the next block counts nothing.
    backlog.settle(3, 3);
    await backlog.sealed(3);
    expect(answers).toHaveLength(0);
  });

  it('asks the store to count up to PENDING_MAX + 1 only, and lets no sealed block lower a count that reached that cap', async () => {
    const asked: number[] = [];
    let stored = 1_000_000;
    const backlog = new PendingBacklog(async (limit) => { asked.push(limit); return Math.min(stored, limit); }, { pending_max: 10, refresh_ms: 60_000, retry_after_s: 1 });
    await backlog.refresh();
    expect(asked).toEqual([11]);
    // A million pending, counted as 11: a block of 5 sealed leaves it full, whatever the arithmetic says.
    stored -= 5;
    const counting = backlog.sealed(5);
    expect(() => backlog.admit(1)).toThrow(OverloadedError);
    await counting;
    expect(() => backlog.admit(1)).toThrow(OverloadedError);
    // Once the count comes back under the cap, sealed blocks free places again.
    stored = 8;
    await backlog.refresh();
    expect(backlog.estimate).toBe(8);
    void backlog.sealed(3);
    expect(backlog.estimate).toBe(5);
  });
});
