// One read for the keys of one event-loop turn: each caller gets its own key's answer, a caller after the
// batch was sent joins the next, a full batch is sent at once, errors reach every caller of the batch.
import { describe, expect, it } from 'vitest';
import { BatchedRead } from '../../src/store/batched-read.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A read that answers each key with `key × 10 + the read's number`, in flight until released. */
function countingRead(keys_max = 100) {
  const state = { batches: [] as number[][], release: [] as Array<() => void> };
  const read = new BatchedRead<number, number>(async (keys) => {
    state.batches.push([...keys]);
    const number = state.batches.length;
    await new Promise<void>((resolve) => state.release.push(resolve));
    return keys.map((key) => key * 10 + number);
  }, keys_max);
  const releaseAll = () => { for (const release of state.release.splice(0)) release(); };
  return { state, read, releaseAll };
}

describe('a batched read', () => {
  it("answers every call of one turn with one read, each with its own key's answer", async () => {
    const { state, read, releaseAll } = countingRead();
    const answers = [3, 1, 2, 1].map((key) => read.get(key));
    await nextTurn();
    releaseAll();
    expect(await Promise.all(answers)).toEqual([31, 11, 21, 11]);
    expect(state.batches).toEqual([[3, 1, 2, 1]]);
  });

  it('never gives a call the answer of a read sent before it: a call while a read is in flight joins the next', async () => {
    const { state, read, releaseAll } = countingRead();
    const first = read.get(1);
    await nextTurn();
    expect(state.batches).toEqual([[1]]);
    const second = read.get(1);
    await nextTurn();
    releaseAll();
    expect(await first).toBe(11);
    expect(await second).toBe(12);
    expect(state.batches).toEqual([[1], [1]]);
  });

  it('sends a batch once it holds keys_max keys, without waiting for the turn to end', async () => {
    const { state, read, releaseAll } = countingRead(3);
    const answers = [1, 2, 3, 4, 5].map((key) => read.get(key));
    expect(state.batches).toEqual([[1, 2, 3]]);
    await nextTurn();
    expect(state.batches).toEqual([[1, 2, 3], [4, 5]]);
    releaseAll();
    expect(await Promise.all(answers)).toEqual([11, 21, 31, 42, 52]);
  });

  it('passes a failed read, or one that does not answer every key, to every call of its batch, and reads again for the next call', async () => {
    let reads = 0;
    const read = new BatchedRead<number, number>(async (keys) => {
      reads += 1;
      if (reads === 1) throw new Error('connection lost');
      if (reads === 2) return keys.slice(1);
      return keys;
    }, 10);
    const lost = [read.get(1), read.get(2)];
    for (const answer of lost) await expect(answer).rejects.toThrow('connection lost');
    const short = [read.get(1), read.get(2)];
    for (const answer of short) await expect(answer).rejects.toThrow(/answers every key/);
    await expect(read.get(7)).resolves.toBe(7);
  });

  it('refuses a limit below one key', () => {
    expect(() => new BatchedRead(async (keys: readonly number[]) => keys, 0)).toThrow(/at least one key/);
  });
});
