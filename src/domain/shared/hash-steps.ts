/**
 * One implementation of every hashing algorithm, for a synchronous hash (node:crypto on the server's
 * write path) and an asynchronous one (WebCrypto's `crypto.subtle.digest` in the SDK and browsers).
 *
 * An algorithm is written once as a generator of `HashSteps`: it yields a batch of inputs whose
 * digests it needs next and receives them, in order, as the value of the `yield`. A driver supplies
 * the digests: `runHashSteps` calls a synchronous hash (no promise, no microtask per hash, so the
 * sealer of a 10,000-transaction block pays nothing for the abstraction) and `runHashStepsAsync`
 * awaits a batch at a time (the digests of one Merkle level run concurrently).
 */
export type SyncHashFunction = (bytes: Uint8Array) => Uint8Array;
export type HashFunction = (bytes: Uint8Array) => Uint8Array | Promise<Uint8Array>;

/** Yields batches of preimages, receives their digests in the same order, returns a `T`. */
export type HashSteps<T> = Generator<readonly Uint8Array[], T, readonly Uint8Array[]>;

export function runHashSteps<T>(steps: HashSteps<T>, hash: SyncHashFunction): T {
  let step = steps.next();
  while (step.done !== true) step = steps.next(step.value.map((input) => hash(input)));
  return step.value;
}

export async function runHashStepsAsync<T>(steps: HashSteps<T>, hash: HashFunction): Promise<T> {
  let step = steps.next();
  while (step.done !== true) step = steps.next(await Promise.all(step.value.map((input) => hash(input))));
  return step.value;
}

/** The digest of one preimage, inside a `HashSteps` generator: `const digest = yield* hashOne(bytes)`. */
export function* hashOne(input: Uint8Array): HashSteps<Uint8Array> {
  const [digest] = yield [input];
  if (digest === undefined) throw new TypeError('the hash driver returned no digest');
  return digest;
}
