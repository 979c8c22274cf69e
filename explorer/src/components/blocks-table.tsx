/** A list of block headers, newest first; a table on wide screens, cards on a phone. */
import type { BlockHeader } from '@tabula/client';
import { formatCount, shortHash } from '../format';
import { Age, BlockLink } from './bits';

export function BlocksTable({ blocks, caption, now_ms }: { blocks: BlockHeader[]; caption: string; now_ms: number }) {
  if (blocks.length === 0) return <p class="muted">No blocks here.</p>;
  return (
    <table class="records blocks-table">
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Block</th>
          <th scope="col">Hash</th>
          <th scope="col" class="numeric">Transactions</th>
          <th scope="col">Sealed</th>
        </tr>
      </thead>
      <tbody>
        {blocks.map((block) => (
          <tr key={block.number} data-block={block.number}>
            <th scope="row" data-label="Block"><BlockLink number={block.number} /></th>
            <td data-label="Hash"><code class="mono" title={block.hash}>{shortHash(block.hash, 8)}</code></td>
            <td data-label="Transactions" class="numeric">{formatCount(block.transactions_count)}</td>
            <td data-label="Sealed"><Age seconds={block.timestamp} now_ms={now_ms} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
