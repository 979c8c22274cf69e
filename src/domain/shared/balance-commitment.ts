/**
 * The balance commitment: a sparse Merkle tree over every non-zero (user, token) balance, its root
 * after each block, its proofs and their verification. Pure and shared with the SDK (no Node API).
 *
 * - key   = SHA-256(utf8(user_id) ‖ 0x00 ‖ utf8(token)) (user ids and symbols are visible ASCII: no NUL);
 *   bit d of the key (most significant bit of byte 0 first) picks the child at depth d (0: left).
 * - leaf  = SHA-256(0x10 ‖ key ‖ units as 8 bytes big-endian); node = SHA-256(0x11 ‖ left ‖ right);
 *   an empty subtree is 32 zero bytes.
 * - Compressed ("shortcut") leaves: a subtree holding one leaf is that leaf, placed as high as it is
 *   alone; a subtree holding none is empty. The tree's shape depends only on the set of keys, so one
 *   balance state has exactly one root, and an update rehashes only the paths of the keys it touches.
 * - A zero balance is no leaf: proving absence proves a balance of 0.
 *
 * The tree itself, as the server keeps it in memory, is src/domain/balance-tree.ts.
 */
import { utf8Bytes } from './encoding.js';
import { hashOne, runHashSteps, runHashStepsAsync, type HashFunction, type HashSteps, type SyncHashFunction } from './hash-steps.js';

const LEAF_PREFIX = 0x10;
const NODE_PREFIX = 0x11;
const KEY_BYTES = 32;
/** Depth of the deepest possible leaf: a proof never has more siblings than the key has bits. */
export const BALANCE_PROOF_SIBLINGS_MAX = KEY_BYTES * 8;
/** Largest balance a leaf holds (the stores' 64-bit signed range). */
export const BALANCE_UNITS_MAX = 9_223_372_036_854_775_807n;
export const EMPTY_BALANCE_ROOT = new Uint8Array(KEY_BYTES);

/** One balance to set: `units` 0 removes the key. */
export type BalanceEntry = { key: Uint8Array; units: bigint };

/**
 * The path of one key: the sibling hashes from the root's children down (siblings[d] is the sibling
 * of the path's node at depth d + 1), and the leaf where the path ends: the key's own (its balance),
 * another key's (the key is absent), or none (an empty subtree: absent).
 */
export type BalancePath = { siblings: Uint8Array[]; leaf: { key: Uint8Array; units: bigint } | null };

/** The preimage of a balance key. */
export function balanceKeyInput(user_id: string, token: string): Uint8Array {
  const ascii = asciiBytes(user_id, token);
  if (ascii !== null) return ascii;
  const user = utf8Bytes(user_id);
  const symbol = utf8Bytes(token);
  const input = new Uint8Array(user.length + 1 + symbol.length);
  input.set(user, 0);
  input.set(symbol, user.length + 1);
  return input;
}

/** `user_id ‖ 0x00 ‖ token` when both are ASCII (their UTF-8 is their char codes), without a TextEncoder per key. */
function asciiBytes(user_id: string, token: string): Uint8Array | null {
  const input = new Uint8Array(user_id.length + 1 + token.length);
  for (let index = 0; index < user_id.length; index += 1) {
    const code = user_id.charCodeAt(index);
    if (code > 0x7f) return null;
    input[index] = code;
  }
  for (let index = 0; index < token.length; index += 1) {
    const code = token.charCodeAt(index);
    if (code > 0x7f) return null;
    input[user_id.length + 1 + index] = code;
  }
  return input;
}

export function balanceLeafInput(key: Uint8Array, units: bigint): Uint8Array {
  if (key.length !== KEY_BYTES) throw new RangeError('a balance key is 32 bytes');
  if (units < 0n || units > BALANCE_UNITS_MAX) throw new RangeError(`balance ${units} outside 0..${BALANCE_UNITS_MAX}`);
  const input = new Uint8Array(1 + KEY_BYTES + 8);
  input[0] = LEAF_PREFIX;
  input.set(key, 1);
  new DataView(input.buffer).setBigUint64(1 + KEY_BYTES, units, false);
  return input;
}

export function balanceNodeInput(left: Uint8Array, right: Uint8Array): Uint8Array {
  const input = new Uint8Array(1 + 2 * KEY_BYTES);
  input[0] = NODE_PREFIX;
  input.set(left, 1);
  input.set(right, 1 + KEY_BYTES);
  return input;
}

