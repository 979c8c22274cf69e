/**
 * Property-based fuzzing of the HTTP edge through `app.inject()`: arbitrary bodies, headers, paths,
 * query strings and Authorization headers. Whatever comes in, the answer is a success or a 4xx
 * application/problem+json with a code (and status) from the error catalogue, never a 5xx, and a
 * refused submission writes nothing. A failure prints fast-check's seed and path to replay it.
 */
import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, isErrorCode } from '../../src/http/error-catalogue.js';
import { startTestTabula, TEST_SECRET, type TestTabula } from '../support/in-process-tabula.js';
import { clientFor, expectProblem, type Call, type Client } from '../support/http-client.js';

const SUBMIT = '/api/transactions/submit';
const BATCH = '/api/transactions/batch';
/** High enough that the thousands of fuzz requests of one ledger never meet the rate limit. */
const FUZZ_ENV = { RATE_LIMIT_MAX: '10000000', AUTH_FAILURES_MAX: '1000000' };
const SUBMIT_RUNS = 200;
const BATCH_RUNS = 100;
const READ_RUNS = 200;
const AUTH_RUNS = 200;
const FIELD_NAMES = ['from', 'to', 'amount', 'token', 'type', 'metadata'] as const;

type FieldName = (typeof FIELD_NAMES)[number];
/** An object as JSON text: its keys and the JSON text of their values, in order (repeats allowed). */
type Entries = ReadonlyArray<readonly [string, string]>;
/** alice (no admin scope) or treasury with the admin scope. */
type CallerName = 'alice' | 'admin';

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/** A 4xx problem+json whose code is in the catalogue with this very status. */
function expectCatalogueProblem(call: Call): void {
  expect(call.status, call.body).toBeGreaterThanOrEqual(400);
  expect(call.status, call.body).toBeLessThan(500);
  const code: unknown = call.json?.code;
  expect(typeof code === 'string' && isErrorCode(code), `code of ${call.status} ${call.body}`).toBe(true);
  expect(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].status, call.body).toBe(call.status);
  expectProblem(call, call.status, code as string);
}

/** A problem inside a batch result: the same shape as a response body, for the item's status. */
function expectInlineProblem(status: number, error: unknown): void {
  expect(status).toBeGreaterThanOrEqual(400);
  expect(status).toBeLessThan(500);
  const body = error as { code?: unknown; status?: unknown; type?: unknown; title?: unknown; detail?: unknown };
  expect(typeof body.code === 'string' && isErrorCode(body.code), JSON.stringify(error)).toBe(true);
  const code = body.code as keyof typeof ERROR_CATALOGUE;
  expect(ERROR_CATALOGUE[code].status).toBe(status);
  expect(body).toMatchObject({ status, code, type: `urn:tabula:problem:${code}` });
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
}

// ---------------------------------------------------------------------------------------------
// JSON text: built piece by piece, so that it can hold what JSON.stringify never writes (numbers
// beyond a double such as 1e400, `-0`, duplicate keys, `__proto__` and `constructor` keys).
// ---------------------------------------------------------------------------------------------

const quote = (text: string): string => JSON.stringify(text);
const objectText = (entries: Entries): string => `{${entries.map(([key, value]) => `${quote(key)}:${value}`).join(',')}}`;
const arrayText = (items: readonly string[]): string => `[${items.join(',')}]`;

const jsonValueText = fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value));

const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)),
  fc.constantFrom(
    '0', '-0', '1', '-1', '0.5', '1e400', '-1e400', '1E+308', '1e-400', '5e-324', '1e21', '1e-7', '1e-9', '0.1e1', '1.0',
    '9007199254740993', '100000000000000000000000', '123456789012.123456789', '92233720368.54775807', '92233720368.54775808',
    '1234567890.1234567', '0.00000001', '0.000001', '0.0000001',
  ),
  fc.stringMatching(/^-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,5})?$/),
);

/** Strings of any code point, lone surrogates included (JSON.stringify writes them as \ud800 escapes). */
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', 'a\udfff', '\u200b', '\u00a0', '🦄', 'ǅ', 'ß', 'İ', '__proto__', 'constructor', 'toString', 'hasOwnProperty'),
);

