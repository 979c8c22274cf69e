/**
 * The constant-product pool's arithmetic (pure, bigint base units): what a swap pays out, the price
 * the reserves imply, and the invariants a swap must keep. Shared by the sealer, the audit replay and
 * the quote.
 */
import { assert } from '../shared/errors.js';
import { NATIVE_DECIMALS, PRICE_DECIMALS, USDG_DECIMALS } from '../shared/tokens.js';

/** Fees are in basis points of the amount paid in. */
export const FEE_BPS_DENOMINATOR = 10_000n;
export const POOL_FEE_BPS_DEFAULT = 30;
export const POOL_FEE_BPS_MAX = 1000;

export type Reserves = { native_units: bigint; usdg_units: bigint };

/**
 * floor(reserve_out × amount_in × (10000 − fee_bps) ÷ (reserve_in × 10000 + amount_in × (10000 − fee_bps))),
 * the whole amount_in going to the pool. Always below reserve_out, so no reserve is ever drained.
 */
export function swapAmountOut(reserve_in: bigint, reserve_out: bigint, amount_in: bigint, fee_bps: number): bigint {
  assert(reserve_in > 0n && reserve_out > 0n, 'a swap needs two non-empty reserves');
  assert(amount_in > 0n, 'a swap pays in a positive amount');
  const kept = amount_in * (FEE_BPS_DENOMINATOR - BigInt(fee_bps));
  return (reserve_out * kept) / (reserve_in * FEE_BPS_DENOMINATOR + kept);
}

/** The part of amount_in the fee takes, in the token paid in (what the quote reports). */
export function swapFee(amount_in: bigint, fee_bps: number): bigint {
  return (amount_in * BigInt(fee_bps)) / FEE_BPS_DENOMINATOR;
}

/**
 * USD per native token with PRICE_DECIMALS, rounded down: USDG reserve ÷ native reserve. Null while
 * either reserve is empty (the caller then uses the configured NATIVE_PRICE_USD).
 */
export function poolPriceUnits(reserves: Reserves): bigint | null {
  if (reserves.native_units <= 0n || reserves.usdg_units <= 0n) return null;
  const scale = 10n ** BigInt(PRICE_DECIMALS + NATIVE_DECIMALS - USDG_DECIMALS);
  return (reserves.usdg_units * scale) / reserves.native_units;
}

/** The price after a block: the pool's, or the fallback while a reserve is empty. */
export function priceOrFallback(reserves: Reserves, fallback_units: bigint): bigint {
  return poolPriceUnits(reserves) ?? fallback_units;
}

/** Checks on the write path: nothing overdrawn or drained, and the product of the reserves never decreases. */
export function assertSwapKeepsInvariants(before_in: bigint, before_out: bigint, after_in: bigint, after_out: bigint): void {
  assert(after_out > 0n, 'a swap never drains a reserve');
  assert(after_in > before_in && after_out < before_out, 'a swap moves both reserves the right way');
  assert(after_in * after_out >= before_in * before_out, 'the product of the reserves never decreases through a swap');
}

/** A price's decimal text (formatUnits with PRICE_DECIMALS, as block records carry it) back to its units. */
export function priceTextToUnits(text: string): bigint {
  const [integer = '0', fraction = ''] = text.split('.');
  return BigInt(integer + fraction.padEnd(PRICE_DECIMALS, '0'));
}

/** The USD value, in micro-dollars, of a swap counted on its USDG side (paid in or received). */
export function swapVolumeUsdMicros(usdg_units: bigint): bigint {
  // USDG has 6 decimals, like micro-dollars.
  return usdg_units * 10n ** BigInt(6 - USDG_DECIMALS);
}
