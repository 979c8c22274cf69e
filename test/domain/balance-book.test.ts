import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UNITS_MAX } from '../../src/domain/shared/amount.js';
import { InvariantViolation } from '../../src/domain/shared/errors.js';
import { assertSupplyConserved, BalanceBook, supplyDelta, supplyOf, type Posting } from '../../src/domain/balance-book.js';

const mint = (to: string, amount_units: bigint, token = 'TAB', from = 'issuer'): Posting => ({ type: 'mint', from, to, amount_units, token });
const burn = (from: string, amount_units: bigint, token = 'TAB', to = 'issuer'): Posting => ({ type: 'burn', from, to, amount_units, token });
const transfer = (from: string, to: string, amount_units: bigint, token = 'TAB'): Posting => ({ type: 'transfer', from, to, amount_units, token });

function sortedChanges(book: BalanceBook) {
  return book.changed().sort((a, b) => (a.token + a.user_id < b.token + b.user_id ? -1 : 1));
}

describe('BalanceBook', () => {
  it('starts from the given balances; a missing pair is zero', () => {
    const book = new BalanceBook([{ user_id: 'alice', token: 'TAB', units: 5n }]);
    expect(book.get('alice', 'TAB')).toBe(5n);
    expect(book.get('alice', 'USDG')).toBe(0n);
    expect(book.get('bob', 'TAB')).toBe(0n);
    expect(book.changed()).toEqual([]);
  });

  it('a mint credits `to` and does not debit the issuer', () => {
    const book = new BalanceBook();
    expect(book.apply(mint('alice', 100n))).toEqual({ status: 'confirmed', error: null });
    expect(book.get('alice', 'TAB')).toBe(100n);
    expect(book.get('issuer', 'TAB')).toBe(0n);
    expect(sortedChanges(book)).toEqual([{ user_id: 'alice', token: 'TAB', units: 100n }]);
  });

  it('a burn debits `from` and does not credit the issuer', () => {
    const book = new BalanceBook([{ user_id: 'alice', token: 'TAB', units: 100n }]);
    expect(book.apply(burn('alice', 40n))).toEqual({ status: 'confirmed', error: null });
    expect(book.get('alice', 'TAB')).toBe(60n);
    expect(book.get('issuer', 'TAB')).toBe(0n);
    expect(sortedChanges(book)).toEqual([{ user_id: 'alice', token: 'TAB', units: 60n }]);
  });

  it('a transfer moves the amount in one token only', () => {
    const book = new BalanceBook([
      { user_id: 'alice', token: 'TAB', units: 100n },
      { user_id: 'alice', token: 'USDG', units: 7n },
    ]);
    expect(book.apply(transfer('alice', 'bob', 100n))).toEqual({ status: 'confirmed', error: null });
    expect(book.get('alice', 'TAB')).toBe(0n);
    expect(book.get('bob', 'TAB')).toBe(100n);
    expect(book.get('alice', 'USDG')).toBe(7n);
    expect(sortedChanges(book)).toEqual([
      { user_id: 'alice', token: 'TAB', units: 0n },
      { user_id: 'bob', token: 'TAB', units: 100n },
    ]);
  });

  it('fails a transfer or burn beyond the balance with insufficient_funds and changes nothing', () => {
    const book = new BalanceBook([{ user_id: 'alice', token: 'TAB', units: 10n }]);
    expect(book.apply(transfer('alice', 'bob', 11n))).toEqual({ status: 'failed', error: 'insufficient_funds' });
    expect(book.apply(burn('alice', 11n))).toEqual({ status: 'failed', error: 'insufficient_funds' });
    expect(book.apply(transfer('alice', 'bob', 1n, 'USDG'))).toEqual({ status: 'failed', error: 'insufficient_funds' });
    expect(book.get('alice', 'TAB')).toBe(10n);
    expect(book.get('bob', 'TAB')).toBe(0n);
    expect(book.changed()).toEqual([]);
    // Exactly the balance is fine.
    expect(book.apply(burn('alice', 10n)).status).toBe('confirmed');
    expect(book.get('alice', 'TAB')).toBe(0n);
  });

  it('fails a credit past UNITS_MAX with balance_overflow and changes nothing', () => {
    const book = new BalanceBook([
      { user_id: 'alice', token: 'TAB', units: UNITS_MAX },
      { user_id: 'bob', token: 'TAB', units: 1n },
    ]);
    expect(book.apply(mint('alice', 1n))).toEqual({ status: 'failed', error: 'balance_overflow' });
    expect(book.apply(transfer('bob', 'alice', 1n))).toEqual({ status: 'failed', error: 'balance_overflow' });
    expect(book.get('bob', 'TAB')).toBe(1n);
    expect(book.get('alice', 'TAB')).toBe(UNITS_MAX);
    expect(book.apply(mint('carol', UNITS_MAX)).status).toBe('confirmed');
    expect(book.get('carol', 'TAB')).toBe(UNITS_MAX);
  });

  it('refuses a non-positive amount as a broken invariant', () => {
    const book = new BalanceBook();
    expect(() => book.apply(mint('alice', 0n))).toThrow(InvariantViolation);
    expect(() => book.apply(mint('alice', -1n))).toThrow(InvariantViolation);
  });

  it('keys users and tokens apart, whatever characters the ids hold', () => {
    const book = new BalanceBook();
    book.apply(mint('a|b', 1n, 'TAB'));
    book.apply(mint('TAB', 2n, 'USDG'));
    expect(book.get('a|b', 'TAB')).toBe(1n);
    expect(book.get('TAB', 'USDG')).toBe(2n);
    expect(book.get('USDG', 'TAB')).toBe(0n);
    expect(sortedChanges(book)).toEqual([
      { user_id: 'a|b', token: 'TAB', units: 1n },
      { user_id: 'TAB', token: 'USDG', units: 2n },
    ]);
  });

  it('supplyDelta: mint +, burn −, transfer 0', () => {
    expect(supplyDelta(mint('a', 5n))).toBe(5n);
    expect(supplyDelta(burn('a', 5n))).toBe(-5n);
    expect(supplyDelta(transfer('a', 'b', 5n))).toBe(0n);
  });

  it('property: balances stay in [0, UNITS_MAX] and their sum moves only by confirmed mints and burns', () => {
    const users = ['u1', 'u2', 'u3'];
    const posting = fc.record({
      type: fc.constantFrom('mint' as const, 'burn' as const, 'transfer' as const),
      from: fc.constantFrom(...users),
      to: fc.constantFrom(...users),
      amount_units: fc.oneof(fc.bigInt(1n, 50n), fc.bigInt(UNITS_MAX - 50n, UNITS_MAX)),
      token: fc.constantFrom('TAB', 'USDG'),
    });
    fc.assert(
      fc.property(fc.array(posting, { maxLength: 60 }), (postings) => {
        const book = new BalanceBook();
        const supply = new Map<string, bigint>();
        for (const p of postings) {
          if (p.type === 'transfer' && p.from === p.to) continue;
          const outcome = book.apply(p);
          if (outcome.status === 'confirmed') supply.set(p.token, (supply.get(p.token) ?? 0n) + supplyDelta(p));
          for (const token of ['TAB', 'USDG']) {
            let total = 0n;
            for (const user of users) {
              const units = book.get(user, token);
              expect(units >= 0n && units <= UNITS_MAX).toBe(true);
              total += units;
            }
            expect(total).toBe(supply.get(token) ?? 0n);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it("checks a block's supply: only mints and burns change a token's total over the accounts it touches", () => {
    const book = new BalanceBook([{ user_id: 'alice', token: 'TAB', units: 10n }, { user_id: 'bob', token: 'USDG', units: 4n }]);
    const keys = [{ user_id: 'alice', token: 'TAB' }, { user_id: 'bob', token: 'TAB' }, { user_id: 'bob', token: 'USDG' }];
    const before = supplyOf(book, keys);
    expect(before).toEqual(new Map([['TAB', 10n], ['USDG', 4n]]));
    const change = new Map<string, bigint>();
    for (const posting of [transfer('alice', 'bob', 3n), mint('bob', 5n), burn('alice', 2n)]) {
      expect(book.apply(posting).status).toBe('confirmed');
      change.set(posting.token, (change.get(posting.token) ?? 0n) + supplyDelta(posting));
    }
    expect(() => assertSupplyConserved(before, supplyOf(book, keys), change)).not.toThrow();
    // A total that moved by anything else is an invariant violation (a bug that stops the sealer).
    expect(() => assertSupplyConserved(before, supplyOf(book, keys), new Map([['TAB', 2n]]))).toThrow(InvariantViolation);
  });
});