const numericString = fc.oneof(
  fc.stringMatching(/^[-+]?[0-9]{0,80}(\.[0-9]{0,30})?([eE][+-]?[0-9]{0,6})?$/),
  fc.constantFrom(' 1', '1 ', '1_000', '0x10', '0b1', '0o7', 'Infinity', '-Infinity', 'NaN', '١٢', '1.', '.5', '1e', 'e5', '1..2', '1,5', '+1', '1e99999', '0e99999', '0.0e-9999'),
  fc.integer({ min: 1, max: 200 }).map((count) => '9'.repeat(count)),
  fc.integer({ min: 1, max: 200 }).map((count) => `0.${'0'.repeat(count)}1`),
);

const userIdText = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('alice', 'bob', 'treasury', 'carol') },
  { weight: 3, arbitrary: anyString },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(128), 'x'.repeat(129), '🦄'.repeat(128), '🦄'.repeat(129), ' alice', 'al\tice', 'bob\u0007', 'bob\u2028') },
).map(quote);

const amountText = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('1', '2.5', '"0.00000001"', '"100.5"', '0.000001', '"92233720368.54775807"') },
  { weight: 4, arbitrary: numberText },
  { weight: 4, arbitrary: numericString.map(quote) },
  { weight: 1, arbitrary: anyString.map(quote) },
  { weight: 1, arbitrary: jsonValueText },
);

const tokenText = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('TAB', 'tab', 'USDG', 'usdg', 'Tab') },
  { weight: 2, arbitrary: fc.constantFrom('BTC', '', 'TAB ', 'ＴＡＢ', 'ＵＳＤＧ', 'uſdg', 'ß') },
  { weight: 1, arbitrary: anyString },
).map(quote);

const typeText = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('transfer', 'mint', 'burn') },
  { weight: 2, arbitrary: fc.constantFrom('TRANSFER', 'Mint', '', 'swap', '__proto__', 'constructor', 'toString') },
  { weight: 1, arbitrary: anyString },
).map(quote);

