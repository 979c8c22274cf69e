/** The overview: network statistics, the native token's price chart (and whether replaying the pool verifies it) and the latest blocks, all live (from the event stream, or polled). */
import { BlocksTable } from '../components/blocks-table';
import { Notice } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { PriceChart } from '../components/price-chart';
import { PriceVerification } from '../components/price-verification';
import { StatsTiles } from '../components/stats-tiles';
import { isBlockSealed } from '../live-events';
import { useLive, useNow } from '../live';

export const LATEST_BLOCKS = 10;
export const BLOCKS_POLL_MS = 2000;

export function HomePage() {
  const page = useLive(async (client, signal) => ({ page: await client.listBlocks({ limit: LATEST_BLOCKS, offset: 0 }, { signal }), at_ms: Date.now() }), [], {
    poll_ms: () => BLOCKS_POLL_MS,
    refresh_on: isBlockSealed,
  });
  const now_ms = useNow();
  return (
    <>
      <PageHeading title="Ledger overview" />
      <StatsTiles />
      <PriceChart />
      <PriceVerification />
      <section aria-labelledby="latest-blocks-heading">
        <div class="section-heading">
          <h2 id="latest-blocks-heading">Latest blocks</h2>
          <a href="#/blocks">All blocks</a>
        </div>
        {page.error === null ? null : <Notice kind="error">Blocks could not be refreshed: {page.error}</Notice>}
        {page.data === null ? <p class="muted" role="status">Loading blocks…</p> : (
          <BlocksTable blocks={page.data.page.blocks} caption="The latest blocks, newest first" now_ms={Math.max(now_ms, page.data.at_ms)} />
        )}
      </section>
    </>
  );
}
