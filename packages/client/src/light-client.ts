/**
 * The light client: keeps the last signed checkpoint it verified (in memory or a storage adapter),
 * advances it only through a verified consistency proof, and checks blocks against its history root
 * with an inclusion proof: a constant number of requests and O(log n) hashes, whatever the ledger's size.
 */
import { base64Decode, checkpointFieldsMismatch, keyIdSteps, parseCheckpointNote } from '../../../src/domain/shared/checkpoint.js';
import { runHashStepsAsync } from '../../../src/domain/shared/hash-steps.js';
import { hexToBytes, isHash } from '../../../src/domain/shared/hex.js';
import { verifyConsistencySteps } from '../../../src/domain/shared/history-tree.js';
import { rootFromInclusionProofSteps } from '../../../src/domain/shared/merkle.js';
import { ForkDetectedError, ResponseFormatError, VerificationError, type SignedCheckpoint } from './errors.js';
import { verifyEd25519 } from './signature.js';
import { sha256 } from './verification.js';

/** Where the trusted checkpoint is kept between runs (e.g. a file, localStorage, sessionStorage). */
export type CheckpointStorage = {
  load(): SignedCheckpoint | null | Promise<SignedCheckpoint | null>;
  save(checkpoint: SignedCheckpoint): void | Promise<void>;
};

export type TrustOptions = {
  /** The service's checkpoint key: base64 of the raw 32-byte Ed25519 public key (`/.well-known/tabula-checkpoint-key`, obtained out of band). */
  publicKey: string;
  /** A checkpoint trusted from the start (e.g. one a witness published); else the first verified one is trusted. */
  checkpoint?: SignedCheckpoint;
  /** Keeps the trusted checkpoint; default: in memory. */
  storage?: CheckpointStorage;
};

/** The requests the light client makes, bound to one client's transport. */
export type HistoryFetcher = {
  checkpoint(size?: number): Promise<SignedCheckpoint>;
  consistency(from: number, to: number): Promise<{ from: number; to: number; proof: string[] }>;
  blockProof(number: number, size: number): Promise<{ block_number: number; block_hash: string; size: number; leaf_index: number; audit_path: string[] }>;
};

/** What a verification was checked against: shown as "verified against checkpoint N, signed by key K". */
export type TrustAnchor = { checkpoint: SignedCheckpoint; key_id: string };

function memoryStorage(): CheckpointStorage {
  let kept: SignedCheckpoint | null = null;
  return { load: () => kept, save: (checkpoint) => { kept = checkpoint; } };
}

function hashList(values: unknown, what: string): Uint8Array[] {
  if (!Array.isArray(values) || values.length > 128 || !values.every((value) => typeof value === 'string' && isHash(value))) {
    throw new ResponseFormatError(`${what} is not a list of hashes`);
  }
  return values.map((value) => hexToBytes(value as string));
}

export class LightClient {
  private readonly public_key: Uint8Array;
  private readonly storage: CheckpointStorage;
  private key_id: string | null = null;
  private initial: SignedCheckpoint | undefined;

  constructor(private readonly fetcher: HistoryFetcher, trust: TrustOptions) {
    const key = base64Decode(trust.publicKey);
    if (key === null || key.length !== 32) throw new RangeError('trust.publicKey must be the base64 of a raw 32-byte Ed25519 public key');
    this.public_key = key;
    this.storage = trust.storage ?? memoryStorage();
    this.initial = trust.checkpoint;
  }

  /** The key id of the trusted key (first 8 bytes of its SHA-256, hex). */
  async keyId(): Promise<string> {
    this.key_id ??= await runHashStepsAsync(keyIdSteps(this.public_key), sha256);
    return this.key_id;
  }

  /** The checkpoint trusted now, or null before the first. */
  async trusted(): Promise<SignedCheckpoint | null> {
    if (this.initial !== undefined) {
      const initial = this.initial;
      this.initial = undefined;
      const stored = await this.storage.load();
      if (stored === null || stored.size < initial.size) {
        await this.verifySignature(initial);
        await this.storage.save(initial);
      }
    }
    return this.storage.load();
  }

