/**
 * All blocks, newest first, a page at a time. A page is named by its newest block (`#/blocks?from=120`)
 * so it stays the same page while new blocks arrive; the first page follows the head of the chain
 * (loaded again with each `block.sealed` event, or polled while the event stream is not live).
 */
import { BlocksTable } from '../components/blocks-table';
import { Notice } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { formatCount } from '../format';
import { isBlockSealed } from '../live-events';
import { useLive, useNow } from '../live';
import { href } from '../routes';

const POLL_MS = 2000;

export function BlocksPage({ from, limit }: { from: number | null; limit: number }) {
  const live = useLive(async (client, signal) => {
    const head = await client.listBlocks({ limit: from === null ? limit : 1, offset: 0 }, { signal });
    const latest = head.blocks[0]?.number ?? 0;
    const start = from === null ? latest : Math.min(from, latest);
    const page = from === null ? head : await client.listBlocks({ limit, offset: latest - start }, { signal });
    return { page, latest, start, at_ms: Date.now() };
  }, [from, limit], { poll_ms: () => POLL_MS, refresh_on: isBlockSealed });
  const now_ms = useNow();

  const data = live.data;
  const oldest_shown = data === null ? null : (data.page.blocks[data.page.blocks.length - 1]?.number ?? null);
  return (
    <>
      <PageHeading title={from === null ? 'Blocks' : `Blocks from #${from}`} />
      {live.error === null ? null : <Notice kind="error">Blocks could not be loaded: {live.error}</Notice>}
      {data === null ? <p class="muted" role="status">Loading blocks…</p> : (
        <>
          <p class="muted">
            Blocks #{formatCount(data.start)} to #{formatCount(oldest_shown ?? data.start)} of {formatCount(data.page.total)}, newest first
            {from === null ? ' (new blocks appear as they are sealed)' : ''}.
          </p>
          <BlocksTable blocks={data.page.blocks} caption="Blocks, newest first" now_ms={Math.max(now_ms, data.at_ms)} />
          <nav class="pager" aria-label="Block pages">
            {data.start < data.latest ? (
              <a href={href({ name: 'blocks', from: data.start + limit >= data.latest ? null : data.start + limit, limit })} rel="prev">← Newer</a>
            ) : <span />}
            {oldest_shown !== null && oldest_shown > 0 ? (
              <a href={href({ name: 'blocks', from: oldest_shown - 1, limit })} rel="next">Older →</a>
            ) : <span />}
          </nav>
        </>
      )}
    </>
  );
}
