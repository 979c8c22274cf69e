/**
 * The explorer's pure parts, without a browser: routes (what a URL fragment names and back), the
 * search box's reading of what was typed, the token's claims, the display formats, and how an
 * account's history reads from the account's side.
 */
import { describe, expect, it } from 'vitest';
import { formatAge, formatDuration, groupDigits, shortHash } from '../../explorer/src/format.js';
import { HISTORY_PAGE_SIZE, NEWEST_PAGE, olderPage, pageRange, sideOf } from '../../explorer/src/history.js';
import { href, parseRoute, searchTarget, type Route } from '../../explorer/src/routes.js';
import { clearSession, isExpired, loadSession, saveSession, sessionFromToken, TokenFormatError } from '../../explorer/src/session.js';

const HASH = `0x${'ab'.repeat(32)}`;

describe('routes', () => {
  it.each<[string, Route]>([
    ['', { name: 'home' }],
    ['#/', { name: 'home' }],
    ['#/blocks', { name: 'blocks', from: null, limit: 20 }],
    ['#/blocks?from=120', { name: 'blocks', from: 120, limit: 20 }],
    ['#/blocks?from=120&limit=5', { name: 'blocks', from: 120, limit: 5 }],
    ['#/block/0', { name: 'block', number: 0 }],
    ['#/block/42', { name: 'block', number: 42 }],
    [`#/tx/${HASH}`, { name: 'transaction', hash: HASH }],
    [`#/tx/${HASH.toUpperCase().replace('0X', '0x')}`, { name: 'transaction', hash: HASH }],
    ['#/account/alice', { name: 'account', user: 'alice' }],
    ['#/account/auth0%7C5f7c8ec7', { name: 'account', user: 'auth0|5f7c8ec7' }],
    ['#/account/a%40b.example', { name: 'account', user: 'a@b.example' }],
    ['#/transfer', { name: 'transfer' }],
    ['#/swap', { name: 'swap' }],
  ])('%s is %j, and back', (fragment, route) => {
    expect(parseRoute(fragment)).toEqual(route);
    expect(parseRoute(href(route))).toEqual(route);
  });

  it.each(['#/block/-1', '#/block/1.5', '#/block/x', '#/tx/0x12', '#/nowhere', '#/block/1/2'])('%s is not a page', (fragment) => {
    expect(parseRoute(fragment).name).toBe('not_found');
  });

  it('ignores a bad page position or size instead of failing', () => {
    expect(parseRoute('#/blocks?from=-3&limit=1000')).toEqual({ name: 'blocks', from: null, limit: 20 });
    expect(parseRoute('#/blocks?limit=0')).toEqual({ name: 'blocks', from: null, limit: 20 });
  });
});

describe('the search box', () => {
  it('reads a hash, a block number or a user id', () => {
    expect(searchTarget(` ${HASH} `)).toEqual({ route: { name: 'transaction', hash: HASH } });
    expect(searchTarget('17')).toEqual({ route: { name: 'block', number: 17 } });
    expect(searchTarget('#17')).toEqual({ route: { name: 'block', number: 17 } });
    expect(searchTarget('alice')).toEqual({ route: { name: 'account', user: 'alice' } });
    expect(searchTarget('auth0|5f7c8ec7c33c6c004bbafe82')).toEqual({ route: { name: 'account', user: 'auth0|5f7c8ec7c33c6c004bbafe82' } });
  });

  it('explains what it cannot read', () => {
    expect(searchTarget('   ')).toEqual({ problem: expect.stringMatching(/Type a transaction hash/) });
    expect(searchTarget('0xabc')).toEqual({ problem: expect.stringMatching(/64 hexadecimal digits/) });
    expect(searchTarget('two words')).toEqual({ problem: expect.stringMatching(/no spaces/) });
    expect(searchTarget('x'.repeat(129))).toEqual({ problem: expect.stringMatching(/128 characters/) });
  });
});

