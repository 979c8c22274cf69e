/**
 * The signed-in user: the bearer token in sessionStorage (gone when the tab closes, never in a URL),
 * and what the page reads from its claims to show who is signed in. The claims are only displayed;
 * the service verifies every token on every request.
 */
const STORAGE_KEY = 'tabula.explorer.token';
const TOKEN_LENGTH_MAX = 16 * 1024;

export type Session = {
  token: string;
  /** The token's `sub`: the account this user sends from. */
  sub: string;
  /** The token's `exp`, Unix seconds. */
  expires_at_s: number | null;
  scopes: string[];
};

export class TokenFormatError extends Error {}

/** What the page uses of `window.sessionStorage`. */
export type TokenStorage = {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
};

/** Reads the token's claims; throws TokenFormatError when it is not a JWT with a subject. */
export function sessionFromToken(raw: string): Session {
  const token = raw.trim().replace(/^Bearer\s+/i, '');
  if (token.length === 0) throw new TokenFormatError('Paste a token first.');
  if (token.length > TOKEN_LENGTH_MAX) throw new TokenFormatError('That is too long to be a token.');
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]*$/.test(part))) {
    throw new TokenFormatError('That is not a JWT: a token is three base64url parts separated by dots.');
  }
  const claims = decodeClaims(parts[1] ?? '');
  if (typeof claims.sub !== 'string' || claims.sub === '') throw new TokenFormatError('The token names no user (it has no "sub" claim).');
  return {
    token,
    sub: claims.sub,
    expires_at_s: typeof claims.exp === 'number' ? claims.exp : null,
    scopes: scopesOf(claims),
  };
}

export function isExpired(session: Session, now_ms: number = Date.now()): boolean {
  return session.expires_at_s !== null && session.expires_at_s * 1000 <= now_ms;
}

export function loadSession(storage: TokenStorage): Session | null {
  const token = storage.getItem(STORAGE_KEY);
  if (token === null) return null;
  try {
    return sessionFromToken(token);
  } catch {
    storage.removeItem(STORAGE_KEY);
    return null;
  }
}

export function saveSession(storage: TokenStorage, session: Session): void {
  storage.setItem(STORAGE_KEY, session.token);
}

export function clearSession(storage: TokenStorage): void {
  storage.removeItem(STORAGE_KEY);
}

function decodeClaims(part: string): Record<string, unknown> {
  try {
    const base64 = part.replace(/-/g, '+').replace(/_/g, '/');
    const binary = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
    const bytes = Uint8Array.from(binary, (character) => character.charCodeAt(0));
    const claims: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw new Error('not an object');
    return claims as Record<string, unknown>;
  } catch {
    throw new TokenFormatError('The token\'s claims cannot be read: it is not a JWT.');
  }
}

function scopesOf(claims: Record<string, unknown>): string[] {
  const scopes: string[] = [];
  if (typeof claims.scope === 'string') scopes.push(...claims.scope.split(' '));
  if (typeof claims.scp === 'string') scopes.push(...claims.scp.split(' '));
  if (Array.isArray(claims.scp)) scopes.push(...claims.scp.filter((item): item is string => typeof item === 'string'));
  return scopes.filter((scope) => scope !== '');
}
