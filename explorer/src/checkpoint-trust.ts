/**
 * The tab's trusted signed checkpoint: the service's checkpoint key (fetched from
 * /.well-known/tabula-checkpoint-key on first use and pinned for the tab) and the last checkpoint the
 * SDK's light client verified, both in sessionStorage so every page of the tab checks against them.
 * The checkpoint only ever advances through the light client's verified consistency proof.
 */
import { LightClient, type SignedCheckpoint, type TabulaClient, type TrustAnchor } from '@tabula/client';
import type { TokenStorage } from './session';

export const CHECKPOINT_KEY_STORAGE_KEY = 'tabula.explorer.checkpoint-key';
export const CHECKPOINT_STORAGE_KEY = 'tabula.explorer.checkpoint';
const STORED_LENGTH_MAX = 16 * 1024;

/** The key the tab trusts: base64 of the raw 32-byte Ed25519 key, and its id (the fingerprint shown). */
export type PinnedKey = { public_key: string; key_id: string };

export type CheckpointTrust = {
  /**
   * Proves that block `number` with hash `block_hash` is in the history of the trusted signed
   * checkpoint (advancing it first, through a verified consistency proof, when the block is newer).
   * Throws the SDK's VerificationError or ForkDetectedError with the reason otherwise.
   */
  verifyBlock(number: number, block_hash: string): Promise<TrustAnchor>;
};

export function createCheckpointTrust(client: TabulaClient, storage: TokenStorage): CheckpointTrust {
  let light: Promise<LightClient> | null = null;
  const lightClient = (): Promise<LightClient> => {
    light ??= makeLightClient(client, storage).catch((error: unknown) => {
      light = null; // a failed fetch of the key is tried again on the next page
      throw error;
    });
    return light;
  };
  return { verifyBlock: async (number, block_hash) => (await lightClient()).verifyBlockHash(number, block_hash) };
}

async function makeLightClient(client: TabulaClient, storage: TokenStorage): Promise<LightClient> {
  const key = await pinnedKey(client, storage);
  const light = new LightClient({
    checkpoint: (size) => client.getCheckpoint(size),
    consistency: (from, to) => client.getConsistencyProof(from, to),
    blockProof: (number, size) => client.getBlockProof(number, size),
  }, { publicKey: key.public_key, storage: checkpointStorage(storage) });
  if ((await light.keyId()) !== key.key_id) throw new Error(`the checkpoint key's id is not ${key.key_id}: the service's key does not match its own fingerprint`);
  return light;
}

/** The key pinned in this tab, or the service's (trust on first use), pinned from now on. */
async function pinnedKey(client: TabulaClient, storage: TokenStorage): Promise<PinnedKey> {
  const stored = readJson(storage, CHECKPOINT_KEY_STORAGE_KEY) as Partial<PinnedKey> | null;
  if (typeof stored?.public_key === 'string' && typeof stored.key_id === 'string') return { public_key: stored.public_key, key_id: stored.key_id };
  const served = await client.getCheckpointKey();
  if (served.algorithm !== 'Ed25519' || typeof served.public_key !== 'string' || typeof served.key_id !== 'string') {
    throw new Error('the service does not publish an Ed25519 checkpoint key');
  }
  const key = { public_key: served.public_key, key_id: served.key_id };
  storage.setItem(CHECKPOINT_KEY_STORAGE_KEY, JSON.stringify(key));
  return key;
}

function checkpointStorage(storage: TokenStorage) {
  return {
    load: (): SignedCheckpoint | null => {
      const stored = readJson(storage, CHECKPOINT_STORAGE_KEY) as Partial<SignedCheckpoint> | null;
      return typeof stored?.note === 'string' && typeof stored.size === 'number' && typeof stored.history_root === 'string' ? stored as SignedCheckpoint : null;
    },
    save: (checkpoint: SignedCheckpoint): void => storage.setItem(CHECKPOINT_STORAGE_KEY, JSON.stringify(checkpoint)),
  };
}

function readJson(storage: TokenStorage, key: string): unknown {
  const text = storage.getItem(key);
  if (text === null || text.length > STORED_LENGTH_MAX) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** "checkpoint N, signed by key K": what a verification was checked against, in words. */
export function describeAnchor(anchor: TrustAnchor): string {
  return `checkpoint ${anchor.checkpoint.size}, signed by key ${anchor.key_id}`;
}
