/** The six network statistics, loaded again with each new block (or every two seconds while polling). */
import type { ComponentChildren } from 'preact';
import type { Stats } from '@tabula/client';
import { useApi } from '../api';
import { formatCount, groupDigits } from '../format';
import { isBlockSealed } from '../live-events';
import { useLive } from '../live';
import { BlockLink, Notice } from './bits';

export const STATS_POLL_MS = 2000;

export function StatsTiles() {
  const { config } = useApi();
  const stats = useLive((client, signal) => client.getStats({ signal }), [], { poll_ms: () => STATS_POLL_MS, refresh_on: isBlockSealed });
  const data: Stats | null = stats.data;
  return (
    <section aria-labelledby="stats-heading" class="stats">
      <h2 id="stats-heading">Network</h2>
      {stats.error === null ? null : <Notice kind="error">Statistics could not be refreshed: {stats.error}</Notice>}
      <dl class="tiles" aria-busy={data === null}>
        <Tile id="latest-block" label="Latest block" value={data === null ? '…' : <BlockLink number={data.latest_block_number}>{formatCount(data.latest_block_number)}</BlockLink>} />
        <Tile id="total-transactions" label="Transactions" value={data === null ? '…' : formatCount(data.total_transactions)} />
        <Tile id="total-users" label="Users" value={data === null ? '…' : formatCount(data.total_users)} />
        <Tile id="native-price" label={`${config.native_symbol} price`} value={data === null ? '…' : `$${groupDigits(data.native_price_text)}`} />
        <Tile id="volume-24h" label="Volume, 24 h" value={data === null ? '…' : `$${groupDigits(data.trading_volume_24h_text)}`} />
        <Tile id="active-users-24h" label="Active users, 24 h" value={data === null ? '…' : formatCount(data.active_users_24h)} />
      </dl>
    </section>
  );
}

function Tile({ id, label, value }: { id: string; label: string; value: ComponentChildren }) {
  return (
    <div class="tile" data-stat={id}>
      <dt class="tile-label">{label}</dt>
      <dd class="tile-value">{value}</dd>
    </div>
  );
}
