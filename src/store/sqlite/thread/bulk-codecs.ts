/**
 * The calls whose payloads grow with a block, and how they cross to and from the store's thread as
 * columns (record-columns.ts) rather than as structured clones of their objects: a block's pending
 * postings (read for sealing) and its commit (outcomes, balances, users). A commit's postings are the
 * ones the thread itself answered with: they go back as the answer's number, not again as data.
 */
import type { TransactionType, FailureCode } from '../../../domain/transaction.js';
import type { BalanceChange, BlockCommit, PendingPosting, TransactionOutcome } from '../../../service/ledger-store.js';
import {
  buffersOf, columnBuffers, DictionaryReader, DictionaryWriter, int64, TextReader, TextWriter, type DictionaryColumn, type TextColumn,
} from './record-columns.js';


type Encoded<T> = { value: T; transfer: ArrayBuffer[] };

/** Postings: per row its hash, four repeating strings (from, to, token, type) and five numbers. */
type PostingColumns = {
  count: number;
  hashes: TextColumn;
  words: DictionaryColumn;
  seq: Float64Array;
  timestamp: Float64Array;
  amount_units: BigInt64Array;
  min_receive_units: BigInt64Array;
  /** 1 where `min_receive_units` is set, 0 where it is null or absent. */
  has_min_receive: Uint8Array;
};

/** A `pendingPostings` answer: the postings, and the number the thread keeps them under for the commit that follows. */
export type PackedPostings = { postings: PostingColumns; served_id: number };

function postingColumns(postings: readonly PendingPosting[]): PostingColumns {
  const count = postings.length;
  const columns = {
    seq: new Float64Array(count), timestamp: new Float64Array(count),
    amount_units: new BigInt64Array(count), min_receive_units: new BigInt64Array(count), has_min_receive: new Uint8Array(count),
  };
  const hashes = new TextWriter(count);
  const words = new DictionaryWriter(count * 4);
  for (let index = 0; index < count; index += 1) {
    const posting = postings[index] as PendingPosting;
    hashes.add(posting.tx_hash);
    words.add(posting.from);
    words.add(posting.to);
    words.add(posting.token);
    words.add(posting.type);
    columns.seq[index] = posting.seq;
    columns.timestamp[index] = posting.timestamp;
    columns.amount_units[index] = int64(posting.amount_units);
    const min_receive = posting.min_receive_units;
    if (min_receive !== null && min_receive !== undefined) {
      columns.min_receive_units[index] = int64(min_receive);
      columns.has_min_receive[index] = 1;
    }
  }
  return { count, hashes: hashes.finish(), words: words.finish(), ...columns };
}

function postingsOf(columns: PostingColumns): PendingPosting[] {
  const hashes = new TextReader(columns.hashes);
  const words = new DictionaryReader(columns.words);
  const postings: PendingPosting[] = new Array(columns.count);
  for (let index = 0; index < columns.count; index += 1) {
    postings[index] = {
      tx_hash: hashes.nextString(),
      from: words.nextString(),
      to: words.nextString(),
      token: words.nextString(),
      type: words.nextString() as TransactionType,
      seq: columns.seq[index] as number,
      timestamp: columns.timestamp[index] as number,
      amount_units: columns.amount_units[index] as bigint,
      min_receive_units: columns.has_min_receive[index] === 1 ? (columns.min_receive_units[index] as bigint) : null,
    };
  }
  hashes.done();
  words.done();
  return postings;
}

function postingBuffers(columns: PostingColumns): ArrayBuffer[] {
  return [...columnBuffers(columns.hashes), ...columnBuffers(columns.words), ...buffersOf(columns.seq, columns.timestamp, columns.amount_units, columns.min_receive_units, columns.has_min_receive)];
}

export function packPostings(postings: readonly PendingPosting[], served_id: number): Encoded<PackedPostings> {
  const columns = postingColumns(postings);
  return { value: { postings: columns, served_id }, transfer: postingBuffers(columns) };
}

export function unpackPostings(value: PackedPostings): PendingPosting[] {
  return postingsOf(value.postings);
}

/** Outcomes: per row its hash, status and error (null: none), its row number (NaN: absent), position and payout. */
type OutcomeColumns = {
  count: number;
  hashes: TextColumn;
  words: DictionaryColumn;
  seq: Float64Array;
  position: Float64Array;
  amount_out_units: BigInt64Array;
  /** 0: absent, 1: null, 2: set. */
  amount_out_state: Uint8Array;
};

const AMOUNT_OUT_ABSENT = 0;
const AMOUNT_OUT_NULL = 1;
const AMOUNT_OUT_SET = 2;

function outcomeColumns(outcomes: readonly TransactionOutcome[]): OutcomeColumns {
  const count = outcomes.length;
  const columns = { seq: new Float64Array(count), position: new Float64Array(count), amount_out_units: new BigInt64Array(count), amount_out_state: new Uint8Array(count) };
  const hashes = new TextWriter(count);
  const words = new DictionaryWriter(count * 2);
  for (let index = 0; index < count; index += 1) {
    const outcome = outcomes[index] as TransactionOutcome;
    hashes.add(outcome.tx_hash);
    words.add(outcome.status);
    words.add(outcome.error);
    columns.seq[index] = outcome.seq ?? Number.NaN;
    columns.position[index] = outcome.position;
    const amount_out = outcome.amount_out_units;
    if (amount_out === undefined) continue;
    if (amount_out === null) columns.amount_out_state[index] = AMOUNT_OUT_NULL;
    else {
      columns.amount_out_units[index] = int64(amount_out);
      columns.amount_out_state[index] = AMOUNT_OUT_SET;
    }
  }
  return { count, hashes: hashes.finish(), words: words.finish(), ...columns };
}

