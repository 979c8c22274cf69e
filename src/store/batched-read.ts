/**
 * One database read for the keys of every caller of one event-loop turn: what CoalescedRead does for a
 * question without a key, for a question per key (an account's newest transaction, asked by every
 * history request). A call adds its key to the batch being gathered and the batch is read on the next
 * turn (`setImmediate`), or at once when it reaches `keys_max`; a call made after a batch was sent joins
 * the next one. So an answer is never older than the call it answers: the read starts after every call
 * it answers, as one read per call would.
 */
import { assert } from '../domain/shared/errors.js';

type Waiting<Value> = { resolve: (value: Value) => void; reject: (error: unknown) => void };

export class BatchedRead<Key, Value> {
  private keys: Key[] = [];
  private waiting: Array<Waiting<Value>> = [];

  /** `read` answers every key it is given, in the same order; it is given `keys_max` at the most. */
  constructor(private readonly read: (keys: readonly Key[]) => Promise<readonly Value[]>, private readonly keys_max: number) {
    assert(Number.isSafeInteger(keys_max) && keys_max >= 1, 'a batched read takes at least one key');
  }

  get(key: Key): Promise<Value> {
    return new Promise<Value>((resolve, reject) => {
      if (this.keys.length === 0) setImmediate(() => this.send());
      this.keys.push(key);
      this.waiting.push({ resolve, reject });
      if (this.keys.length === this.keys_max) this.send();
    });
  }

  private send(): void {
    const keys = this.keys;
    const waiting = this.waiting;
    if (keys.length === 0) return;
    this.keys = [];
    this.waiting = [];
    this.read(keys).then((values) => {
      assert(values.length === keys.length, 'a batched read answers every key it was given');
      waiting.forEach((caller, index) => caller.resolve(values[index] as Value));
    }).catch((error: unknown) => {
      // The read failed (or answered wrongly): every caller of the batch is told.
      for (const caller of waiting) caller.reject(error);
    });
  }
}
