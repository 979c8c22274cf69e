import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../src/domain/shared/errors.js';
import { TokenRegistry, USDG_SYMBOL } from '../../src/domain/shared/tokens.js';
import { METADATA_BYTES_MAX, parseTransactionRequest, type Metadata, type TransactionBody } from '../../src/domain/transaction.js';
import { isUserId, parseUserId, USER_ID_LENGTH_MAX } from '../../src/domain/user-id.js';

const tokens = new TokenRegistry('TAB');

function body(change: Partial<Record<keyof TransactionBody, unknown>> = {}): TransactionBody {
  return { from: 'alice', to: 'bob', amount: '1.5', token: 'TAB', type: 'transfer', ...change } as TransactionBody;
}

/** The InvalidRequestError `run` throws, as {code, field}; fails the test when it does not throw one. */
function rejection(run: () => unknown): { code: string; field: string | undefined } {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidRequestError) return { code: error.code, field: error.field };
    throw error;
  }
  throw new Error('expected an InvalidRequestError, but nothing was thrown');
}

describe('user ids', () => {
  it.each([
    ['an IdP subject', 'auth0|5f7c8ec7c33c6c004bbafe82'],
    ['a UUID', '3f2b8c1e-9d4a-4e7b-a1c2-7d9e0f1a2b3c'],
    ['an e-mail address', 'zoë.o\'brien+ledger@example.co.uk'],
    ['a single character', 'a'],
    ['128 ASCII characters', 'x'.repeat(128)],
    ['128 astral characters (256 UTF-16 units)', '\u{1F600}'.repeat(128)],
    ['an emoji without a joiner', 'family-\u{1F468}\u{1F469}'],
    ['an NFC accent (U+00E9)', 'Zo\u00e9'],
    ['NFC Hangul syllables', '\uD55C\uAD6D\uC5B4'],
    ['Google subject digits', '109876543210987654321'],
    ['punctuation', 'github:octo-cat/42@x!#$%&*'],
  ])('accepts %s', (_label, id) => {
    expect(isUserId(id)).toBe(true);
    expect(parseUserId(id, 'from')).toBe(id);
  });

  it.each([
    ['empty', ''],
    ['129 characters', 'x'.repeat(129)],
    ['129 astral characters', '\u{1F600}'.repeat(129)],
    ['a space', 'alice smith'],
    ['a leading space', ' alice'],
    ['a trailing newline', 'alice\n'],
    ['a tab', 'a\tb'],
    ['a no-break space', 'a\u00a0b'],
    ['an ideographic space', 'a\u3000b'],
    ['a line separator', 'a\u2028b'],
    ['a byte-order mark', '\ufeffalice'],
    ['NUL', 'a\u0000b'],
    ['DEL', 'a\u007fb'],
    ['a C1 control (NEL)', 'a\u0085b'],
    ['an escape character', 'a\u001bb'],
    ['a lone high surrogate', 'a\ud800b'],
    ['a lone low surrogate', 'a\udc00b'],
    ['a reversed surrogate pair', '\ude00\ud83d'],
    ['a trailing high surrogate', 'alice\ud83d'],
    // One spelling per account: NFD and other non-NFC forms are refused, not made a second account.
    ['an NFD accent (e + U+0301)', 'Zoe\u0301'],
    ['NFD Hangul jamo', '\u1112\u1161\u11AB'],
    ['a right-to-left override (U+202E)', 'alice\u202Eexe.txt'],
    ['a left-to-right mark', 'a\u200Eb'],
    ['a zero-width space', 'ali\u200Bce'],
    ['a zero-width joiner (invisible, even inside an emoji sequence)', 'family-\u{1F468}\u200D\u{1F469}'],
    ['a soft hyphen', 'ali\u00ADce'],
  ])('rejects %s with invalid_user_id', (_label, id) => {
    expect(isUserId(id)).toBe(false);
    expect(rejection(() => parseUserId(id, 'to'))).toEqual({ code: 'invalid_user_id', field: 'to' });
  });

  it.each([
    ['a number', 42],
    ['null', null],
    ['undefined', undefined],
    ['an object', { id: 'a' }],
  ])('rejects %s', (_label, value) => {
    expect(isUserId(value)).toBe(false);
    expect(rejection(() => parseUserId(value, 'from')).code).toBe('invalid_user_id');
  });

  it('counts characters (code points), not UTF-16 units, against the 128 limit', () => {
    expect(USER_ID_LENGTH_MAX).toBe(128);
    expect(isUserId(`${'a'.repeat(127)}\u{1F600}`)).toBe(true);
    expect(isUserId(`${'a'.repeat(128)}\u{1F600}`)).toBe(false);
  });
});

