/**
 * The account page's verification of the transactions it shows: each hash recomputed from its fields,
 * each sealed one proven into its block (inclusion proof against the recomputed header), and each of
 * those blocks proven into the history of the tab's trusted signed checkpoint. Results are kept per
 * transaction and block, so a refresh checks only what is new.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Block, Transaction, TrustAnchor } from '@tabula/client';
import { describeFailure, useApi, type Api } from '../api';
import { formatCount } from '../format';
import { VerificationPanel, type Check } from './verification';

type TransactionOutcome = { failure: string | null; block: { number: number; hash: string } | null; proof_failure: string | null };
type BlockOutcome = { anchor: TrustAnchor | null; failure: string | null };
type Verified = { checks: Check[]; anchor: TrustAnchor | null };
/** What this page checked already: per transaction (and its block hash), per block, and the headers it fetched. */
type Caches = { outcomes: Map<string, Promise<TransactionOutcome>>; blocks: Map<string, Promise<BlockOutcome>>; headers: Map<number, Promise<Block>> };

export function AccountVerification({ transactions }: { transactions: Transaction[] }) {
  const api = useApi();
  const caches = useRef<Caches>({ outcomes: new Map(), blocks: new Map(), headers: new Map() });
  const [verified, setVerified] = useState<Verified | null>(null);
  const key = transactions.map((tx) => `${tx.tx_hash}:${tx.block_hash ?? ''}`).join(',');
  useEffect(() => {
    let current = true;
    setVerified(null);
    void verifyPage(api, transactions, caches.current).then((result) => current && setVerified(result));
    return () => {
      current = false;
    };
  }, [key]);
  if (transactions.length === 0) return null;
  return <VerificationPanel heading="These transactions, verified" checks={verified?.checks ?? null} anchor={verified?.anchor ?? null} />;
}

async function verifyPage(api: Api, transactions: Transaction[], { outcomes, blocks, headers }: Caches): Promise<Verified> {
  const results: TransactionOutcome[] = [];
  for (const tx of transactions) {
    const key = `${tx.tx_hash}:${tx.block_hash ?? ''}`;
    if (!outcomes.has(key)) outcomes.set(key, verifyOne(api, tx, headers));
    results.push(await (outcomes.get(key) as Promise<TransactionOutcome>));
  }
  const sealed = results.filter((result) => result.block !== null);
  const distinct = [...new Map(sealed.map((result) => [result.block?.hash, result.block as { number: number; hash: string }])).values()];
  const block_outcomes: BlockOutcome[] = [];
  for (const block of distinct) {
    // One after another: the first may advance the tab's checkpoint, and the rest then reuse it.
    const key = `${block.number}:${block.hash}`;
    if (!blocks.has(key)) blocks.set(key, verifyBlockInHistory(api, block));
    block_outcomes.push(await (blocks.get(key) as Promise<BlockOutcome>));
  }
  const checks: Check[] = [first(`${counted(transactions.length, 'transaction')} ${transactions.length === 1 ? 'hash' : 'hashes'} recomputed from their fields`, results.map((result) => result.failure))];
  if (sealed.length === 0) return { checks, anchor: null };
  checks.push(first(`${counted(sealed.length, 'sealed transaction')} proven into ${distinct.length === 1 ? 'their block' : `their ${formatCount(distinct.length)} blocks`} (inclusion proofs against the recomputed block headers)`, sealed.map((result) => result.proof_failure)));
  const anchors = block_outcomes.map((outcome) => outcome.anchor).filter((anchor): anchor is TrustAnchor => anchor !== null);
  const newest = anchors.reduce<TrustAnchor | null>((best, anchor) => (best === null || anchor.checkpoint.size > best.checkpoint.size ? anchor : best), null);
  const against = newest === null ? 'a checkpoint signed by the trusted key' : `checkpoint ${newest.checkpoint.size}, signed by key ${newest.key_id}`;
  checks.push(first(`${distinct.length === 1 ? 'That block is' : 'Those blocks are'} in the history of ${against} (the tab's trusted checkpoint, advanced only through a verified consistency proof)`, block_outcomes.map((outcome) => outcome.failure)));
  return { checks, anchor: newest };
}

function counted(count: number, noun: string): string {
  return `${formatCount(count)} ${noun}${count === 1 ? '' : 's'}`;
}

/** A check that passed unless one of `failures` is set; its detail is the first failure. */
function first(label: string, failures: (string | null)[]): Check {
  const failure = failures.find((item) => item !== null);
  return failure === undefined || failure === null ? { label, ok: true } : { label, ok: false, detail: failure };
}

async function verifyOne(api: Api, tx: Transaction, headers: Map<number, Promise<Block>>): Promise<TransactionOutcome> {
  const failure = await failureOf(() => api.client.verifyTransaction(tx));
  if (tx.status === 'pending' || tx.block_number === null || tx.block_hash === null) return { failure, block: null, proof_failure: null };
  const block = { number: tx.block_number, hash: tx.block_hash };
  const proof_failure = await failureOf(async () => {
    const [proof, header] = await Promise.all([api.client.getProof(tx.tx_hash), blockHeader(api, headers, tx.block_number as number)]);
    if (proof.block_hash !== tx.block_hash) throw new Error(`the proof names block hash ${proof.block_hash}, the transaction ${String(tx.block_hash)}`);
    await api.client.verifyInclusion(proof, { header });
  });
  return { failure, block, proof_failure };
}

/** A block, fetched once for all the page's transactions in it (again only if fetching it failed). */
function blockHeader(api: Api, cache: Map<number, Promise<Block>>, number: number): Promise<Block> {
  let block = cache.get(number);
  if (block === undefined) {
    block = api.client.getBlock(number);
    block.catch(() => cache.delete(number));
    cache.set(number, block);
  }
  return block;
}

async function verifyBlockInHistory(api: Api, block: { number: number; hash: string }): Promise<BlockOutcome> {
  try {
    return { anchor: await api.trust.verifyBlock(block.number, block.hash), failure: null };
  } catch (error) {
    return { anchor: null, failure: describeFailure(error) };
  }
}

async function failureOf(run: () => Promise<unknown>): Promise<string | null> {
  try {
    await run();
    return null;
  } catch (error) {
    return describeFailure(error);
  }
}
