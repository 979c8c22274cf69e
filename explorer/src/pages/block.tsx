/** One block: its header, a link to its parent, its transactions, and the block verified in the browser. */
import { useEffect, useState } from 'preact/hooks';
import { NotFoundError, type Block, type BlockHeader, type TabulaClient } from '@tabula/client';
import { useApi } from '../api';
import { BlockLink, Fields, Hash, Notice, Time, TransactionLink } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { check, type Check, VerificationPanel } from '../components/verification';
import { formatCount } from '../format';
import { sealsBlock } from '../live-events';
import { useLive } from '../live';
import { href } from '../routes';

export const TRANSACTIONS_SHOWN_STEP = 50;

type Loaded = { block: Block; parent: BlockHeader | null; latest: number; at_ms: number };

export function BlockPage({ number }: { number: number }) {
  const api = useApi();
  const [not_found, setNotFound] = useState(false);
  const live = useLive<Loaded | null>(async (client, signal) => {
    try {
      const [block, head] = await Promise.all([client.getBlock(number, { signal }), client.listBlocks({ limit: 1 }, { signal })]);
      const latest = Math.max(head.blocks[0]?.number ?? number, number);
      setNotFound(false);
      return { block, parent: await parentHeader(client, number, latest, signal), latest, at_ms: Date.now() };
    } catch (error) {
      if (error instanceof NotFoundError) {
        setNotFound(true);
        return null;
      }
      throw error;
    }
  }, [number], { poll_ms: (data) => (data === null ? 2000 : null), refresh_on: (event) => sealsBlock(event, number) });

  const [checks, setChecks] = useState<Check[] | null>(null);
  useEffect(() => {
    const data = live.data;
    if (data === null) return;
    let current = true;
    void verifyBlockChecks(api.client, data.block, data.parent).then((result) => current && setChecks(result));
    return () => {
      current = false;
    };
  }, [live.data]);

  const data = live.data;
  return (
    <>
      <PageHeading title={`Block #${number}`} />
      {live.error === null ? null : <Notice kind="error">The block could not be loaded: {live.error}</Notice>}
      {not_found ? (
        <Notice kind="info" title="No such block yet">
          There is no block #{number}; this page shows it once it is sealed.{' '}
          <a href={href({ name: 'account', user: String(number) })}>Look up user “{number}” instead</a>.
        </Notice>
      ) : null}
      {data === null ? (not_found ? null : <p class="muted" role="status">Loading block…</p>) : (
        <>
          <nav class="pager" aria-label="Neighbouring blocks">
            {number > 0 ? <a href={href({ name: 'block', number: number - 1 })} rel="prev">← Block #{number - 1}</a> : <span />}
            {number < data.latest ? <a href={href({ name: 'block', number: number + 1 })} rel="next">Block #{number + 1} →</a> : <span />}
          </nav>
          <section aria-labelledby="header-heading" class="card">
            <h2 id="header-heading">Header</h2>
            <Fields rows={[
              ['Number', formatCount(data.block.number)],
              ['Hash', <Hash value={data.block.hash} />],
              ['Parent hash', data.block.number === 0
                ? <><Hash value={data.block.parent_hash} /> <span class="muted">(genesis has no parent)</span></>
                : <a href={href({ name: 'block', number: data.block.number - 1 })} aria-label={`Parent: block ${data.block.number - 1}, hash ${data.block.parent_hash}`}><code class="hash">{data.block.parent_hash}</code></a>],
              ['Sealed', <Time seconds={data.block.timestamp} now_ms={data.at_ms} />],
              ['Transactions', formatCount(data.block.transactions_count)],
              ['Transactions root', <Hash value={data.block.transactions_root} />],
            ]} />
          </section>
          <VerificationPanel heading="Block verification" checks={checks} />
          <TransactionList block={data.block} />
        </>
      )}
    </>
  );
}

function TransactionList({ block }: { block: Block }) {
  const [shown, setShown] = useState(TRANSACTIONS_SHOWN_STEP);
  const visible = block.transactions.slice(0, shown);
  return (
    <section aria-labelledby="transactions-heading">
      <h2 id="transactions-heading">Transactions ({formatCount(block.transactions.length)})</h2>
      {block.transactions.length === 0 ? <p class="muted">This block has no transactions.</p> : (
        <ol class="transaction-list" start={0}>
          {visible.map((hash, position) => (
            <li key={hash} data-position={position}>
              <span class="muted position" aria-hidden="true">{position}</span>
              <TransactionLink hash={hash} />
            </li>
          ))}
        </ol>
      )}
      {shown < block.transactions.length ? (
        <button type="button" onClick={() => setShown((value) => value + TRANSACTIONS_SHOWN_STEP)}>
          Show {Math.min(TRANSACTIONS_SHOWN_STEP, block.transactions.length - shown)} more
        </button>
      ) : null}
    </section>
  );
}

/** The parent's header only (a page of two headers, not the parent's whole transaction list). */
async function parentHeader(client: TabulaClient, number: number, latest: number, signal: AbortSignal): Promise<BlockHeader | null> {
  if (number === 0) return null;
  const page = await client.listBlocks({ limit: 2, offset: latest - number }, { signal });
  // A block sealed between the two calls shifts the page; then ask for the parent itself.
  return page.blocks.find((header) => header.number === number - 1) ?? client.getBlock(number - 1, { signal });
}

async function verifyBlockChecks(client: TabulaClient, block: Block, parent: BlockHeader | null): Promise<Check[]> {
  const checks = [
    await check(`Transactions root recomputed from its ${formatCount(block.transactions.length)} transaction hashes, and block hash recomputed from the header`, () => client.verifyBlock(block)),
  ];
  if (parent !== null) checks.push(await check(`Parent hash is the hash of block #${parent.number}`, () => client.verifyBlock(block, { parent })));
  return checks;
}