/** Metadata: free-form objects, deep and wide ones, lone surrogates, numbers beyond a double, forbidden keys. */
const metadataText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(anyString, jsonValueText, { maxKeys: 5 }).map((record) => objectText(Object.entries(record))) },
  { weight: 3, arbitrary: fc.array(fc.tuple(anyString, fc.oneof(jsonValueText, numberText, anyString.map(quote))), { maxLength: 5 }).map(objectText) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((depth) => `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`) },
  { weight: 1, arbitrary: fc.integer({ min: 4000, max: 5000 }).map((length) => objectText([['note', quote('x'.repeat(length))]])) },
  { weight: 1, arbitrary: fc.constantFrom('{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '{"a":{"__proto__":null}}', '{"a":1,"a":2}', '{"x":1e400}', '{"x":-0}', '{"x":[1e400]}', '{"\\ud800":1}') },
  { weight: 1, arbitrary: jsonValueText },
);

const FIELD_VALUES: Record<FieldName, fc.Arbitrary<string>> = {
  from: userIdText, to: userIdText, amount: amountText, token: tokenText, type: typeText, metadata: metadataText,
};

const validUserId = fc.constantFrom('alice', 'bob', 'carol', 'treasury', 'zoë', '🦄', 'auth0|5f7c8ec7c33c6c004bbafe82', 'x'.repeat(128));
const validAmount = fc.constantFrom('1', '2.5', '0.000001', '1e3', '"0.000001"', '"100.5"', '"1E-6"', '"000123.4500"');
const validMetadata = fc.oneof(
  fc.constantFrom('{}', '{"memo":"rent"}', '{"a":{"b":[1,"x",null,true]}}', '{"\u00e9t\u00e9":"🦄","":0}'),
  fc.dictionary(fc.string({ maxLength: 10 }), jsonValueText, { maxKeys: 4 }).map((record) => objectText(Object.entries(record))),
);

/** A submission the caller may make: alice transfers from alice, the admin also mints and burns for anyone. */
function validSubmission(caller: CallerName): fc.Arbitrary<Entries> {
  const accounts = caller === 'alice'
    ? validUserId.filter((to) => to !== 'alice').map((to) => ['alice', to] as const)
    : fc.uniqueArray(validUserId, { minLength: 2, maxLength: 2 }).map(([from, to]) => [from as string, to as string] as const);
  const type = caller === 'alice' ? fc.constant('transfer') : fc.constantFrom('transfer', 'mint', 'burn');
  return fc.record({
    accounts,
    amount: validAmount,
    token: fc.constantFrom('TAB', 'tab', 'USDG', 'usdg'),
    type,
    metadata: fc.option(validMetadata, { nil: undefined }),
  }).map(({ accounts: [from, to], amount, token, type: kind, metadata }) => [
    ['from', quote(from)], ['to', quote(to)], ['amount', amount], ['token', quote(token)], ['type', quote(kind)],
    ...(metadata === undefined ? [] : [['metadata', metadata] as const]),
  ] as const);
}

/** One change to a submission: a field set to an adversarial value (or to any JSON), removed, repeated, or a foreign one added. */
type Mutation = { kind: 'set' | 'add'; name: string; value: string } | { kind: 'remove'; name: string };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...FIELD_NAMES).chain((name) => FIELD_VALUES[name].map((value): Mutation => ({ kind: 'set', name, value }))) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...FIELD_NAMES), jsonValueText).map(([name, value]): Mutation => ({ kind: 'set', name, value })) },
  { weight: 1, arbitrary: fc.constantFrom(...FIELD_NAMES).map((name): Mutation => ({ kind: 'remove', name })) },
  { weight: 1, arbitrary: fc.constantFrom(...FIELD_NAMES).chain((name) => FIELD_VALUES[name].map((value): Mutation => ({ kind: 'add', name, value }))) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('fee', '__proto__', 'constructor', 'idempotency_key', 'FROM', '', 'amount '), jsonValueText)
      .map(([name, value]): Mutation => ({ kind: 'add', name, value })),
  },
);

function mutate(entries: Entries, change: Mutation): Entries {
  if (change.kind === 'add') return [...entries, [change.name, change.value]];
  const kept = entries.filter(([name]) => name !== change.name);
  return change.kind === 'remove' ? kept : [...kept, [change.name, change.value]];
}

/** A submission near the valid ones: a valid seed with none to three mutations, fields in any order. */
const submissionText = (caller: CallerName): fc.Arbitrary<string> => fc.tuple(
  validSubmission(caller),
  fc.oneof({ weight: 1, arbitrary: fc.constant<Mutation[]>([]) }, { weight: 3, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) }),
).chain(([seed, changes]) => {
  const entries = changes.reduce(mutate, seed);
  return fc.shuffledSubarray([...entries], { minLength: entries.length });
}).map(objectText);

const bodyText = (caller: CallerName): fc.Arbitrary<string> => fc.oneof(
  { weight: 12, arbitrary: submissionText(caller) },
  { weight: 1, arbitrary: jsonValueText },
  { weight: 1, arbitrary: fc.tuple(submissionText(caller), fc.nat()).map(([text, cut]) => text.slice(0, cut % Math.max(1, text.length))) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'null', '[]', '{}', '"x"', '{"from":"alice",', '\ufeff{}', `{"metadata":{"pad":"${'x'.repeat(70 * 1024)}"}}`) },
);

// ---------------------------------------------------------------------------------------------
// Headers: what HTTP/1.1 can carry in a field value (tab, visible ASCII, obs-text as latin1).
// ---------------------------------------------------------------------------------------------

const headerCharacter = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
  { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
  { weight: 1, arbitrary: fc.constant(0x09) },
).map((code) => String.fromCharCode(code));
const headerValue = (maxLength: number) => fc.string({ unit: headerCharacter, maxLength });
const headerWord = (maxLength: number) => fc.string({ unit: headerCharacter.filter((character) => !/\s/.test(character)), maxLength });

