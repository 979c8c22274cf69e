/** The pending backlog's bookkeeping: the store's count, plus appends since, plus admissions in flight. */
import { describe, expect, it } from 'vitest';
import { PendingBacklog } from '../../src/backpressure/pending-backlog.js';
import { OverloadedError } from '../../src/domain/errors.js';

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
});
