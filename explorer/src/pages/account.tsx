/**
 * A user's balances from confirmed state (the native token, USDG, and their total in USD), and under
 * them the user's transactions, newest first. Both follow the event stream (or poll while it is not live).
 */
import { useApi } from '../api';
import { AccountHistory } from '../components/account-history';
import { Notice } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { groupDigits } from '../format';
import { changesBalance } from '../live-events';
import { useLive } from '../live';
import { href } from '../routes';

const POLL_MS = 2000;

export function AccountPage({ user }: { user: string }) {
  const { config, session } = useApi();
  const live = useLive((client, signal) => client.getBalance(user, { signal }), [user], {
    poll_ms: () => POLL_MS,
    refresh_on: (event) => changesBalance(event, user),
  });
  const balance = live.data;
  return (
    <>
      <PageHeading title={`Account ${user}`}>Account <span class="account-name">{user}</span></PageHeading>
      {user === session.sub ? <p class="muted">This is you. <a href={href({ name: 'transfer' })}>Send a transfer</a>.</p> : null}
      {live.error === null ? null : <Notice kind="error">The balance could not be loaded: {live.error}</Notice>}
      {balance === null ? (live.error === null ? <p class="muted" role="status">Loading balances…</p> : null) : (
        <section aria-labelledby="balances-heading">
          <h2 id="balances-heading">Balances</h2>
          <dl class="tiles balances">
            <div class="tile" data-balance="native">
              <dt class="tile-label">{config.native_symbol} (native)</dt>
              <dd class="tile-value">{groupDigits(balance.native_text)}</dd>
            </div>
            <div class="tile" data-balance="usdg">
              <dt class="tile-label">USDG</dt>
              <dd class="tile-value">{groupDigits(balance.usdg_text)}</dd>
            </div>
            <div class="tile" data-balance="total_usd">
              <dt class="tile-label">Total, USD</dt>
              <dd class="tile-value">${groupDigits(balance.total_usd_text)}</dd>
            </div>
          </dl>
          <p class="muted">From confirmed transactions only; updated as they are confirmed. A user who never transacted has zero balances.</p>
        </section>
      )}
      <AccountHistory user={user} />
    </>
  );
}