const idempotencyKey = fc.option(fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('key-1', 'key-2', 'key-3') },
  { weight: 3, arbitrary: headerValue(40) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'k'.repeat(255), 'k'.repeat(256), 'with space', 'caf\u00e9', 'tab\tkey') },
), { nil: undefined, freq: 2 });

const contentType = fc.option(fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'Application/JSON', 'application/json;charset=UTF-8', 'application/json; charset=latin1', 'application/json; charset=utf-16le',
      'application/json ; x=y', 'application/json;', 'application/json; charset="utf-8"', 'application/jsonx', 'application/problem+json',
      'text/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=abc', '', ';', '*/*', 'application/*',
    ),
  },
  { weight: 1, arbitrary: headerValue(40) },
), { nil: undefined, freq: 24 });

// ---------------------------------------------------------------------------------------------
// Batches
// ---------------------------------------------------------------------------------------------

const batchItemText = (caller: CallerName): fc.Arbitrary<string> => fc.oneof(
  { weight: 8, arbitrary: fc.tuple(submissionText(caller), idempotencyKey).map(([text, key]) => (key === undefined ? text : `${text.slice(0, -1)},"idempotency_key":${quote(key)}}`)) },
  { weight: 1, arbitrary: fc.tuple(submissionText(caller), jsonValueText).map(([text, key]) => `${text.slice(0, -1)},"idempotency_key":${key}}`) },
  { weight: 2, arbitrary: jsonValueText },
);

/** A batch body and, when it is a well-formed envelope, how many items it holds. Its items are sometimes all sent twice. */
const batchBody = (caller: CallerName): fc.Arbitrary<{ text: string; items: number | null }> => fc.oneof(
  {
    weight: 10,
    arbitrary: fc.tuple(fc.array(batchItemText(caller), { minLength: 1, maxLength: 12 }), fc.boolean())
      .map(([items, twice]) => (twice ? [...items, ...items] : items))
      .map((items) => ({ text: objectText([['transactions', arrayText(items)]]), items: items.length })),
  },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.constantFrom('{"transactions":[]}', '{"transactions":{}}', '{"transactions":null}', '{}', '[]', 'null', '{"transactions":"x"}', '{"__proto__":[]}'),
      fc.array(batchItemText(caller), { minLength: 1, maxLength: 3 }).map(arrayText),
      fc.tuple(fc.array(batchItemText(caller), { minLength: 1, maxLength: 3 }), jsonValueText).map(([items, extra]) => objectText([['transactions', arrayText(items)], ['extra', extra]])),
      jsonValueText,
      fc.tuple(bodyText(caller), fc.nat()).map(([text, cut]) => `{"transactions":[${text.slice(0, cut % Math.max(1, text.length))}`),
    ).map((text) => ({ text, items: null })),
  },
);

// ---------------------------------------------------------------------------------------------
// Paths and query strings
// ---------------------------------------------------------------------------------------------

const percentEncode = (text: string): string =>
  [...new TextEncoder().encode(text)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
/** A path part as a browser would send it: percent-encoded UTF-8, lone surrogates replaced. */
const encodeAsUrlPart = (text: string): string => encodeURIComponent(text.replace(/\p{Cs}/gu, '\ufffd'));
const URL_CHARACTERS = [..."abcdefxyzABCDEFXYZ0123456789-._~!$&'()*+,;=:@%"];

const pathSegment = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: fc.constantFrom(...URL_CHARACTERS), maxLength: 30 }) },
  { weight: 2, arbitrary: anyString.map(encodeAsUrlPart) },
  { weight: 1, arbitrary: anyString.map(percentEncode) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }) },
  { weight: 2, arbitrary: fc.constantFrom('%C3%28', '%ED%A0%80', '%FF', '%E2%82', '%00', '%', '%%', '%zz', '%2F', '%3F', '%23', '%0A', '%20', '..', '.', '') },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom('0x', '0X', ''), fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFg'), minLength: 60, maxLength: 68 })).map(([prefix, digits]) => prefix + digits),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^0x[0-9a-f]{64}$/) },
  { weight: 2, arbitrary: fc.constantFrom('0', '1', '-1', '1.5', '999999999999999', '9999999999999999', '1e3', '%201', '٣', '00', '+1', '0x1', '9'.repeat(400)) },
  { weight: 1, arbitrary: fc.constantFrom(1023, 1024, 1025, 5000).map((length) => 'a'.repeat(length)) },
  { weight: 1, arbitrary: fc.constantFrom(300, 400).map((count) => '%41'.repeat(count)) },
);