  /** Throws unless the checkpoint's note is signed by the trusted key and its fields say what the note says. */
  async verifySignature(checkpoint: SignedCheckpoint): Promise<void> {
    const where = { block_number: typeof checkpoint?.block_number === 'number' ? checkpoint.block_number : null };
    if (typeof checkpoint?.note !== 'string' || typeof checkpoint.signature !== 'string') {
      throw new VerificationError('checkpoint_signature_invalid', 'the checkpoint is not signed', where);
    }
    if (checkpoint.key_id !== (await this.keyId())) {
      throw new VerificationError('checkpoint_signature_invalid', `the checkpoint is signed by key ${String(checkpoint.key_id)}, not the trusted key ${await this.keyId()}`, where);
    }
    const signature = base64Decode(checkpoint.signature);
    const valid = signature !== null && await verifyEd25519(this.public_key, new TextEncoder().encode(checkpoint.note), signature);
    if (!valid) throw new VerificationError('checkpoint_signature_invalid', 'the checkpoint\'s signature does not verify with the trusted key', where);
    const mismatch = checkpointFieldsMismatch(checkpoint);
    if (mismatch !== null) throw new VerificationError('checkpoint_signature_invalid', mismatch, where);
  }

  /**
   * Fetches the latest checkpoint, verifies its signature and that it extends the trusted one (a
   * consistency proof), and trusts it. A smaller one is stale; a different root of the same size, or
   * a proof that does not verify, is a fork.
   */
  async advance(): Promise<SignedCheckpoint> {
    const trusted = await this.trusted();
    const latest = await this.fetcher.checkpoint();
    await this.verifySignature(latest);
    if (trusted === null) {
      await this.storage.save(latest);
      return latest;
    }
    if (parseCheckpointNote(latest.note)?.origin !== parseCheckpointNote(trusted.note)?.origin) {
      throw new ForkDetectedError(trusted, latest, 'the checkpoint names another ledger (origin line)');
    }
    if (latest.size < trusted.size) {
      throw new VerificationError('checkpoint_stale', `the service's latest checkpoint (size ${latest.size}) is older than the trusted one (size ${trusted.size})`, { block_number: latest.block_number });
    }
    if (latest.size === trusted.size) {
      if (latest.history_root !== trusted.history_root) throw new ForkDetectedError(trusted, latest, 'two different history roots for the same size');
      return trusted;
    }
    const answer = await this.fetcher.consistency(trusted.size, latest.size);
    const proof = hashList(answer?.proof, 'the consistency proof');
    const consistent = await runHashStepsAsync(
      verifyConsistencySteps(trusted.size, latest.size, hexToBytes(trusted.history_root), hexToBytes(latest.history_root), proof), sha256,
    );
    if (!consistent) throw new ForkDetectedError(trusted, latest, `history ${latest.size} does not extend history ${trusted.size}`);
    await this.storage.save(latest);
    return latest;
  }

  /**
   * Verifies that block `number` with hash `block_hash` is in the trusted history (advancing first
   * when the block is newer than it): one inclusion proof against the signed history root.
   */
  async verifyBlockHash(number: number, block_hash: string): Promise<TrustAnchor> {
    let checkpoint = await this.trusted();
    if (checkpoint === null || number >= checkpoint.size) checkpoint = await this.advance();
    if (number >= checkpoint.size) {
      throw new VerificationError('history_proof_invalid', `block ${number} is not in the latest signed checkpoint (size ${checkpoint.size})`, { block_number: number });
    }
    const proof = await this.fetcher.blockProof(number, checkpoint.size);
    const path = hashList(proof?.audit_path, 'the block\'s history proof');
    const root = await runHashStepsAsync(rootFromInclusionProofSteps(hexToBytes(block_hash), number, checkpoint.size, path), sha256);
    if (root === null || `0x${[...root].map((byte) => byte.toString(16).padStart(2, '0')).join('')}` !== checkpoint.history_root) {
      throw new VerificationError('history_proof_invalid', `block ${number} (${block_hash}) is not in the history signed at size ${checkpoint.size}`, { block_number: number });
    }
    return { checkpoint, key_id: await this.keyId() };
  }
}