describe('tokens', () => {
  it.each(['TAB', 'tab', 'Tab', 'tAb'])('resolves %s to the native token TAB', (symbol) => {
    const token = tokens.resolve(symbol);
    expect(token).toEqual({ kind: 'native', symbol: 'TAB', decimals: 8 });
  });

  it.each(['USDG', 'usdg', 'Usdg', 'uSdG'])('resolves %s to USDG', (symbol) => {
    expect(tokens.resolve(symbol)).toEqual({ kind: 'usdg', symbol: USDG_SYMBOL, decimals: 6 });
  });

  it('keeps a configured native symbol as the canonical form', () => {
    const custom = new TokenRegistry('Gold');
    expect(custom.resolve('GOLD').symbol).toBe('Gold');
    expect(custom.resolve('gold').symbol).toBe('Gold');
    expect(() => custom.resolve('TAB')).toThrow(InvalidRequestError);
  });

  it.each([
    ['an unknown symbol', 'ETH'],
    ['an empty string', ''],
    ['a symbol with spaces', ' TAB'],
    ['a prefix', 'USD'],
    ['a number', 5],
    ['null', null],
  ])('rejects %s with unsupported_token', (_label, symbol) => {
    expect(rejection(() => tokens.resolve(symbol))).toEqual({ code: 'unsupported_token', field: 'token' });
  });
});