const queryValue = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('1', '20', '100', '101', '0', '-1', '1.5', '1e2', '', ' 1', '999999999999999', '9999999999999999', '%31', '%', '%zz', '%FF', '%ED%A0%80') },
  { weight: 2, arbitrary: pathSegment },
  { weight: 1, arbitrary: fc.integer().map(String) },
);

/** Query strings of a paged read whose parameters are `limit` and `second` (`offset` or `cursor`). */
const pagingQuery = (second: string): fc.Arbitrary<string> => fc.oneof(
  fc.tuple(fc.option(queryValue), fc.option(queryValue)).map(([limit, value]) =>
    [limit === null ? null : `limit=${limit}`, value === null ? null : `${second}=${value}`].filter((part) => part !== null).join('&')),
  fc.array(fc.tuple(fc.constantFrom('limit', second, 'x', '', '__proto__', 'constructor', 'limit[]', `${second}[a]`), queryValue), { maxLength: 4 })
    .map((pairs) => pairs.map(([key, value]) => `${key}=${value}`).join('&')),
  fc.string({ unit: fc.constantFrom(...URL_CHARACTERS, '=', '?', '[', ']'), maxLength: 40 }),
);
const queryString = pagingQuery('offset');
const historyQuery = pagingQuery('cursor');

/** Read URLs; `known` are path parts that name something stored (transaction hashes in any case, block numbers); histories are of accounts with transactions and of any id. */
const readUrl = (known: readonly string[]): fc.Arbitrary<string> => fc.oneof(
  fc.oneof(pathSegment, fc.constantFrom(...known)).map((segment) => `/api/transactions/${segment}`),
  fc.oneof(pathSegment, fc.constantFrom(...known)).map((segment) => `/api/transactions/${segment}/proof`),
  pathSegment.map((segment) => `/api/balance/${segment}`),
  fc.tuple(fc.oneof(pathSegment, fc.constantFrom('alice', 'treasury', 'bob')), historyQuery)
    .map(([segment, query]) => `/api/accounts/${segment}/transactions${query === '' ? '' : `?${query}`}`),
  fc.oneof(pathSegment, fc.constantFrom(...known)).map((segment) => `/api/blocks/${segment}`),
  queryString.map((query) => `/api/blocks?${query}`),
  queryString.map((query) => `/api/stats?${query}`),
  fc.tuple(pathSegment, pathSegment).map(([first, second]) => `/api/${first}/${second}`),
).chain((url) => fc.oneof({ weight: 8, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '//', '/x') })
  .map((suffix) => (url.includes('?') ? url : url + suffix)));

// ---------------------------------------------------------------------------------------------
// Authorization headers
// ---------------------------------------------------------------------------------------------

const base64url = (text: string | Uint8Array): string => Buffer.from(text).toString('base64url');
const hs256 = (signing_input: string, secret: string): string => createHmac('sha256', secret).update(signing_input).digest('base64url');
const now_s = (): number => Math.floor(Date.now() / 1000);

const jwtHeader = fc.oneof(
  fc.constantFrom({ alg: 'none' }, { alg: 'None', typ: 'JWT' }, { alg: 'HS256' }, { alg: 'HS256', typ: 'JWT' }, { alg: 'HS384' }, { alg: 'RS256', kid: 'k' },
    { alg: 'ES256' }, { alg: 'EdDSA' }, { alg: 'HS256', crit: ['b64'], b64: false }, { alg: 'HS256', crit: ['x'] }, { alg: 'dir', enc: 'A256GCM' }, {}),
  fc.record({ alg: fc.jsonValue({ maxDepth: 2 }) }),
  fc.jsonValue({ maxDepth: 2 }),
).map((header) => JSON.stringify(header) ?? 'null');

