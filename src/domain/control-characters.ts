/**
 * Text that people read and that every store holds as given may not carry control characters (C0,
 * DEL, C1: a NUL is refused by PostgreSQL as an encoding error) nor lone UTF-16 surrogates (no UTF-8
 * form). One rule for the token subject and a webhook's description; user ids refuse these and more
 * (user-id.ts).
 */
const CONTROL_OR_LONE_SURROGATE = /[\p{Cc}\p{Cs}]/u;

export function holdsControlCharacters(text: string): boolean {
  return CONTROL_OR_LONE_SURROGATE.test(text);
}
