import { InvalidRequestError } from './errors.js';

export const USER_ID_LENGTH_MAX = 128;
// Whitespace (including Unicode spaces), control characters and lone surrogates are not allowed anywhere in an id.
const FORBIDDEN = /[\s\p{Cc}\p{Cs}]/u;

/** 1..128 characters (code points), no whitespace or control characters. */
export function isUserId(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0) return false;
  if (FORBIDDEN.test(value)) return false;
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
      `${field} must be 1 to ${USER_ID_LENGTH_MAX} characters with no whitespace or control characters`,
      field,
    );
  }
  return value;
}
