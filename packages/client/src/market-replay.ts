/**
 * The pool replayed from the chain, by a verifier: pure, bigint base units, no floats. Feed it every
 * sealed transaction of blocks 0, 1, 2… in block order (`transaction`), and each block once its
 * transactions are in (`endBlock`); it throws a `MarketMismatchError` at the first record or block
 * the pool's rules cannot have produced.
 *
 * - Reserves start empty. Confirmed mints and transfers to `@pool` add to the reserve of their token;
 *   confirmed transfers and burns from `@pool` take from it (below zero is a mismatch).
 * - A confirmed swap must have been possible (both reserves non-empty), must state `token_out` = the
 *   other token and `amount_out` = floor(reserve_out × amount_in × (10000 − fee_bps) ÷ (reserve_in ×
 *   10000 + amount_in × (10000 − fee_bps))), positive and at least its `min_receive`; it moves both
 *   reserves.
 * - A failed swap moves nothing and must have a plausible reason, checked in the sealer's order:
 *   `pool_empty` only when a reserve is empty; `amount_out_zero` only when the formula gives 0;
 *   `slippage_exceeded` only when it gives less than `min_receive`. `insufficient_funds` and
 *   `balance_overflow` depend on balances the pool replay does not keep: they are only checked to come
 *   from a non-empty pool (and, for `balance_overflow`, from a swap that passed the amount checks).
 * - After a block that carries a `native_price`, that price must be floor(usdg_reserve_units × 10^14 ÷
 *   native_reserve_units) in 12-decimal units. While a reserve is empty the block carries the
 *   configured NATIVE_PRICE_USD, which is configuration, not chain: such blocks are skipped.
 *
 * Which token is which: `USDG` (6 decimals) is the dollar side, any other symbol the native token
 * (8 decimals).
 */
import { formatUnits } from '../../../src/domain/shared/amount.js';
import { MarketMismatchError } from './errors.js';

export const POOL_ACCOUNT = '@pool';
export const PRICE_DECIMALS = 12;
const USDG = 'USDG';
const USDG_DECIMALS = 6;
const NATIVE_DECIMALS = 8;
const FEE_DENOMINATOR = 10_000n;
const PRICE_SCALE = 10n ** BigInt(PRICE_DECIMALS + NATIVE_DECIMALS - USDG_DECIMALS);

/** The pool's two reserves, in base units. */
export type PoolReserves = { native_units: bigint; usdg_units: bigint };

/** What the replay reads of a transaction record (the SDK's `Transaction` has all of it). */
export type ReplayTransaction = {
  tx_hash: string;
  from: string;
  to: string;
  type: string;
  token: string;
  /** The exact decimal text of the amount. */
  amount_text: string;
  status: string;
  error: string | null;
  min_receive?: number | null;
  min_receive_text?: string;
  amount_out?: number | null;
  amount_out_text?: string;
  token_out?: string | null;
};

/** What the replay reads of a block header. */
export type ReplayBlock = { number: number; native_price?: string | null };

/**
 * The constant-product formula, base units: what paying `amount_in` into the pool gives out.
 * Throws a RangeError on an empty reserve or a non-positive amount.
 */
export function poolAmountOut(reserve_in: bigint, reserve_out: bigint, amount_in: bigint, fee_bps: number): bigint {
  if (reserve_in <= 0n || reserve_out <= 0n) throw new RangeError('a swap needs two non-empty reserves');
  if (amount_in <= 0n) throw new RangeError('a swap pays in a positive amount');
  const kept = amount_in * (FEE_DENOMINATOR - BigInt(fee_bps));
  return (reserve_out * kept) / (reserve_in * FEE_DENOMINATOR + kept);
}

/** USD per native token in 12-decimal units, rounded down; null while a reserve is empty. */
export function poolPriceUnits(reserves: PoolReserves): bigint | null {
  if (reserves.native_units <= 0n || reserves.usdg_units <= 0n) return null;
  return (reserves.usdg_units * PRICE_SCALE) / reserves.native_units;
}

/**
 * A non-negative plain decimal's text with at most `decimals` decimals → base units, exactly; throws a
 * RangeError otherwise (an exponent, a sign, too many decimals).
 */