describe('parseTransactionRequest', () => {
  it('returns a validated request with base units and the canonical token', () => {
    const request = parseTransactionRequest(body({ token: 'usdg', amount: 2.5, metadata: { ref: 'x' } }), tokens);
    expect(request).toEqual({
      from: 'alice',
      to: 'bob',
      amount_units: 2_500_000n,
      token: { kind: 'usdg', symbol: 'USDG', decimals: 6 },
      type: 'transfer',
      metadata: { ref: 'x' },
    });
  });

  it('uses the token decimals for the amount', () => {
    expect(parseTransactionRequest(body({ token: 'tab', amount: '0.00000001' }), tokens).amount_units).toBe(1n);
    expect(rejection(() => parseTransactionRequest(body({ token: 'usdg', amount: '0.00000001' }), tokens)).code).toBe('amount_too_precise');
  });

  it('defaults metadata to {}', () => {
    expect(parseTransactionRequest(body(), tokens).metadata).toEqual({});
  });

  it('rejects from = to for a transfer with same_account', () => {
    expect(rejection(() => parseTransactionRequest(body({ from: 'alice', to: 'alice' }), tokens))).toEqual({ code: 'same_account', field: 'to' });
  });

  it.each(['mint', 'burn'])('allows from = to for a %s (the issuer names itself)', (type) => {
    expect(parseTransactionRequest(body({ type, from: 'issuer', to: 'issuer' }), tokens).type).toBe(type);
  });

  it.each(['Transfer', 'TRANSFER', 'trade', '', 'mint ', 'approve'])('rejects type %j with unsupported_transaction_type', (type) => {
    expect(rejection(() => parseTransactionRequest(body({ type }), tokens))).toEqual({ code: 'unsupported_transaction_type', field: 'type' });
  });

  it('rejects a non-string type', () => {
    expect(rejection(() => parseTransactionRequest(body({ type: 1 }), tokens)).code).toBe('unsupported_transaction_type');
  });

  it('rejects an unknown token with unsupported_token', () => {
    expect(rejection(() => parseTransactionRequest(body({ token: 'BTC' }), tokens))).toEqual({ code: 'unsupported_token', field: 'token' });
  });

  it('reports bad user ids with the field that holds them', () => {
    expect(rejection(() => parseTransactionRequest(body({ from: '' }), tokens))).toEqual({ code: 'invalid_user_id', field: 'from' });
    expect(rejection(() => parseTransactionRequest(body({ to: 'b o b' }), tokens))).toEqual({ code: 'invalid_user_id', field: 'to' });
  });

  it.each([
    ['amount_not_positive', 0],
    ['amount_not_positive', '-1'],
    ['invalid_amount', 'abc'],
    ['invalid_amount', null],
    ['amount_out_of_range', '1e400'],
    ['amount_not_exact', 123456789.12345678],
  ])('passes amount errors through (%s)', (code, amount) => {
    expect(rejection(() => parseTransactionRequest(body({ amount }), tokens))).toEqual({ code, field: 'amount' });
  });

  describe('metadata', () => {
    // {"k":"<n characters>"} serializes to n + 8 bytes.
    const sized = (bytes: number, filler = 'x'): Metadata => ({ k: filler.repeat(bytes - 8) });

    it('accepts exactly 4096 serialized bytes and rejects 4097 with metadata_too_large', () => {
      expect(METADATA_BYTES_MAX).toBe(4096);
      expect(parseTransactionRequest(body({ metadata: sized(4096) }), tokens).metadata).toEqual(sized(4096));
      expect(rejection(() => parseTransactionRequest(body({ metadata: sized(4097) }), tokens))).toEqual({
        code: 'metadata_too_large',
        field: 'metadata',
      });
    });

    it('counts UTF-8 bytes, not characters', () => {
      // 2044 × "é" (2 bytes each) + 8 = 4096 bytes; one ASCII character more is 4097.
      const atLimit: Metadata = { k: 'é'.repeat(2044) };
      expect(parseTransactionRequest(body({ metadata: atLimit }), tokens).metadata).toEqual(atLimit);
      const over: Metadata = { k: `${'é'.repeat(2044)}x` };
      expect(rejection(() => parseTransactionRequest(body({ metadata: over }), tokens)).code).toBe('metadata_too_large');
    });

    it('measures the canonical (whitespace-free) serialization', () => {
      const nested: Metadata = { b: [1, 2, 3], a: { c: 'x'.repeat(4096 - 26) } };
      // {"a":{"c":"…"},"b":[1,2,3]} is 26 bytes of structure around the filler.
      expect(parseTransactionRequest(body({ metadata: nested }), tokens).metadata).toBe(nested);
      const bigger: Metadata = { b: [1, 2, 3], a: { c: 'x'.repeat(4096 - 25) } };
      expect(rejection(() => parseTransactionRequest(body({ metadata: bigger }), tokens)).code).toBe('metadata_too_large');
    });

    // A 60 kB request body (under the 64 KiB limit) whose metadata nests 30000 arrays deep makes
    // parseMetadata run the recursive canonicalJson before any size check: it throws a RangeError
    // (call stack exceeded), which the HTTP layer turns into a 500 instead of a 400.
    it('regression: deeply nested metadata is a client error (metadata_too_large / invalid_metadata), not a RangeError', () => {
      const depth = 30_000;
      const metadata = JSON.parse(`{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`) as Metadata;
      let thrown: unknown = null;
      try {
        parseTransactionRequest(body({ metadata }), tokens);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(InvalidRequestError);
      expect(['metadata_too_large', 'invalid_metadata']).toContain((thrown as InvalidRequestError).code);
    });

    it('keeps integers up to ±(2^53 − 1), short big ones such as 1e21, and fractional numbers as sent', () => {
      const metadata = JSON.parse('{"max":9007199254740991,"min":-9007199254740991,"ratio":0.30000000000000004,"small":1e-7,"big":1e21,"huge":-1.5e300}');
      expect(parseTransactionRequest(body({ metadata }), tokens).metadata).toEqual(metadata);
    });

    it.each([
      ['an array', [1, 2]],
      ['null', null],
      ['a string', 'note'],
      ['a number', 5],
      // JSON.parse turns 1e400 into Infinity, which canonical JSON cannot encode (it threw a TypeError: a 500).
      ['regression: Infinity (1e400 in the JSON text)', JSON.parse('{"x":1e400}')],
      ['regression: -Infinity nested in an array', JSON.parse('{"x":{"y":[1,-1e400]}}')],
      // 9007199254740993 parses as 9007199254740992: storing it would change what was sent.
      ['an integer beyond 2^53 − 1 (an id sent as a number)', JSON.parse('{"order_id":9007199254740993}')],
      ['a negative integer beyond −(2^53 − 1), nested', JSON.parse('{"x":[{"y":-9007199254740992}]}')],
    ])('rejects %s with invalid_metadata', (_label, metadata) => {
      expect(rejection(() => parseTransactionRequest(body({ metadata }), tokens))).toEqual({ code: 'invalid_metadata', field: 'metadata' });
    });
  });
});
