/**
 * An account's transactions, 20 a page, newest first. The first page is followed live from the event
 * stream, or polled while it is not live (new pending transactions appear, pending ones turn confirmed
 * or failed); an older page, reached with the cursor of the page before it, is loaded once (and
 * retried only if loading it failed). While a page loads the one before stays on screen, so the
 * pager button that was pressed keeps the focus; when that button goes away (no older page, back on
 * the first), focus moves to the section's heading. Under the page, its transactions verified in the
 * browser against the tab's trusted signed checkpoint.
 */
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { AccountTransactionsPage } from '@tabula/client';
import { formatCount } from '../format';
import { HISTORY_PAGE_SIZE, NEWEST_PAGE, olderPage, pageRange, type HistoryPosition } from '../history';
import { touchesAccount } from '../live-events';
import { useLive, useNow } from '../live';
import { AccountVerification } from './account-verification';
import { Notice } from './bits';
import { HistoryTable } from './history-table';

export const HISTORY_POLL_MS = 2000;

type Loaded = { position: HistoryPosition; page: AccountTransactionsPage; at_ms: number };

export function AccountHistory({ user }: { user: string }) {
  const [position, setPosition] = useState<HistoryPosition>(NEWEST_PAGE);
  const live = useLive<Loaded>(async (client, signal) => {
    const cursor = position.cursor === null ? {} : { cursor: position.cursor };
    const page = await client.listAccountTransactions(user, { limit: HISTORY_PAGE_SIZE, ...cursor }, { signal });
    return { position, page, at_ms: Date.now() };
  }, [user, position.cursor, position.number], {
    poll_ms: (data) => (position.cursor === null || data === null ? HISTORY_POLL_MS : null),
    refresh_on: (event) => position.cursor === null && touchesAccount(event, user),
  });
  const now_ms = useNow();

  // The page on screen: the one just loaded, or the one before while the next loads.
  const last_shown = useRef<Loaded | null>(null);
  if (live.data !== null) last_shown.current = live.data;
  const shown = live.data ?? last_shown.current;
  const busy = live.data === null && live.loading;

  const heading = useRef<HTMLHeadingElement>(null);
  const focus_after_load = useRef(false);
  useLayoutEffect(() => {
    if (!focus_after_load.current || live.data === null) return;
    focus_after_load.current = false;
    const active = document.activeElement;
    if (active === null || active === document.body) heading.current?.focus();
  }, [live.data]);
  const go = (next: HistoryPosition) => {
    focus_after_load.current = true;
    setPosition(next);
  };

  return (
    <>
      <section aria-labelledby="account-history-heading" class="account-history">
        <h2 id="account-history-heading" tabIndex={-1} ref={heading}>Transactions</h2>
        {live.error === null ? null : <Notice kind="error">The transactions could not be loaded: {live.error}</Notice>}
        <p class="muted" role="status">{summary(user, position, shown, busy, live.error !== null)}</p>
        {shown === null || shown.page.transactions.length === 0 ? null : (
          <HistoryTable
            user={user}
            transactions={shown.page.transactions}
            caption={`Transactions of ${user}, newest first, page ${shown.position.number}`}
            now_ms={Math.max(now_ms, shown.at_ms)}
            busy={busy}
          />
        )}
        {shown === null ? null : <Pager shown={shown} go={go} />}
      </section>
      {shown === null ? null : <AccountVerification transactions={shown.page.transactions} />}
    </>
  );
}

function Pager({ shown, go }: { shown: Loaded; go: (next: HistoryPosition) => void }) {
  const next_cursor = shown.page.next_cursor;
  if (shown.position.number === 1 && next_cursor === null) return null;
  return (
    <nav class="pager" aria-label="Transaction pages">
      {shown.position.number > 1 ? (
        <button type="button" key="newest" onClick={() => go(NEWEST_PAGE)}><span aria-hidden="true">← </span>Newest transactions</button>
      ) : <span key="newest" />}
      {next_cursor !== null ? (
        <button type="button" key="older" onClick={() => go(olderPage(shown.position, next_cursor))}>Older transactions<span aria-hidden="true"> →</span></button>
      ) : <span key="older" />}
    </nav>
  );
}

/** What the page shows, in words; it is a polite live region, so paging is announced. */
function summary(user: string, position: HistoryPosition, shown: Loaded | null, busy: boolean, failed: boolean): string {
  if (shown === null) return failed ? '' : 'Loading transactions…';
  if (busy) return position.number === 1 ? 'Loading the newest transactions…' : `Loading page ${position.number}…`;
  const count = shown.page.transactions.length;
  if (count === 0) return shown.position.number === 1 ? `${user} has no transactions yet.` : 'No older transactions.';
  const { first, last } = pageRange(shown.position, count);
  const range = `Transactions ${formatCount(first)} to ${formatCount(last)}, newest first, pending ones included`;
  return shown.position.number === 1
    ? `${range}; new ones appear as they happen.`
    : `${range}. Older pages are not refreshed: “Newest transactions” shows new ones.`;
}
