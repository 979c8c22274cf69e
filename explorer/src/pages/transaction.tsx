/**
 * One transaction: every field, its status history, and — once it is in a block — its inclusion proof
 * verified in the browser with the SDK (WebCrypto): the root recomputed from the hash and the audit
 * path, the block hash recomputed from the header, the transaction hash recomputed from its fields,
 * and the block proven into the history of the tab's trusted signed checkpoint.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { NotFoundError, type Block, type InclusionProof, type TabulaClient, type Transaction, type TrustAnchor } from '@tabula/client';
import { describeFailure, useApi } from '../api';
import type { CheckpointTrust } from '../checkpoint-trust';
import { AccountLink, BlockLink, Fields, Hash, Notice, StatusBadge, Time } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { check, same, type Check, VerificationPanel } from '../components/verification';
import { formatCount, groupDigits } from '../format';
import { swapSummary } from '../market';
import { concernsTransaction } from '../live-events';
import { useLive } from '../live';

export const PENDING_POLL_MS = 1000;

type Sealed = { block: Block; proof: InclusionProof };
type Loaded = { tx: Transaction; sealed: Sealed | null; at_ms: number } | { missing: true };

export function TransactionPage({ hash }: { hash: string }) {
  const api = useApi();
  const live = useLive<Loaded>(async (client, signal) => {
    try {
      const tx = await client.getTransaction(hash, { signal });
      if (tx.status === 'pending' || tx.block_number === null) return { tx, sealed: null, at_ms: Date.now() };
      const [block, proof] = await Promise.all([client.getBlock(tx.block_number, { signal }), client.getProof(hash, { signal })]);
      return { tx, sealed: { block, proof }, at_ms: Date.now() };
    } catch (error) {
      if (error instanceof NotFoundError && error.code === 'transaction_not_found') return { missing: true };
      throw error;
    }
  }, [hash], {
    poll_ms: (data) => (data !== null && 'tx' in data && data.sealed !== null ? null : PENDING_POLL_MS),
    refresh_on: (event) => concernsTransaction(event, hash),
  });

  const [checks, setChecks] = useState<Verified | null>(null);
  useEffect(() => {
    const data = live.data;
    if (data === null || 'missing' in data || data.sealed === null) return;
    let current = true;
    void verifyTransactionChecks(api.client, api.trust, data.tx, data.sealed).then((result) => current && setChecks(result));
    return () => {
      current = false;
    };
  }, [live.data]);

  const data = live.data;
  return (
    <>
      <PageHeading title="Transaction" />
      <p class="subtitle"><Hash value={hash} /></p>
      {live.error === null ? null : <Notice kind="error">The transaction could not be loaded: {live.error}</Notice>}
      {data === null ? <p class="muted" role="status">Loading transaction…</p> : 'missing' in data ? (
        <Notice kind="info" title="No such transaction">No transaction has this hash (yet). It appears here once it is submitted.</Notice>
      ) : (
        <>
          <section class="card" aria-labelledby="details-heading">
            <h2 id="details-heading">Details</h2>
            <TransactionFields tx={data.tx} native={api.config.native_symbol} />
          </section>
          <StatusHistory tx={data.tx} block={data.sealed?.block ?? null} at_ms={data.at_ms} />
          {data.sealed === null ? (
            <VerificationPanel heading="Inclusion proof" checks={null} pending="The proof exists once the transaction is in a block; waiting for the next block…" />
          ) : (
            <>
              <VerificationPanel heading="Inclusion proof" checks={checks?.checks ?? null} anchor={checks?.anchor ?? null} />
              <ProofDetails proof={data.sealed.proof} />
            </>
          )}
        </>
      )}
    </>
  );
}

function TransactionFields({ tx, native }: { tx: Transaction; native: string }) {
  return (
    <Fields rows={[
      ['Hash', <Hash value={tx.tx_hash} />],
      ['Status', <span data-field="status"><StatusBadge status={tx.status} />{tx.error === null ? null : <span class="muted"> ({tx.error})</span>}</span>],
      ['Type', tx.type],
      ['From', <AccountLink user={tx.from} />],
      ['To', <AccountLink user={tx.to} />],
      ...(tx.type === 'swap' ? swapRows(tx, native) : [['Amount', <span data-field="amount"><span class="amount">{groupDigits(tx.amount_text)}</span> {tx.token}</span>] as FieldRow]),
      ['Submitted', <Time seconds={tx.timestamp} />],
      ['Block', tx.block_number === null ? <span class="muted">not yet</span> : <BlockLink number={tx.block_number} />],
      ['Block hash', tx.block_hash === null ? <span class="muted">not yet</span> : <Hash value={tx.block_hash} />],
      ['Position in block', tx.position === null ? <span class="muted">not yet</span> : String(tx.position)],
      ['Error', tx.error ?? <span class="muted">none</span>],
      ['Nonce', <Hash value={tx.nonce} />],
      ['Metadata', <pre class="json">{JSON.stringify(tx.metadata, null, 2)}</pre>],
    ]} />
  );
}

type FieldRow = [string, ComponentChildren];

/** A swap: what `from` paid, what `to` received (or why not yet / not at all), the price it got, and the least it accepted. */
function swapRows(tx: Transaction, native: string): FieldRow[] {
  const swap = swapSummary(tx);
  const amount = (value: { amount_text: string; token: string }) => <><span class="amount">{groupDigits(value.amount_text)}</span> {value.token}</>;
  return [
    ['Paid', <span data-field="paid">{amount(swap.paid)}</span>],
    ['Received', <span data-field="received">{swap.received !== null ? amount(swap.received)
      : swap.outcome === 'failed' ? <span class="muted">nothing: the swap failed{tx.error === null ? '' : ` (${tx.error})`}</span>
      : <span class="muted">pending: known once the swap is in a block{swap.token_out === null ? '' : ` (in ${swap.token_out})`}</span>}</span>],
    [`Price (USDG per ${native})`, <span data-field="swap-price">{swap.price === null ? <span class="muted">{swap.outcome === 'failed' ? 'none' : 'not yet'}</span> : groupDigits(swap.price)}</span>],
    ['Minimum accepted', <span data-field="min-receive">{swap.min_receive === null ? <span class="muted">any amount</span> : amount(swap.min_receive)}</span>],
  ];
}

