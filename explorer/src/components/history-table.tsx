/**
 * An account's transactions, newest first, as the account sees them; a table on wide screens, cards
 * on a phone. Each cell's content is one element, so a phone card lays it out as one value.
 */
import type { Transaction } from '@tabula/client';
import { groupDigits } from '../format';
import { sideOf } from '../history';
import { swapSummary } from '../market';
import { AccountLink, Age, BlockLink, StatusBadge, TransactionLink } from './bits';

type Props = { user: string; transactions: Transaction[]; caption: string; now_ms: number; busy: boolean };

export function HistoryTable({ user, transactions, caption, now_ms, busy }: Props) {
  return (
    <table class="records history-table" aria-busy={busy}>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Transaction</th>
          <th scope="col">Direction</th>
          <th scope="col">Counterparty</th>
          <th scope="col" class="numeric">Amount</th>
          <th scope="col">Status</th>
          <th scope="col">Block</th>
          <th scope="col">Submitted</th>
        </tr>
      </thead>
      <tbody>
        {transactions.map((tx) => <HistoryRow key={tx.tx_hash} tx={tx} user={user} now_ms={now_ms} />)}
      </tbody>
    </table>
  );
}

function HistoryRow({ tx, user, now_ms }: { tx: Transaction; user: string; now_ms: number }) {
  const side = sideOf(tx, user);
  return (
    <tr data-tx={tx.tx_hash} data-status={tx.status}>
      <th scope="row" data-label="Transaction"><TransactionLink hash={tx.tx_hash} short /></th>
      <td data-label="Direction" data-field="direction">{side.direction}</td>
      <td data-label="Counterparty" data-field="counterparty">
        <span class="counterparty"><span class="muted">{side.preposition}</span> <AccountLink user={side.counterparty} /></span>
      </td>
      <td data-label="Amount" data-field="amount" class="numeric">
        {tx.type === 'swap' ? <SwapAmounts tx={tx} /> : <span><span class="amount">{groupDigits(tx.amount_text)}</span> {tx.token}</span>}
      </td>
      <td data-label="Status" data-field="status">
        <span><StatusBadge status={tx.status} />{tx.error === null ? null : <span class="muted"> ({tx.error})</span>}</span>
      </td>
      <td data-label="Block" data-field="block">
        {tx.block_number === null ? <span class="muted">not yet</span> : <BlockLink number={tx.block_number} />}
      </td>
      <td data-label="Submitted"><Age seconds={tx.timestamp} now_ms={now_ms} /></td>
    </tr>
  );
}

/** A swap's two sides in one cell: what was paid, and what was received (or that it is pending, or failed). */
function SwapAmounts({ tx }: { tx: Transaction }) {
  const swap = swapSummary(tx);
  return (
    <span class="swap-amounts">
      <span data-field="paid"><span class="muted">paid </span><span class="amount">{groupDigits(swap.paid.amount_text)}</span> {swap.paid.token}</span>
      <span data-field="received">
        <span class="muted">received </span>
        {swap.received !== null ? <><span class="amount">{groupDigits(swap.received.amount_text)}</span> {swap.received.token}</>
          : <span class="muted">{swap.outcome === 'failed' ? 'nothing' : `${swap.token_out ?? ''}, pending`}</span>}
      </span>
    </span>
  );
}
