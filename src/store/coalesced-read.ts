/**
 * One database read shared by every caller of one event-loop turn. Under load many requests ask the
 * same question at once (the newest block's number: every blocks page, stats, proof); each would be a
 * round trip and a backend's work. A call schedules the read for the next turn (`setImmediate`) and
 * every call made before it is sent shares its answer; a call made after it was sent schedules the
 * next one. So an answer is never older than the call it answers: the read starts after every call
 * that shares it, which is what one read per call would give (a caller sees no stale state, only its
 * question answered together with others').
 */
export class CoalescedRead<Value> {
  private readonly read: () => Promise<Value>;
  private scheduled: Promise<Value> | null = null;

  constructor(read: () => Promise<Value>) {
    this.read = read;
  }

  get(): Promise<Value> {
    if (this.scheduled !== null) return this.scheduled;
    const scheduled = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      // Sent from here on: a later call must not share this read, which may not see what it should.
      this.scheduled = null;
      return this.read();
    });
    this.scheduled = scheduled;
    return scheduled;
  }
}