function StatusHistory({ tx, block, at_ms }: { tx: Transaction; block: Block | null; at_ms: number }) {
  return (
    <section aria-labelledby="history-heading">
      <h2 id="history-heading">Status history</h2>
      <ol class="timeline" aria-live="polite">
        <li>
          <StatusBadge status="pending" /> submitted and stored durably, <Time seconds={tx.timestamp} now_ms={at_ms} />
        </li>
        {tx.status === 'pending' || block === null ? (
          <li class="muted">waiting for the next block…</li>
        ) : (
          <li data-final-status={tx.status}>
            <StatusBadge status={tx.status} /> {tx.status === 'failed' ? `failed (${tx.error ?? 'no reason given'}) ` : ''}
            in block <BlockLink number={block.number} /> at position {tx.position}, <Time seconds={block.timestamp} now_ms={at_ms} />
          </li>
        )}
      </ol>
    </section>
  );
}

function ProofDetails({ proof }: { proof: InclusionProof }) {
  return (
    <details class="card proof">
      <summary>The proof as the server sent it</summary>
      <Fields rows={[
        ['Block', <BlockLink number={proof.block_number} />],
        ['Block hash', <Hash value={proof.block_hash} />],
        ['Transactions root', <Hash value={proof.transactions_root} />],
        ['Leaf index', formatCount(proof.leaf_index)],
        ['Tree size', formatCount(proof.tree_size)],
        ['Audit path', proof.audit_path.length === 0 ? <span class="muted">empty (the only transaction in its block)</span> : (
          <ol class="audit-path" start={0}>{proof.audit_path.map((node, index) => <li key={index}><Hash value={node} /></li>)}</ol>
        )],
      ]} />
    </details>
  );
}

type Verified = { checks: Check[]; anchor: TrustAnchor | null };

async function verifyTransactionChecks(client: TabulaClient, trust: CheckpointTrust, tx: Transaction, { block, proof }: Sealed): Promise<Verified> {
  const history = await historyCheck(trust, block);
  const checks = [
    await check('Transaction hash recomputed from its fields', () => client.verifyTransaction(tx)),
    same('The proof is for this transaction', proof.tx_hash, tx.tx_hash),
    same("The proof is for the transaction's block", proof.block_hash, tx.block_hash),
    await check(
      `Merkle root recomputed from the hash and ${proof.audit_path.length === 0 ? 'the empty audit path (the only transaction of its block)' : `the ${proof.audit_path.length}-node audit path`} equals block #${block.number}'s transactions root, whose header hashes to the block hash`,
      () => client.verifyInclusion(proof, { header: block }),
    ),
    same(`Block #${block.number} lists the transaction at position ${tx.position ?? '?'}`, tx.position === null ? undefined : block.transactions[tx.position], tx.tx_hash),
    history.check,
  ];
  return { checks, anchor: history.anchor };
}

/** The block's hash proven into the history of the tab's trusted checkpoint, whose signature was checked with the pinned key. */
export async function historyCheck(trust: CheckpointTrust, block: { number: number; hash: string }): Promise<{ check: Check; anchor: TrustAnchor | null }> {
  try {
    const anchor = await trust.verifyBlock(block.number, block.hash);
    const label = `Block #${block.number} is in the history signed at checkpoint ${anchor.checkpoint.size} by key ${anchor.key_id} (the tab's trusted checkpoint, advanced only through a verified consistency proof)`;
    return { check: { label, ok: true }, anchor };
  } catch (error) {
    return { check: { label: `Block #${block.number} is in the history of a checkpoint signed by the trusted key`, ok: false, detail: describeFailure(error) }, anchor: null };
  }
}