export function decimalUnits(text: string, decimals: number): bigint {
  const match = /^([0-9]+)(?:\.([0-9]+))?$/.exec(text);
  if (match === null) throw new RangeError(`${text} is not a plain non-negative decimal`);
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > decimals) throw new RangeError(`${text} has more than ${decimals} decimals`);
  return BigInt((match[1] as string) + fraction.padEnd(decimals, '0'));
}

/** A price's decimal text (at most 12 decimals) → 12-decimal units; throws a RangeError otherwise. */
export function priceUnits(text: string): bigint {
  return decimalUnits(text, PRICE_DECIMALS);
}

/** An amount's decimal text in `token` (USDG: 6 decimals, else the native token's 8) → base units. */
export function tokenUnits(text: string, token: string): bigint {
  return decimalUnits(text, decimalsOf(token));
}

export function formatPriceUnits(units: bigint): string {
  return formatUnits(units, PRICE_DECIMALS);
}

export class MarketReplay {
  readonly fee_bps: number;
  /** The reserves as replayed so far. */
  reserves: PoolReserves = { native_units: 0n, usdg_units: 0n };
  blocks_checked = 0;
  swaps_checked = 0;
  /** Blocks whose native_price was compared with the replayed pool's. */
  prices_checked = 0;
  /** The price the newest block carries (null before any block with one). */
  last_price_units: bigint | null = null;
  private block_number: number | null = null;

  constructor(fee_bps: number) {
    if (!Number.isSafeInteger(fee_bps) || fee_bps < 0 || fee_bps >= 10_000) throw new RangeError(`fee_bps must be an integer from 0 to 9999, got ${fee_bps}`);
    this.fee_bps = fee_bps;
  }

  /** Applies the next sealed transaction of block `block_number`. */
  transaction(tx: ReplayTransaction, block_number: number): void {
    this.block_number = block_number;
    if (tx.status !== 'confirmed' && tx.status !== 'failed') {
      this.fail('malformed_record', `a transaction of a sealed block is ${tx.status}`, tx);
    }
    const amount = this.units(tx.amount_text, tx.token, 'amount', tx);
    if (tx.type === 'swap') {
      this.swap(tx, amount);
      return;
    }
    if (tx.status !== 'confirmed') return;
    const credits = tx.to === POOL_ACCOUNT && (tx.type === 'mint' || tx.type === 'transfer');
    const debits = tx.from === POOL_ACCOUNT && (tx.type === 'burn' || tx.type === 'transfer');
    if (debits) {
      const reserve = this.reserve(tx.token);
      if (reserve < amount) this.fail('reserve_negative', `takes ${tx.amount_text} ${tx.token} from ${POOL_ACCOUNT}, whose reserve is ${formatUnits(reserve, decimalsOf(tx.token))}`, tx);
      this.setReserve(tx.token, reserve - amount);
    }
    if (credits) this.setReserve(tx.token, this.reserve(tx.token) + amount);
  }

  /** Closes block `block`: checks its native_price against the replayed pool. */
  endBlock(block: ReplayBlock): void {
    this.block_number = block.number;
    this.blocks_checked += 1;
    if (block.native_price == null) return;
    let stated: bigint;
    try {
      stated = priceUnits(block.native_price);
    } catch {
      this.fail('malformed_record', `native_price ${block.native_price} is not a decimal with at most ${PRICE_DECIMALS} decimals`, null);
    }
    this.last_price_units = stated;
    const replayed = poolPriceUnits(this.reserves);
    if (replayed === null) return; // the configured fallback price: not the chain's to check
    this.prices_checked += 1;
    if (replayed !== stated) {
      this.fail('price_mismatch', `the block states native_price ${block.native_price}, but the replayed pool (${this.describeReserves()}) gives ${formatPriceUnits(replayed)}`, null,
        { expected: formatPriceUnits(replayed), actual: block.native_price });
    }
  }