const jwtClaims = fc.oneof(
  fc.record({ sub: fc.oneof(fc.string(), fc.jsonValue({ maxDepth: 1 })), exp: fc.oneof(fc.integer(), fc.jsonValue({ maxDepth: 1 })) }, { requiredKeys: [] }),
  fc.constant({ sub: 'alice', exp: 4_000_000_000, scope: 'ledger:admin' }),
  fc.jsonValue({ maxDepth: 2 }),
).map((claims) => JSON.stringify(claims) ?? 'null');

/** Claims that can never pass (no subject, an empty or non-string one, no or a past expiry, a far `nbf`). */
const defectiveClaims = fc.tuple(
  fc.dictionary(fc.constantFrom('iss', 'aud', 'iat', 'jti', 'scope', 'scp', 'extra'), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
  fc.constantFrom<Record<string, unknown>>(
    { exp: 4_000_000_000 }, { sub: '', exp: 4_000_000_000 }, { sub: 7, exp: 4_000_000_000 }, { sub: ['alice'], exp: 4_000_000_000 },
    { sub: 'alice' }, { sub: 'alice', exp: '4000000000' }, { sub: 'alice', exp: 1 }, { sub: 'alice', exp: null },
    { sub: 'alice', exp: 4_000_000_000, nbf: 4_000_000_000 }, { sub: 'alice', exp: 4_000_000_000, nbf: 'soon' },
  ),
).map(([extra, defect]) => JSON.stringify({ ...extra, ...defect }));

const tokenLike = fc.oneof(
  // Three base64url parts: any header and claims, a random signature.
  fc.tuple(jwtHeader, jwtClaims, fc.uint8Array({ maxLength: 64 })).map(([header, claims, signature]) => `${base64url(header)}.${base64url(claims)}.${base64url(signature)}`),
  // Signed with the real secret, but with claims that must be refused.
  fc.tuple(fc.constantFrom('{"alg":"HS256"}', '{"alg":"HS256","typ":"JWT"}'), defectiveClaims).map(([header, claims]) => {
    const input = `${base64url(header)}.${base64url(claims)}`;
    return `${input}.${hs256(input, TEST_SECRET)}`;
  }),
  // Signed with the real secret, but not a JSON object of claims.
  fc.tuple(fc.constantFrom('{"alg":"HS256"}'), fc.oneof(jsonValueText.filter((text) => !text.startsWith('{')), fc.string({ maxLength: 20 }))).map(([header, claims]) => {
    const input = `${base64url(header)}.${base64url(claims)}`;
    return `${input}.${hs256(input, TEST_SECRET)}`;
  }),
  // Unsigned (alg: none) with claims that would otherwise be accepted.
  fc.constantFrom('alice', 'treasury').map((sub) => new UnsecuredJWT({ sub, scope: 'ledger:admin' }).setExpirationTime(now_s() + 600).encode()),
  // Parts that are not base64url, or too few or too many of them.
  fc.array(fc.string({ unit: fc.constantFrom(...'abcXYZ019-_=+/.'), maxLength: 20 }), { minLength: 1, maxLength: 6 }).map((parts) => parts.join('.')),
  headerWord(60),
);

const authorization = fc.oneof(
  { weight: 2, arbitrary: headerValue(80) },
  { weight: 2, arbitrary: headerValue(80).map((text) => `Bearer ${text}`) },
  { weight: 4, arbitrary: tokenLike.map((token) => `Bearer ${token}`) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('bearer', 'BEARER', 'Bearer  ', 'Bearer\t', 'Token', 'Basic', 'JWT', ''), tokenLike).map(([scheme, token]) => `${scheme} ${token}`) },
  { weight: 1, arbitrary: fc.constantFrom('', 'Bearer', 'Bearer ', 'Basic YWxpY2U6cHc=', 'Bearer a b', 'Bearer x'.padEnd(17 * 1024, 'x')) },
);

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

type Callers = Record<CallerName, Client>;

