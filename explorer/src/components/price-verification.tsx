/**
 * One line under the price chart: whether the price was verified by replaying the pool from the chain
 * (market-verification.ts), up to which block, or why not. Goes on with each new block (or polled).
 */
import { useRef } from 'preact/hooks';
import { formatCount, groupDigits } from '../format';
import { isBlockSealed } from '../live-events';
import { useLive } from '../live';
import { PoolVerifier, type PriceVerification as Outcome } from '../market-verification';
import { CHART_POLL_MS } from './price-chart';

export function PriceVerification() {
  const verifier = useRef<PoolVerifier | null>(null);
  const live = useLive<Outcome>(async (client, signal) => {
    verifier.current ??= new PoolVerifier(client);
    return verifier.current.advance(signal);
  }, [], { poll_ms: () => CHART_POLL_MS, refresh_on: isBlockSealed });
  const outcome = live.data;
  if (outcome?.state === 'mismatch') {
    const where = outcome.block_number === null ? '' : ` at block ${outcome.block_number}`;
    return (
      <p class="price-verification price-verification-bad" data-price-verified="no" role="alert">
        <span aria-hidden="true">✗ </span><strong>Price NOT verified</strong>: replaying the pool failed{where}. {outcome.reason}
      </p>
    );
  }
  if (outcome === null || outcome === undefined) {
    if (live.error !== null) {
      return <p class="price-verification price-verification-bad" data-price-verified="unknown" role="status"><strong>Price not verified yet</strong>: the chain could not be read ({live.error}).</p>;
    }
    return <p class="price-verification muted" data-price-verified="checking" role="status">Verifying the price by replaying the pool…</p>;
  }
  return (
    <p class="price-verification price-verification-ok" data-price-verified="yes" data-verified-to={outcome.to} role="status">
      <span aria-hidden="true">✓ </span><strong>Price verified</strong> by replaying the pool up to block {formatCount(outcome.to)}
      {outcome.price === null ? null : <> (${groupDigits(outcome.price)})</>}: {formatCount(outcome.swaps_checked)} swap{outcome.swaps_checked === 1 ? '' : 's'} and {formatCount(outcome.prices_checked)} block price{outcome.prices_checked === 1 ? '' : 's'} recomputed.
      {live.error === null ? null : <span class="check-detail"> (not refreshed: {live.error})</span>}
    </p>
  );
}
