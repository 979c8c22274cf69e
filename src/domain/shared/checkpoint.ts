/**
 * Signed checkpoints: the note text (modelled on the C2SP checkpoint format: origin line, size, base64
 * history root, then extension lines, each ending in a newline), its parsing, base64, and the key id.
 * Pure, so the SDK and a browser check the same text the server signs; signing and verifying the
 * Ed25519 signature over the note's UTF-8 bytes is left to the caller's crypto.
 */
import { hashOne, type HashSteps } from './hash-steps.js';
import { bytesToHex } from './hex.js';

export const CHECKPOINT_ORIGIN_PREFIX = 'tabula/';
export const CHECKPOINT_SIGNATURE_ALGORITHM = 'Ed25519';
/** Extension lines one note carries at the most, and the length of each. */
export const CHECKPOINT_EXTENSIONS_MAX = 16;
export const CHECKPOINT_EXTENSION_LENGTH_MAX = 256;

/** What `GET /api/checkpoint` answers. */
export type SignedCheckpoint = {
  size: number;
  history_root: string;
  block_number: number;
  block_hash: string;
  timestamp: number;
  note: string;
  signature: string;
  key_id: string;
};

export type CheckpointNote = { origin: string; size: number; root: Uint8Array; extensions: string[] };

/** The ledger's origin line: `tabula/` and the genesis block's hash, so that two ledgers' notes never mix. */
export function checkpointOrigin(genesis_hash: string): string {
  return `${CHECKPOINT_ORIGIN_PREFIX}${genesis_hash}`;
}

/** The block extension line every Tabula note carries: the newest block's number, hash and timestamp. */
export function blockExtension(block_number: number, block_hash: string, timestamp: number): string {
  return `block ${block_number} ${block_hash} ${timestamp}`;
}

function checkExtension(line: string): void {
  if (line.length === 0 || line.length > CHECKPOINT_EXTENSION_LENGTH_MAX || /[\n\r]/.test(line) || line.trim() !== line) {
    throw new RangeError(`a checkpoint extension line must be 1..${CHECKPOINT_EXTENSION_LENGTH_MAX} characters on one line: ${JSON.stringify(line)}`);
  }
}

/** The note text that is signed. */
export function checkpointNoteText(note: CheckpointNote): string {
  if (note.extensions.length > CHECKPOINT_EXTENSIONS_MAX) throw new RangeError(`at most ${CHECKPOINT_EXTENSIONS_MAX} extension lines`);
  note.extensions.forEach(checkExtension);
  return [note.origin, String(note.size), base64Encode(note.root), ...note.extensions].map((line) => `${line}\n`).join('');
}

/** Reads a note's text back; null when it is not one (so a forged note can never half-parse). */
export function parseCheckpointNote(text: string): CheckpointNote | null {
  if (!text.endsWith('\n') || text.length > 8192) return null;
  const lines = text.slice(0, -1).split('\n');
  const [origin, size_text, root_text, ...extensions] = lines;
  if (origin === undefined || size_text === undefined || root_text === undefined) return null;
  if (!origin.startsWith(CHECKPOINT_ORIGIN_PREFIX) || !/^(0|[1-9][0-9]{0,15})$/.test(size_text)) return null;
  const size = Number(size_text);
  const root = base64Decode(root_text);
  if (!Number.isSafeInteger(size) || root === null || root.length !== 32) return null;
  if (extensions.length > CHECKPOINT_EXTENSIONS_MAX || extensions.some((line) => line.length === 0 || line.length > CHECKPOINT_EXTENSION_LENGTH_MAX)) return null;
  return { origin, size, root, extensions };
}

/** The `block <number> <hash> <timestamp>` extension of a parsed note, or null. */
export function noteBlock(note: CheckpointNote): { block_number: number; block_hash: string; timestamp: number } | null {
  for (const line of note.extensions) {
    const match = /^block (0|[1-9][0-9]{0,15}) (0x[0-9a-f]{64}) (0|[1-9][0-9]{0,15})$/.exec(line);
    if (match !== null) return { block_number: Number(match[1]), block_hash: match[2] as string, timestamp: Number(match[3]) };
  }
  return null;
}

/**
 * The reason a signed checkpoint's fields disagree with its note (which is what the signature covers),
 * or null when they agree. A client checks this and the signature, then trusts only the note.
 */
export function checkpointFieldsMismatch(checkpoint: SignedCheckpoint): string | null {
  const note = parseCheckpointNote(checkpoint.note);
  if (note === null) return 'the note is not a Tabula checkpoint note';
  if (note.size !== checkpoint.size) return `the note says size ${note.size}, the response ${checkpoint.size}`;
  if (`0x${bytesToHex(note.root)}` !== checkpoint.history_root) return 'the note\'s history root differs from the response\'s';
  const block = noteBlock(note);
  if (block === null) return 'the note has no block line';
  if (block.block_number !== checkpoint.size - 1 || block.block_number !== checkpoint.block_number) return 'the note\'s block number does not match its size';
  if (block.block_hash !== checkpoint.block_hash || block.timestamp !== checkpoint.timestamp) return 'the note\'s block line differs from the response\'s';
  return null;
}

/** key_id: the first 8 bytes of SHA-256 over the raw 32-byte public key, as 16 hex digits. */
export function* keyIdSteps(public_key: Uint8Array): HashSteps<string> {
  const digest = yield* hashOne(public_key);
  return bytesToHex(digest.subarray(0, 8));
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

export function base64Encode(bytes: Uint8Array): string {
  let text = '';
  for (let index = 0; index < bytes.length; index += 3) {
    const a = bytes[index] as number;
    const b = bytes[index + 1];
    const c = bytes[index + 2];
    const triple = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
    text += BASE64_ALPHABET[(triple >> 18) & 63];
    text += BASE64_ALPHABET[(triple >> 12) & 63];
    text += b === undefined ? '=' : BASE64_ALPHABET[(triple >> 6) & 63];
    text += c === undefined ? '=' : BASE64_ALPHABET[triple & 63];
  }
  return text;
}

/** Strict standard base64 with padding; null for anything else. */
export function base64Decode(text: string): Uint8Array | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const bytes = new Uint8Array((text.length / 4) * 3 - padding);
  let out = 0;
  for (let index = 0; index < text.length; index += 4) {
    let triple = 0;
    for (let offset = 0; offset < 4; offset += 1) {
      const char = text[index + offset] as string;
      triple = (triple << 6) | (char === '=' ? 0 : BASE64_ALPHABET.indexOf(char));
    }
    for (const shift of [16, 8, 0]) {
      if (out < bytes.length) bytes[out] = (triple >> shift) & 255;
      out += 1;
    }
  }
  return base64Encode(bytes) === text ? bytes : null;
}
