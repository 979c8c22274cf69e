/**
 * User ids: what an account is called. One spelling per account: an id is in Unicode NFC, so `Zoé`
 * typed as e + U+0301 (NFD) is refused rather than becoming a second account, and it holds no
 * whitespace, control characters, lone surrogates or invisible format characters (bidi controls such
 * as U+202E, zero-width characters: `\p{Cf}`), so that no id can display as another.
 */
import { InvalidRequestError } from './shared/errors.js';

export const USER_ID_LENGTH_MAX = 128;
const FORBIDDEN = /[\s\p{Cc}\p{Cs}\p{Cf}]/u;
/** Visible ASCII: always NFC, so the normalisation check is skipped for the ids most systems use. */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** 1..128 characters (code points) in NFC, with no whitespace, control or invisible format characters. */
export function isUserId(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0) return false;
  if (VISIBLE_ASCII.test(value)) return value.length <= USER_ID_LENGTH_MAX;
  if (FORBIDDEN.test(value) || value.normalize('NFC') !== value) return false;
  let count = 0;
  for (const _ of value) {
    count += 1;
    if (count > USER_ID_LENGTH_MAX) return false;
  }
  return true;
}

export function parseUserId(value: unknown, field: string): string {
  if (!isUserId(value)) {
    throw new InvalidRequestError(
      'invalid_user_id',
      `${field} must be 1 to ${USER_ID_LENGTH_MAX} characters in Unicode NFC, with no whitespace, control or invisible format characters`,
      field,
    );
  }
  return value;
}
