/**
 * `events({ verify: true })`: each event is checked against the chain before the caller sees it. A
 * transaction event's hash is recomputed from its record; a `transaction.confirmed`/`.failed` record
 * must be where its inclusion proof puts it (block number, block hash, position), and the proof must
 * lead to the recomputed header; a `block.sealed` header must hash to its `hash`, be the header the
 * proofs of its block were checked against, and link to the previous `block.sealed` seen.
 */
import { checkHeaderShape, checkLink, headerHashCheckSteps, type CheckResult } from '../../../src/domain/shared/chain-verification.js';
import { runHashStepsAsync } from '../../../src/domain/shared/hash-steps.js';
import { VerificationError } from './errors.js';
import type { BlockHeader, InclusionProof, TabulaEvent, Transaction, TransactionEvent } from './types.js';
import { sha256, verifyTransaction } from './verification.js';

/** What the verifier asks of the service (the client's own methods). */
export type ProofSource = {
  getProof(hash: string, options: { signal?: AbortSignal }): Promise<InclusionProof>;
  verifyInclusion(proof: InclusionProof, options: { header?: BlockHeader; signal?: AbortSignal }): Promise<{ header: BlockHeader }>;
};

/** Verified headers kept to check later events of the same blocks without fetching them again. */
const HEADERS_KEPT = 16;

const OUTCOME_STATUS = { 'transaction.accepted': 'pending', 'transaction.confirmed': 'confirmed', 'transaction.failed': 'failed' } as const;

export class EventVerifier {
  private readonly source: ProofSource;
  private readonly headers = new Map<number, BlockHeader>();
  private last_sealed: BlockHeader | null = null;

  constructor(source: ProofSource) {
    this.source = source;
  }

  /** Resolves when `event` verifies; throws a `VerificationError` naming the first mismatch. */
  async check(event: TabulaEvent, signal: AbortSignal | undefined): Promise<void> {
    if (event.type === 'block.sealed') {
      await this.checkSealed(event.data);
      return;
    }
    const tx = event.data;
    if (tx.status !== OUTCOME_STATUS[event.type]) mismatch(`a ${event.type} event carries a record with status ${String(tx.status)}`, tx);
    await verifyTransaction(tx);
    if (event.type !== 'transaction.accepted') await this.checkOutcome(event, signal);
  }

  private async checkOutcome(event: TransactionEvent, signal: AbortSignal | undefined): Promise<void> {
    const tx = event.data;
    const signal_option = signal === undefined ? {} : { signal };
    const proof = await this.source.getProof(tx.tx_hash, signal_option);
    if (proof.block_number !== tx.block_number || proof.block_hash !== tx.block_hash || proof.leaf_index !== tx.position) {
      mismatch(`the event puts the transaction at position ${String(tx.position)} of block ${String(tx.block_number)} (${String(tx.block_hash)}), its inclusion proof at position ${proof.leaf_index} of block ${proof.block_number} (${proof.block_hash})`, tx);
    }
    const known = this.headers.get(proof.block_number);
    const { header } = await this.source.verifyInclusion(proof, { ...signal_option, ...(known === undefined ? {} : { header: known }) });
    this.remember(header);
  }

  private async checkSealed(header: BlockHeader): Promise<void> {
    const where = { block_number: typeof header.number === 'number' ? header.number : null };
    raise(checkHeaderShape(header), where);
    raise(await runHashStepsAsync(headerHashCheckSteps(header), sha256), where);
    const known = this.headers.get(header.number);
    if (known !== undefined && known.hash !== header.hash) {
      throw new VerificationError('record_mismatch', `the block.sealed header (${header.hash}) is not the one its transactions were proven against (${known.hash})`, where);
    }
    if (this.last_sealed !== null && header.number === this.last_sealed.number + 1) raise(checkLink(header, this.last_sealed), where);
    this.last_sealed = header;
    this.remember(header);
  }

  private remember(header: BlockHeader): void {
    this.headers.delete(header.number);
    this.headers.set(header.number, header);
    if (this.headers.size > HEADERS_KEPT) this.headers.delete(this.headers.keys().next().value as number);
  }
}

function raise(result: CheckResult, where: { block_number: number | null }): void {
  if (!result.ok) throw new VerificationError(result.code, result.reason, where);
}

function mismatch(reason: string, tx: Transaction): never {
  throw new VerificationError('record_mismatch', reason, { tx_hash: tx.tx_hash, block_number: tx.block_number });
}
