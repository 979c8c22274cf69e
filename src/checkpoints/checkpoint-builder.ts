/**
 * Builds and signs checkpoints: the note of a history size (origin `tabula/<genesis hash>`, size, base64
 * root, a `block` line, then the lines of any extension providers), signed with Ed25519. Everything in
 * a note comes from the stored chain, so instances sharing a database and a key sign identical notes.
 */
import { sign } from 'node:crypto';
import { base64Encode, blockExtension, checkpointNoteText, checkpointOrigin, CHECKPOINT_SIGNATURE_ALGORITHM, type SignedCheckpoint } from '../domain/shared/checkpoint.js';
import { hexToBytes } from '../domain/shared/hex.js';
import type { HistoryService } from '../service/history-service.js';
import type { LedgerStore } from '../service/ledger-store.js';
import type { CheckpointKey } from './checkpoint-key.js';

/**
 * Adds extension lines to the note of a history size (e.g. `balances <base64 root>`). Its lines are
 * signed with the rest of the note; it must answer the same lines for the same size on every instance.
 */
export type CheckpointExtensionProvider = (size: number) => Promise<string[]>;

export type CheckpointPublicKey = { algorithm: typeof CHECKPOINT_SIGNATURE_ALGORITHM; public_key: string; key_id: string };

export class CheckpointBuilder {
  constructor(
    private readonly store: LedgerStore,
    private readonly history: HistoryService,
    private readonly key: CheckpointKey,
    private readonly extensions: readonly CheckpointExtensionProvider[] = [],
  ) {}

  publicKey(): CheckpointPublicKey {
    return { algorithm: CHECKPOINT_SIGNATURE_ALGORITHM, public_key: base64Encode(this.key.public_key), key_id: this.key.key_id };
  }

  /** The signed checkpoint of `size` blocks (null: the latest). */
  async checkpoint(size: number | null): Promise<SignedCheckpoint> {
    const head = await this.history.head(size);
    const genesis = await this.store.getBlock(0);
    if (genesis === null) throw new Error('the genesis block is missing');
    const extra = (await Promise.all(this.extensions.map((provider) => provider(head.size)))).flat();
    const note = checkpointNoteText({
      origin: checkpointOrigin(genesis.hash),
      size: head.size,
      root: hexToBytes(head.history_root),
      extensions: [blockExtension(head.block.number, head.block.hash, head.block.timestamp), ...extra],
    });
    const signature = sign(null, Buffer.from(note, 'utf8'), this.key.private_key);
    return {
      size: head.size,
      history_root: head.history_root,
      block_number: head.block.number,
      block_hash: head.block.hash,
      timestamp: head.block.timestamp,
      note,
      signature: signature.toString('base64'),
      key_id: this.key.key_id,
    };
  }
}