/** Bit `depth` of `key`: 0 goes left, 1 goes right. */
export function keyBit(key: Uint8Array, depth: number): number {
  return ((key[depth >> 3] as number) >> (7 - (depth & 7))) & 1;
}

export function compareKeys(a: Uint8Array, b: Uint8Array): number {
  for (let index = 0; index < KEY_BYTES; index += 1) {
    const difference = (a[index] as number) - (b[index] as number);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** Why a balance path does not prove anything (null: it is well formed). */
export function balancePathProblem(key: Uint8Array, path: BalancePath): string | null {
  if (key.length !== KEY_BYTES) return 'the key is not 32 bytes';
  if (path.siblings.length > BALANCE_PROOF_SIBLINGS_MAX) return `more than ${BALANCE_PROOF_SIBLINGS_MAX} siblings`;
  if (path.siblings.some((sibling) => sibling.length !== KEY_BYTES)) return 'a sibling is not 32 bytes';
  const leaf = path.leaf;
  if (leaf === null) return null;
  if (leaf.key.length !== KEY_BYTES) return "the leaf's key is not 32 bytes";
  if (leaf.units <= 0n || leaf.units > BALANCE_UNITS_MAX) return 'the leaf holds no balance (a zero balance has no leaf)';
  for (let depth = 0; depth < path.siblings.length; depth += 1) {
    if (keyBit(leaf.key, depth) !== keyBit(key, depth)) return "the leaf's key does not lie on the key's path";
  }
  return null;
}

/** The balance a well-formed path proves for `key`: the leaf's when it is the key's own, else 0. */
export function provenUnits(key: Uint8Array, path: BalancePath): bigint {
  return path.leaf !== null && compareKeys(path.leaf.key, key) === 0 ? path.leaf.units : 0n;
}

/** The root a path leads to, from its leaf (or the empty subtree) up. */
export function* balanceRootFromPathSteps(key: Uint8Array, path: BalancePath): HashSteps<Uint8Array> {
  let hash = path.leaf === null ? EMPTY_BALANCE_ROOT : yield* hashOne(balanceLeafInput(path.leaf.key, path.leaf.units));
  for (let depth = path.siblings.length - 1; depth >= 0; depth -= 1) {
    const sibling = path.siblings[depth] as Uint8Array;
    hash = yield* hashOne(keyBit(key, depth) === 0 ? balanceNodeInput(hash, sibling) : balanceNodeInput(sibling, hash));
  }
  return hash;
}

export function balanceRootFromPath(hash: SyncHashFunction, key: Uint8Array, path: BalancePath): Uint8Array {
  return runHashSteps(balanceRootFromPathSteps(key, path), hash);
}

export function balanceRootFromPathAsync(hash: HashFunction, key: Uint8Array, path: BalancePath): Promise<Uint8Array> {
  return runHashStepsAsync(balanceRootFromPathSteps(key, path), hash);
}

export function balanceKey(hash: SyncHashFunction, user_id: string, token: string): Uint8Array {
  return hash(balanceKeyInput(user_id, token));
}

export async function balanceKeyAsync(hash: HashFunction, user_id: string, token: string): Promise<Uint8Array> {
  return hash(balanceKeyInput(user_id, token));
}

/** A balance proof as the API carries it (see docs/api.md, "Balance proofs"): hashes as 0x-hex, units as decimal text. */
export type BalanceProofEntryJson = {
  token: string;
  /** SHA-256(user_id ‖ 0x00 ‖ token). */
  key: string;
  /** The proven balance in base units ("0" when the key is absent). */
  units: string;
  /** The leaf the key's path ends at: the key's own, another key's (absent), or null (empty: absent). */
  leaf: { key: string; units: string } | null;
  /** Sibling hashes from the root's children down to the leaf. */
  siblings: string[];
};

export type BalanceProofJson = { block_number: number; balance_root: string; entries: BalanceProofEntryJson[] };

export type BalanceProofCheck = { ok: true; units: bigint } | { ok: false; reason: string };

const UNITS_TEXT = /^(0|[1-9][0-9]{0,18})$/;
const HASH_TEXT = /^0x[0-9a-f]{64}$/;

function bytesOfHash(text: string): Uint8Array {
  const bytes = new Uint8Array(KEY_BYTES);
  for (let index = 0; index < KEY_BYTES; index += 1) bytes[index] = Number.parseInt(text.slice(2 + index * 2, 4 + index * 2), 16);
  return bytes;
}

function hexOfBytes(bytes: Uint8Array): string {
  let text = '0x';
  for (const byte of bytes) text += byte.toString(16).padStart(2, '0');
  return text;
}

export function balanceEntryJson(token: string, key: Uint8Array, path: BalancePath): BalanceProofEntryJson {
  return {
    token,
    key: hexOfBytes(key),
    units: provenUnits(key, path).toString(),
    leaf: path.leaf === null ? null : { key: hexOfBytes(path.leaf.key), units: path.leaf.units.toString() },
    siblings: path.siblings.map(hexOfBytes),
  };
}

/**
 * Checks one entry of a balance proof for `user_id` against `balance_root`: its key is the user's and
 * token's, its path is well formed, its `units` is what the path proves, and the path leads to the root.
 */
export function* checkBalanceEntrySteps(user_id: string, entry: BalanceProofEntryJson, balance_root: string): HashSteps<BalanceProofCheck> {
  const shaped = entryShapeProblem(entry) ?? (HASH_TEXT.test(balance_root) ? null : 'the balance root is not a 0x-hex hash');
  if (shaped !== null) return { ok: false, reason: shaped };
  const key = yield* hashOne(balanceKeyInput(user_id, entry.token));
  if (hexOfBytes(key) !== entry.key) return { ok: false, reason: `the entry's key is not SHA-256(${user_id} ‖ 0x00 ‖ ${entry.token})` };
  const path: BalancePath = {
    siblings: entry.siblings.map(bytesOfHash),
    leaf: entry.leaf === null ? null : { key: bytesOfHash(entry.leaf.key), units: BigInt(entry.leaf.units) },
  };
  const problem = balancePathProblem(key, path);
  if (problem !== null) return { ok: false, reason: problem };
  const units = provenUnits(key, path);
  if (units !== BigInt(entry.units)) return { ok: false, reason: `the entry states ${entry.units} base units of ${entry.token}, but its path proves ${units}` };
  const root = yield* balanceRootFromPathSteps(key, path);
  if (hexOfBytes(root) !== balance_root) return { ok: false, reason: `the path of ${entry.token} does not lead to balance root ${balance_root}` };
  return { ok: true, units };
}

function entryShapeProblem(entry: BalanceProofEntryJson): string | null {
  if (typeof entry !== 'object' || entry === null) return 'an entry is not an object';
  if (typeof entry.token !== 'string' || entry.token.length === 0) return 'an entry has no token';
  if (typeof entry.key !== 'string' || !HASH_TEXT.test(entry.key)) return `the key of ${entry.token} is not a 0x-hex hash`;
  if (typeof entry.units !== 'string' || !UNITS_TEXT.test(entry.units)) return `the units of ${entry.token} are not base units`;
  if (!Array.isArray(entry.siblings) || entry.siblings.length > BALANCE_PROOF_SIBLINGS_MAX) return `the siblings of ${entry.token} are not a list of at most ${BALANCE_PROOF_SIBLINGS_MAX}`;
  if (!entry.siblings.every((sibling) => typeof sibling === 'string' && HASH_TEXT.test(sibling))) return `a sibling of ${entry.token} is not a 0x-hex hash`;
  const leaf = entry.leaf;
  if (leaf === null) return null;
  if (typeof leaf !== 'object' || typeof leaf.key !== 'string' || !HASH_TEXT.test(leaf.key) || typeof leaf.units !== 'string' || !UNITS_TEXT.test(leaf.units)) {
    return `the leaf of ${entry.token} is not { key, units }`;
  }
  return null;
}

export function checkBalanceEntry(hash: SyncHashFunction, user_id: string, entry: BalanceProofEntryJson, balance_root: string): BalanceProofCheck {
  return runHashSteps(checkBalanceEntrySteps(user_id, entry, balance_root), hash);
}

export function checkBalanceEntryAsync(hash: HashFunction, user_id: string, entry: BalanceProofEntryJson, balance_root: string): Promise<BalanceProofCheck> {
  return runHashStepsAsync(checkBalanceEntrySteps(user_id, entry, balance_root), hash);
}
