/**
 * Columns for handing many flat records (a block's outcomes, its postings, balances) between the event
 * loop and the store's thread. A structured clone copies an array of objects property by property,
 * twice (written on one thread, read on the other): about 3 µs an object for a block's postings, so
 * 100,000 of them cost more than SQLite's work on them. As columns, every string of the records is one
 * string (the values end to end, with their lengths) and every number or bigint field one typed array,
 * moved to the other thread without a copy. The codecs (bulk-codecs.ts) write and read them in loops of
 * their own, field by field, which is what makes them cheap.
 */
import { assert } from '../../../domain/shared/errors.js';

/** Strings end to end with their lengths (NULL_LENGTH for null), read back in the order written. */
export type TextColumn = { text: string; lengths: Uint32Array };

const NULL_LENGTH = 0xffff_ffff;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export class TextWriter {
  private readonly parts: string[];
  private readonly lengths: Uint32Array;
  private count = 0;

  constructor(capacity: number) {
    this.parts = new Array<string>(capacity);
    this.lengths = new Uint32Array(capacity);
  }

  add(value: string | null): void {
    assert(this.count < this.lengths.length, 'a text column takes what it was sized for');
    if (value === null) {
      this.lengths[this.count] = NULL_LENGTH;
      this.parts[this.count] = '';
    } else {
      assert(value.length < NULL_LENGTH, 'a string of a text column is shorter than 4 GiB');
      this.lengths[this.count] = value.length;
      this.parts[this.count] = value;
    }
    this.count += 1;
  }

  finish(): TextColumn {
    assert(this.count === this.lengths.length, 'a text column is filled before it is sent');
    return { text: this.parts.join(''), lengths: this.lengths };
  }
}

export class TextReader {
  private readonly column: TextColumn;
  private index = 0;
  private offset = 0;

  constructor(column: TextColumn) {
    this.column = column;
  }

  next(): string | null {
    const length = this.column.lengths[this.index];
    assert(length !== undefined, 'a text column is read no further than it was written');
    this.index += 1;
    if (length === NULL_LENGTH) return null;
    const value = this.column.text.slice(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }

  /** A value written as a string (never null). */
  nextString(): string {
    const value = this.next();
    assert(value !== null, 'a text column holds a string here');
    return value;
  }

  /** Asserts the column was read whole. */
  done(): void {
    assert(this.index === this.column.lengths.length && this.offset === this.column.text.length, 'a text column is read whole');
  }
}

/**
 * Strings that repeat (accounts, tokens, types, statuses) as indices into a table of the distinct ones:
 * one string per distinct value instead of per row (joining and slicing 100,000 short strings took
 * longer than SQLite's reading them), and the reader's records share the table's strings.
 */
export type DictionaryColumn = { table: TextColumn; codes: Uint32Array };

export class DictionaryWriter {
  private readonly indices = new Map<string, number>();
  private readonly values: string[] = [];
  private readonly codes: Uint32Array;
  private count = 0;

  constructor(capacity: number) {
    this.codes = new Uint32Array(capacity);
  }

  add(value: string | null): void {
    assert(this.count < this.codes.length, 'a dictionary column takes what it was sized for');
    if (value === null) {
      this.codes[this.count] = NULL_LENGTH;
    } else {
      let index = this.indices.get(value);
      if (index === undefined) {
        index = this.values.length;
        this.indices.set(value, index);
        this.values.push(value);
      }
      this.codes[this.count] = index;
    }
    this.count += 1;
  }

  finish(): DictionaryColumn {
    assert(this.count === this.codes.length, 'a dictionary column is filled before it is sent');
    const table = new TextWriter(this.values.length);
    for (const value of this.values) table.add(value);
    return { table: table.finish(), codes: this.codes };
  }
}

export class DictionaryReader {
  private readonly values: string[];
  private readonly codes: Uint32Array;
  private index = 0;

  constructor(column: DictionaryColumn) {
    const table = new TextReader(column.table);
    this.values = Array.from({ length: column.table.lengths.length }, () => table.nextString());
    table.done();
    this.codes = column.codes;
  }

  next(): string | null {
    const code = this.codes[this.index];
    assert(code !== undefined, 'a dictionary column is read no further than it was written');
    this.index += 1;
    if (code === NULL_LENGTH) return null;
    const value = this.values[code];
    assert(value !== undefined, 'a dictionary code names a value of its table');
    return value;
  }

  nextString(): string {
    const value = this.next();
    assert(value !== null, 'a dictionary column holds a string here');
    return value;
  }

  done(): void {
    assert(this.index === this.codes.length, 'a dictionary column is read whole');
  }
}

/** The buffers of a text or dictionary column. */
export function columnBuffers(column: TextColumn | DictionaryColumn): ArrayBuffer[] {
  return 'codes' in column ? buffersOf(column.codes, column.table.lengths) : buffersOf(column.lengths);
}

/** A 64-bit integer for a BigInt64Array, which would wrap a value out of its range without a word (SQLite's integers are 64-bit too). */
export function int64(value: bigint): bigint {
  assert(value >= INT64_MIN && value <= INT64_MAX, 'a bigint column holds 64-bit integers');
  return value;
}

/** The buffers behind typed arrays, moved to the receiving thread rather than copied. */
export function buffersOf(...arrays: ReadonlyArray<{ buffer: ArrayBufferLike }>): ArrayBuffer[] {
  return arrays.map((array) => array.buffer as ArrayBuffer);
}
