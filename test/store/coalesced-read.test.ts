// One read per event-loop turn: callers of one turn share it, a caller after it was sent gets a read of its own, errors reach every sharer.
import { describe, expect, it } from 'vitest';
import { CoalescedRead } from '../../src/store/coalesced-read.js';

/** A read whose answer is the number of reads made, and which stays in flight until released. */
function countingRead() {
  const state = { reads: 0, release: [] as Array<() => void> };
  const read = new CoalescedRead(async () => {
    state.reads += 1;
    const answer = state.reads;
    await new Promise<void>((resolve) => state.release.push(resolve));
    return answer;
  });
  const releaseAll = () => { for (const release of state.release.splice(0)) release(); };
  return { state, read, releaseAll };
}

describe('a coalesced read', () => {
  it('answers every call of one turn with one read', async () => {
    const { state, read, releaseAll } = countingRead();
    const answers = Array.from({ length: 10 }, () => read.get());
    await new Promise((resolve) => setImmediate(resolve));
    releaseAll();
    expect(await Promise.all(answers)).toEqual(Array(10).fill(1));
    expect(state.reads).toBe(1);
  });

  it('never gives a call the answer of a read sent before it: a call while a read is in flight waits for the next', async () => {
    const { state, read, releaseAll } = countingRead();
    const first = read.get();
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.reads).toBe(1);
    const second = read.get();
    await new Promise((resolve) => setImmediate(resolve));
    releaseAll();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(state.reads).toBe(2);
  });

  it('passes a failed read to every call that shared it, and reads again for the next call', async () => {
    let reads = 0;
    const read = new CoalescedRead(async () => {
      reads += 1;
      if (reads === 1) throw new Error('connection lost');
      return reads;
    });
    const shared = [read.get(), read.get()];
    for (const answer of shared) await expect(answer).rejects.toThrow('connection lost');
    await expect(read.get()).resolves.toBe(2);
  });
});