/** Checks a submission's answer (202 with a receipt, or a catalogue 4xx) and returns how many transactions it stored. */
async function storedBySubmission(ledger: TestTabula, call: Call): Promise<number> {
  if (call.status !== 202) {
    expectCatalogueProblem(call);
    return 0;
  }
  expect(call.json).toEqual({ tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/), status: 'pending', timestamp: expect.any(Number) });
  if (call.headers['idempotent-replayed'] === 'true') return 0;
  expect((await ledger.store.getTransaction(call.json.tx_hash))?.status).toBe('pending');
  return 1;
}

/** Checks a batch's answer (200 with one result per item, or a catalogue 4xx) and returns how many transactions it stored. */
async function storedByBatch(ledger: TestTabula, call: Call, items: number | null): Promise<number> {
  if (call.status !== 200) {
    expectCatalogueProblem(call);
    return 0;
  }
  const { accepted, rejected, results } = call.json as { accepted: number; rejected: number; results: Array<Record<string, any>> };
  if (items !== null) expect(results).toHaveLength(items);
  expect(results.map((result) => result.index)).toEqual(results.map((_, index) => index));
  let stored = 0;
  for (const result of results) {
    if (result.status !== 202) {
      expectInlineProblem(result.status, result.error);
      continue;
    }
    expect(result.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(result.error).toBeUndefined();
    if (result.replayed === true) continue;
    stored += 1;
    expect((await ledger.store.getTransaction(result.tx_hash))?.status).toBe('pending');
  }
  expect(accepted).toBe(results.filter((result) => result.status === 202).length);
  expect(rejected).toBe(results.length - accepted);
  return stored;
}

async function startFuzzLedger(): Promise<{ ledger: TestTabula; callers: Callers }> {
  const ledger = await startTestTabula(FUZZ_ENV);
  const alice = clientFor(ledger, await ledger.token('alice'));
  const admin = clientFor(ledger, await ledger.token('treasury', { admin: true }));
  return { ledger, callers: { alice, admin } };
}

const callerName = fc.constantFrom<CallerName>('alice', 'admin');

describe('HTTP edge fuzz', () => {
  describe('POST /api/transactions/submit', () => {
    let ledger: TestTabula;
    let callers: Callers;
    beforeAll(async () => { ({ ledger, callers } = await startFuzzLedger()); });
    afterAll(async () => { await ledger.close(); });

    it('answers 202 or a catalogue 4xx, and stores exactly the accepted, non-replayed submissions', async () => {
      const submission = callerName.chain((caller) => bodyText(caller).map((body) => ({ caller, body })));
      // Sometimes the same request is sent twice, as a client retrying would: a repeat with an Idempotency-Key is a replay.
      await fc.assert(fc.asyncProperty(submission, contentType, idempotencyKey, fc.boolean(), async ({ caller, body }, content_type, key, repeat) => {
        const headers: Record<string, string> = {};
        if (content_type !== undefined) headers['content-type'] = content_type;
        if (key !== undefined) headers['idempotency-key'] = key;
        const before = await ledger.store.pendingCount();
        const calls = [await callers[caller].post(SUBMIT, body, undefined, headers)];
        if (repeat) calls.push(await callers[caller].post(SUBMIT, body, undefined, headers));
        let stored = 0;
        for (const call of calls) stored += await storedBySubmission(ledger, call);
        const [first, second] = calls as [Call, Call | undefined];
        if (second !== undefined && key !== undefined && first.status === 202) {
          expect(second.status, second.body).toBe(202);
          expect(second.headers['idempotent-replayed']).toBe('true');
          expect(second.json).toEqual(first.json);
        }
        expect(await ledger.store.pendingCount()).toBe(before + stored);
      }), { numRuns: SUBMIT_RUNS });
    });
  });

  describe('POST /api/transactions/batch', () => {
    let ledger: TestTabula;
    let callers: Callers;
    beforeAll(async () => { ({ ledger, callers } = await startFuzzLedger()); });
    afterAll(async () => { await ledger.close(); });

    it('answers 200 with a 202 or catalogue 4xx per item, or a catalogue 4xx; stores exactly the accepted, non-replayed items', async () => {
      const batch = callerName.chain((caller) => batchBody(caller).map((body) => ({ caller, body })));
      // Sometimes the same batch is sent twice, as a client retrying would.
      await fc.assert(fc.asyncProperty(batch, contentType, fc.boolean(), async ({ caller, body }, content_type, repeat) => {
        const headers: Record<string, string> = content_type === undefined ? {} : { 'content-type': content_type };
        const before = await ledger.store.pendingCount();
        const calls = [await callers[caller].post(BATCH, body.text, undefined, headers)];
        if (repeat) calls.push(await callers[caller].post(BATCH, body.text, undefined, headers));
        let stored = 0;
        for (const call of calls) stored += await storedByBatch(ledger, call, body.items);
        expect(await ledger.store.pendingCount()).toBe(before + stored);
      }), { numRuns: BATCH_RUNS });
    });
  });

  describe('GET routes', () => {
    let ledger: TestTabula;
    let callers: Callers;
    /** Path parts that name something stored: a sealed and a pending transaction (in both cases), blocks 0 and 1. */
    let known: string[];
    beforeAll(async () => {
      ({ ledger, callers } = await startFuzzLedger());
      const sealed = (await callers.admin.post(SUBMIT, { from: 'treasury', to: 'alice', amount: 10, token: 'TAB', type: 'mint' })).json.tx_hash as string;
      await ledger.producer.drain();
      const pending = (await callers.alice.post(SUBMIT, { from: 'alice', to: 'bob', amount: 1, token: 'TAB', type: 'transfer' })).json.tx_hash as string;
      known = [sealed, pending, `0x${sealed.slice(2).toUpperCase()}`, pending.toUpperCase(), '0', '1'];
    });
    afterAll(async () => { await ledger.close(); });

    it('answers 200 or a catalogue 4xx to any path and query string', async () => {
      await fc.assert(fc.asyncProperty(callerName, readUrl(known), async (caller, url) => {
        const call = await callers[caller].get(url);
        if (call.status === 200) expect(call.headers['content-type']).toMatch(/^application\/json/);
        else expectCatalogueProblem(call);
      }), { numRuns: READ_RUNS });
    });
  });

  describe('Authorization', () => {
    let ledger: TestTabula;
    beforeAll(async () => { ({ ledger } = await startFuzzLedger()); });
    afterAll(async () => { await ledger.close(); });

    it('answers any bad Authorization header with a catalogue 401 and WWW-Authenticate, writing nothing', async () => {
      const anonymous = clientFor(ledger, '');
      const requests = fc.constantFrom(
        (headers: Record<string, string>) => anonymous.get('/api/stats', null, headers),
        (headers: Record<string, string>) => anonymous.get('/api/balance/alice', null, headers),
        (headers: Record<string, string>) => anonymous.post(SUBMIT, { from: 'treasury', to: 'alice', amount: 1, token: 'TAB', type: 'mint' }, null, headers),
      );
      await fc.assert(fc.asyncProperty(requests, authorization, async (request, value) => {
        const before = await ledger.store.pendingCount();
        const call = await request({ authorization: value });
        expect(call.status, `Authorization: ${value}`).toBe(401);
        expectCatalogueProblem(call);
        expect(call.headers['www-authenticate']).toMatch(/^Bearer realm="ledger"/);
        expect(await ledger.store.pendingCount()).toBe(before);
      }), { numRuns: AUTH_RUNS });
    });

    it('refuses tokens signed with another key, whatever they claim', async () => {
      const anonymous = clientFor(ledger, '');
      const other_secret = new TextEncoder().encode(randomBytes(32).toString('hex'));
      await fc.assert(fc.asyncProperty(fc.string({ minLength: 1, maxLength: 20 }), fc.boolean(), async (sub, admin) => {
        const token = await new SignJWT({ scope: admin ? ledger.config.admin_scope : 'openid' })
          .setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime(now_s() + 600).sign(other_secret);
        const call = await anonymous.get('/api/stats', token);
        expect(call.status).toBe(401);
        expectCatalogueProblem(call);
        expect(call.headers['www-authenticate']).toMatch(/^Bearer realm="ledger", error="invalid_token"/);
      }), { numRuns: 30 });
    });
  });
});