  private swap(tx: ReplayTransaction, amount_in: bigint): void {
    const pays_usdg = isUsdg(tx.token);
    const reserve_in = pays_usdg ? this.reserves.usdg_units : this.reserves.native_units;
    const reserve_out = pays_usdg ? this.reserves.native_units : this.reserves.usdg_units;
    const stated_token_out = tx.token_out ?? null;
    if (stated_token_out === null || isUsdg(stated_token_out) === pays_usdg) {
      this.fail('malformed_record', `a swap paying ${tx.token} states token_out ${String(stated_token_out)}`, tx);
    }
    const min_receive = tx.min_receive == null ? null : this.units(tx.min_receive_text ?? String(tx.min_receive), stated_token_out, 'min_receive', tx);
    const empty = reserve_in === 0n || reserve_out === 0n;
    const out = empty ? null : poolAmountOut(reserve_in, reserve_out, amount_in, this.fee_bps);
    const stated_out = tx.amount_out == null ? null : this.units(tx.amount_out_text ?? String(tx.amount_out), stated_token_out, 'amount_out', tx);
    const expected = out === null ? 'nothing (a reserve is empty)' : formatUnits(out, decimalsOf(stated_token_out));
    this.swaps_checked += 1;
    if (tx.status === 'failed') {
      if (stated_out !== null) this.fail('amount_out_mismatch', `a failed swap states amount_out ${tx.amount_out_text ?? String(tx.amount_out)}`, tx);
      const reason = tx.error;
      const plausible = reason === 'pool_empty' ? empty
        : reason === 'insufficient_funds' ? !empty
          : reason === 'amount_out_zero' ? out === 0n
            : reason === 'slippage_exceeded' ? out !== null && out > 0n && min_receive !== null && out < min_receive
              : reason === 'balance_overflow' ? out !== null && out > 0n && (min_receive === null || out >= min_receive)
                : false;
      if (!plausible) {
        this.fail('failure_implausible', `the swap failed with ${String(reason)}, but the replayed pool (${this.describeReserves()}) gives amount_out ${expected}${min_receive === null ? '' : ` against min_receive ${formatUnits(min_receive, decimalsOf(stated_token_out))}`}`, tx);
      }
      return;
    }
    if (out === null) this.fail('amount_out_mismatch', 'a swap was confirmed while a reserve of the replayed pool is empty', tx);
    if (out === 0n || (min_receive !== null && out < min_receive)) {
      this.fail('amount_out_mismatch', `a swap was confirmed, but the replayed pool gives amount_out ${expected}${min_receive === null ? '' : ` against min_receive ${formatUnits(min_receive, decimalsOf(stated_token_out))}`}`, tx);
    }
    if (stated_out !== out) {
      this.fail('amount_out_mismatch', `the swap states amount_out ${tx.amount_out_text ?? String(tx.amount_out)} ${stated_token_out}, but the replayed pool (${this.describeReserves()}) gives ${expected}`, tx,
        { expected, actual: tx.amount_out_text ?? String(tx.amount_out) });
    }
    if (pays_usdg) this.reserves = { usdg_units: reserve_in + amount_in, native_units: reserve_out - out };
    else this.reserves = { native_units: reserve_in + amount_in, usdg_units: reserve_out - out };
  }

  private reserve(token: string): bigint {
    return isUsdg(token) ? this.reserves.usdg_units : this.reserves.native_units;
  }

  private setReserve(token: string, units: bigint): void {
    this.reserves = isUsdg(token) ? { ...this.reserves, usdg_units: units } : { ...this.reserves, native_units: units };
  }

  private units(text: string, token: string, field: string, tx: ReplayTransaction): bigint {
    try {
      const units = tokenUnits(text, token);
      if (units <= 0n) throw new RangeError('not positive');
      return units;
    } catch (error) {
      return this.fail('malformed_record', `${field} ${text} is not an exact amount of ${token}: ${(error as Error).message}`, tx);
    }
  }

  private describeReserves(): string {
    return `reserves ${formatUnits(this.reserves.native_units, NATIVE_DECIMALS)} native, ${formatUnits(this.reserves.usdg_units, USDG_DECIMALS)} USDG`;
  }

  private fail(code: MarketMismatchError['code'], reason: string, tx: ReplayTransaction | null, values: { expected?: string; actual?: string } = {}): never {
    throw new MarketMismatchError(code, reason, { block_number: this.block_number, tx_hash: tx?.tx_hash ?? null, ...values });
  }
}

function isUsdg(token: string): boolean {
  return token.toUpperCase() === USDG;
}

function decimalsOf(token: string): number {
  return isUsdg(token) ? USDG_DECIMALS : NATIVE_DECIMALS;
}