function outcomesOf(columns: OutcomeColumns): TransactionOutcome[] {
  const hashes = new TextReader(columns.hashes);
  const words = new DictionaryReader(columns.words);
  const outcomes: TransactionOutcome[] = new Array(columns.count);
  for (let index = 0; index < columns.count; index += 1) {
    const tx_hash = hashes.nextString();
    const status = words.nextString() as TransactionOutcome['status'];
    const error = words.next() as FailureCode | null;
    const seq = columns.seq[index] as number;
    const state = columns.amount_out_state[index];
    const outcome: TransactionOutcome = { tx_hash, position: columns.position[index] as number, status, error };
    if (!Number.isNaN(seq)) outcome.seq = seq;
    if (state !== AMOUNT_OUT_ABSENT) outcome.amount_out_units = state === AMOUNT_OUT_SET ? (columns.amount_out_units[index] as bigint) : null;
    outcomes[index] = outcome;
  }
  hashes.done();
  words.done();
  return outcomes;
}

/** Balances: per row its user and token, and the units. */
type BalanceColumns = { count: number; words: DictionaryColumn; units: BigInt64Array };

function balanceColumns(balances: readonly BalanceChange[]): BalanceColumns {
  const words = new DictionaryWriter(balances.length * 2);
  const units = new BigInt64Array(balances.length);
  balances.forEach((balance, index) => {
    words.add(balance.user_id);
    words.add(balance.token);
    units[index] = int64(balance.units);
  });
  return { count: balances.length, words: words.finish(), units };
}

function balancesOf(columns: BalanceColumns): BalanceChange[] {
  const words = new DictionaryReader(columns.words);
  const balances: BalanceChange[] = new Array(columns.count);
  for (let index = 0; index < columns.count; index += 1) balances[index] = { user_id: words.nextString(), token: words.nextString(), units: columns.units[index] as bigint };
  words.done();
  return balances;
}

function userColumn(user_ids: readonly string[]): TextColumn {
  const text = new TextWriter(user_ids.length);
  for (const user_id of user_ids) text.add(user_id);
  return text.finish();
}

function usersOf(column: TextColumn): string[] {
  const text = new TextReader(column);
  const user_ids: string[] = new Array(column.lengths.length);
  for (let index = 0; index < user_ids.length; index += 1) user_ids[index] = text.nextString();
  text.done();
  return user_ids;
}

/**
 * A commit as it crosses: its small parts as they are, its large ones as columns. `postings` is one of:
 * the number of the `pendingPostings` answer they are (the thread still holds them), the postings as
 * columns, or null (the commit passed none).
 */
export type PackedCommit = Omit<BlockCommit, 'outcomes' | 'balances' | 'new_users' | 'active_users' | 'postings'> & {
  outcomes: OutcomeColumns;
  balances: BalanceColumns;
  new_users: TextColumn;
  active_users: TextColumn;
  postings: { served_id: number } | { columns: PostingColumns } | null;
};

export function packCommit(commit: BlockCommit, served_id: number | null): Encoded<PackedCommit> {
  const { outcomes, balances, new_users, active_users, postings, ...rest } = commit;
  const posting_columns = postings === undefined || served_id !== null ? null : postingColumns(postings);
  const value: PackedCommit = {
    ...rest,
    outcomes: outcomeColumns(outcomes),
    balances: balanceColumns(balances),
    new_users: userColumn(new_users),
    active_users: userColumn(active_users),
    postings: postings === undefined ? null : posting_columns === null ? { served_id: served_id as number } : { columns: posting_columns },
  };
  const transfer = [
    ...columnBuffers(value.outcomes.hashes), ...columnBuffers(value.outcomes.words),
    ...buffersOf(value.outcomes.seq, value.outcomes.position, value.outcomes.amount_out_units, value.outcomes.amount_out_state),
    ...columnBuffers(value.balances.words), ...buffersOf(value.balances.units), ...columnBuffers(value.new_users), ...columnBuffers(value.active_users),
  ];
  return { value, transfer: posting_columns === null ? transfer : [...transfer, ...postingBuffers(posting_columns)] };
}

/** The commit again; `served(id)` gives the postings of a `pendingPostings` answer the thread still holds (null: no longer). */
export function unpackCommit(value: PackedCommit, served: (served_id: number) => readonly PendingPosting[] | null): BlockCommit | null {
  const { outcomes, balances, new_users, active_users, postings, ...rest } = value;
  let passed: readonly PendingPosting[] | undefined;
  if (postings === null) passed = undefined;
  else if ('served_id' in postings) {
    const kept = served(postings.served_id);
    if (kept === null) return null;
    passed = kept;
  } else passed = postingsOf(postings.columns);
  return {
    ...rest,
    outcomes: outcomesOf(outcomes),
    balances: balancesOf(balances),
    new_users: usersOf(new_users),
    active_users: usersOf(active_users),
    ...(passed === undefined ? {} : { postings: passed }),
  };
}