function jwt(claims: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'ES256', typ: 'JWT' })}.${part(claims)}.c2lnbmF0dXJl`;
}

describe('the session', () => {
  it('reads the subject, expiry and scopes of a pasted token, with or without "Bearer"', () => {
    const token = jwt({ sub: 'alice', exp: 2_000_000_000, scope: 'openid ledger:admin' });
    expect(sessionFromToken(`Bearer ${token}\n`)).toEqual({ token, sub: 'alice', expires_at_s: 2_000_000_000, scopes: ['openid', 'ledger:admin'] });
    expect(sessionFromToken(jwt({ sub: 'bob', scp: ['a', 'b'] })).scopes).toEqual(['a', 'b']);
  });

  it('refuses what is not a JWT with a subject, saying why', () => {
    for (const [text, reason] of [
      ['', /Paste a token/],
      ['not-a-token', /three base64url parts/],
      ['a.b c.d', /three base64url parts/],
      ['eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.c2ln', /cannot be read/],
      [jwt({ name: 'no subject' }), /no "sub" claim/],
      ['x'.repeat(20_000), /too long/],
    ] as const) {
      expect(() => sessionFromToken(text), text.slice(0, 30)).toThrowError(TokenFormatError);
      expect(() => sessionFromToken(text), text.slice(0, 30)).toThrowError(reason);
    }
  });

  it('knows when the token has expired', () => {
    const session = sessionFromToken(jwt({ sub: 'alice', exp: 1000 }));
    expect(isExpired(session, 999_999)).toBe(false);
    expect(isExpired(session, 1_000_000)).toBe(true);
    expect(isExpired(sessionFromToken(jwt({ sub: 'alice' })), Date.now())).toBe(false);
  });

  it('keeps the token in the given storage only, and drops one that is not a token', () => {
    const store = new Map<string, string>();
    const storage = { getItem: (key: string) => store.get(key) ?? null, setItem: (key: string, value: string) => void store.set(key, value), removeItem: (key: string) => void store.delete(key) };
    expect(loadSession(storage)).toBeNull();
    const session = sessionFromToken(jwt({ sub: 'alice' }));
    saveSession(storage, session);
    expect([...store.values()]).toEqual([session.token]);
    expect(loadSession(storage)).toEqual(session);
    clearSession(storage);
    expect(store.size).toBe(0);
    store.set('tabula.explorer.token', 'garbage');
    expect(loadSession(storage)).toBeNull();
    expect(store.size).toBe(0);
  });
});

describe('display formats', () => {
  it('groups digits without touching the exact decimals', () => {
    expect(groupDigits('1234567.12345678')).toBe('1,234,567.12345678');
    expect(groupDigits('92233720368.54775807')).toBe('92,233,720,368.54775807');
    expect(groupDigits('0')).toBe('0');
    expect(groupDigits('999')).toBe('999');
    expect(groupDigits('-1000')).toBe('-1,000');
    expect(groupDigits('1e-8')).toBe('1e-8');
  });

  it('shortens hashes and tells ages and waits', () => {
    expect(shortHash(HASH)).toBe('0xababab…ababab');
    expect(shortHash('0x1234')).toBe('0x1234');
    expect(formatAge(100, 112_000)).toBe('12 s ago');
    expect(formatAge(100, 100_000 + 5 * 60_000)).toBe('5 min ago');
    expect(formatAge(0, 3 * 3600_000)).toBe('3 h ago');
    expect(formatAge(0, 2 * 86_400_000)).toBe('2 d ago');
    expect(formatAge(10, 6_000)).toBe('in 4 s');
    expect(formatDuration(4_200)).toBe('5 s');
    expect(formatDuration(200_000)).toBe('3 min 20 s');
    expect(formatDuration(84_815_000)).toBe('23 h 33 min');
  });
});

describe("an account's history", () => {
  it('reads a transfer as sent or received, with the other party as counterparty', () => {
    const transfer = { from: 'alice', to: 'bob', type: 'transfer' } as const;
    expect(sideOf(transfer, 'alice')).toEqual({ direction: 'sent', counterparty: 'bob', preposition: 'to' });
    expect(sideOf(transfer, 'bob')).toEqual({ direction: 'received', counterparty: 'alice', preposition: 'from' });
  });

  it('names a mint or a burn by its type, from either side', () => {
    // A mint credits `to` (its issuer is `from`); a burn debits `from` (its issuer is `to`).
    const mint = { from: 'issuer', to: 'alice', type: 'mint' } as const;
    expect(sideOf(mint, 'alice')).toEqual({ direction: 'mint', counterparty: 'issuer', preposition: 'from' });
    expect(sideOf(mint, 'issuer')).toEqual({ direction: 'mint', counterparty: 'alice', preposition: 'to' });
    const burn = { from: 'alice', to: 'issuer', type: 'burn' } as const;
    expect(sideOf(burn, 'alice')).toEqual({ direction: 'burn', counterparty: 'issuer', preposition: 'to' });
    expect(sideOf(burn, 'issuer')).toEqual({ direction: 'burn', counterparty: 'alice', preposition: 'from' });
    // An issuer minting to itself is listed once; the other side is itself.
    expect(sideOf({ from: 'issuer', to: 'issuer', type: 'mint' }, 'issuer')).toEqual({ direction: 'mint', counterparty: 'issuer', preposition: 'to' });
  });

  it('matches ids exactly, as the service does', () => {
    expect(sideOf({ from: 'Alice', to: 'alice', type: 'transfer' }, 'alice')).toEqual({ direction: 'received', counterparty: 'Alice', preposition: 'from' });
  });

  it('pages older with the cursor it was given, and counts places from the newest', () => {
    expect(HISTORY_PAGE_SIZE).toBe(20);
    expect(NEWEST_PAGE).toEqual({ cursor: null, number: 1 });
    const second = olderPage(NEWEST_PAGE, '4711');
    expect(second).toEqual({ cursor: '4711', number: 2 });
    expect(olderPage(second, 'opaque:cursor/=')).toEqual({ cursor: 'opaque:cursor/=', number: 3 });
    expect(pageRange(NEWEST_PAGE, 20)).toEqual({ first: 1, last: 20 });
    expect(pageRange(NEWEST_PAGE, 3)).toEqual({ first: 1, last: 3 });
    expect(pageRange(second, 20)).toEqual({ first: 21, last: 40 });
    expect(pageRange({ cursor: 'x', number: 3 }, 7)).toEqual({ first: 41, last: 47 });
  });
});
