/** Cumulative transfer volumes as both stores keep them in a block row: JSON of decimal strings, exact for any bigint. */
import type { ChainTotals } from '../service/ledger-store.js';

export function encodeVolumes(volumes: ChainTotals['transfer_volume_units']): string {
  return JSON.stringify(Object.fromEntries(Object.entries(volumes).map(([token, units]) => [token, units.toString()])));
}

export function decodeVolumes(text: string): Record<string, bigint> {
  const parsed = JSON.parse(text) as Record<string, string>;
  return Object.fromEntries(Object.entries(parsed).map(([token, units]) => [token, BigInt(units)]));
}

/** The cumulative swap volume a block row stores (decimal text of micro-dollars); left out while 0, as before the market. */
export function swapVolume(text: string): { swap_volume_usd_micros?: bigint } {
  const micros = BigInt(text);
  return micros === 0n ? {} : { swap_volume_usd_micros: micros };
}
