/**
 * Witnessing from the command line: `tabula checkpoint` fetches, verifies and stores the latest signed
 * checkpoint; `tabula verify --since <file>` proves that the service's history extends the stored one
 * (one consistency proof, O(log n)); `tabula witness --peers <url>…` compares several instances' checkpoints.
 */
import fs from 'node:fs';
import { ForkDetectedError, LightClient, TabulaClient, VerificationError, type SignedCheckpoint, type TrustOptions } from '@tabula/client';
import { base64Decode } from '../domain/shared/checkpoint.js';
import type { Context } from './commands.js';
import { UsageError } from './cli-config.js';
import { print, type Output } from './output.js';
import { reportFailure } from './verify-command.js';

/** A stored checkpoint: the key it was verified with, and the checkpoint. */
export type StoredCheckpoint = { public_key: string; checkpoint: SignedCheckpoint };

export type ClientMaker = (url: string | null, trust?: TrustOptions) => TabulaClient;

function stringValue(context: Context, name: string): string | undefined {
  const value = context.values[name];
  return typeof value === 'string' ? value : undefined;
}

const ED25519_PUBLIC_KEY_BYTES = 32;

/** `--public-key`, checked as the light client checks it, before anything is sent: a key of another form is bad usage (exit 2). */
function publicKeyOption(context: Context): string | undefined {
  const value = stringValue(context, 'public-key');
  if (value !== undefined && base64Decode(value.trim())?.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new UsageError('--public-key must be the base64 of a raw 32-byte Ed25519 public key (as GET /.well-known/tabula-checkpoint-key gives it)');
  }
  return value?.trim();
}

/** The key to trust: --public-key, else the service's own (trust on first use: compare its key_id out of band). */
async function trustedKey(context: Context, client: TabulaClient): Promise<string> {
  return publicKeyOption(context) ?? (await client.getCheckpointKey()).public_key;
}

function readStored(file: string): StoredCheckpoint {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`cannot read the stored checkpoint ${file}: ${(error as Error).message}`);
  }
  const stored = parsed as Partial<StoredCheckpoint>;
  if (typeof stored?.public_key !== 'string' || typeof stored.checkpoint?.note !== 'string') throw new UsageError(`${file} is not a checkpoint stored by \`tabula checkpoint\``);
  return stored as StoredCheckpoint;
}

function describe(checkpoint: SignedCheckpoint): string {
  return `checkpoint ${checkpoint.size} (block ${checkpoint.block_number}, history root ${checkpoint.history_root}), signed by key ${checkpoint.key_id}`;
}

function forkFailure(out: Output, error: ForkDetectedError): number {
  out.stderr.write(`trusted:   ${JSON.stringify(error.trusted)}\npresented: ${JSON.stringify(error.presented)}\n`);
  return reportFailure(out, 'verification', { code: 'fork_detected', block_number: error.presented.block_number, tx_hash: null, reason: error.message });
}

async function guarded(out: Output, work: () => Promise<void>): Promise<number> {
  try {
    await work();
    return 0;
  } catch (error) {
    if (error instanceof ForkDetectedError) return forkFailure(out, error);
    if (error instanceof VerificationError) {
      return reportFailure(out, 'verification', { code: error.code, block_number: error.block_number, tx_hash: error.tx_hash, reason: error.message });
    }
    throw error;
  }
}

/** `tabula checkpoint [--out <file>] [--public-key <base64>]`. */
export function checkpointCommand(context: Context, make: ClientMaker): Promise<number> {
  return guarded(context.out, async () => {
    const public_key = await trustedKey(context, context.client);
    const checkpoint = await make(null, { publicKey: public_key }).advanceCheckpoint();
    const file = stringValue(context, 'out');
    if (file !== undefined) fs.writeFileSync(file, `${JSON.stringify({ public_key, checkpoint } satisfies StoredCheckpoint, null, 2)}\n`);
    print(context.out, checkpoint, () => [`verified ${describe(checkpoint)}`, ...(file === undefined ? [] : [`stored in ${file}`])].join('\n') + '\n');
  });
}

/** `tabula verify --since <file>`: the service's latest checkpoint must extend the stored one. */
export function verifySinceCommand(context: Context, make: ClientMaker, file: string): Promise<number> {
  const stored = readStored(file);
  return guarded(context.out, async () => {
    const client = make(null, { publicKey: publicKeyOption(context) ?? stored.public_key, checkpoint: stored.checkpoint });
    const latest = await client.advanceCheckpoint();
    const result = { verified: true, from: stored.checkpoint.size, to: latest.size, history_root: latest.history_root, key_id: latest.key_id };
    print(context.out, result, () => `verified: history ${latest.size} extends the stored history ${stored.checkpoint.size} (${describe(latest)})\n`);
  });
}

/**
 * `tabula witness --peers <url>…`: every peer's checkpoint must be signed by the same key and, taken
 * two by two, the larger must extend the smaller (a consistency proof from the larger's server).
 */
export function witnessCommand(context: Context, make: ClientMaker, peers: readonly string[]): Promise<number> {
  if (peers.length < 2) throw new UsageError('witness needs at least two --peers');
  return guarded(context.out, async () => {
    const public_key = publicKeyOption(context) ?? (await make(peers[0] as string).getCheckpointKey()).public_key;
    const seen: Array<{ url: string; checkpoint: SignedCheckpoint }> = [];
    for (const url of peers) seen.push({ url, checkpoint: await make(url, { publicKey: public_key }).advanceCheckpoint() });
    const ordered = [...seen].sort((a, b) => a.checkpoint.size - b.checkpoint.size);
    for (let index = 1; index < ordered.length; index += 1) {
      const older = ordered[index - 1] as (typeof ordered)[number];
      const newer = ordered[index] as (typeof ordered)[number];
      const light = new LightClient({
        checkpoint: async () => newer.checkpoint,
        consistency: (from, to) => make(newer.url).getConsistencyProof(from, to),
        blockProof: (number, size) => make(newer.url).getBlockProof(number, size),
      }, { publicKey: public_key, checkpoint: older.checkpoint });
      await light.advance();
    }
    const result = { witnessed: true, peers: seen.map(({ url, checkpoint }) => ({ url, size: checkpoint.size, history_root: checkpoint.history_root, key_id: checkpoint.key_id })) };
    print(context.out, result, () => `${seen.map(({ url, checkpoint }) => `${url}: ${describe(checkpoint)}`).join('\n')}\nconsistent: every peer's history extends the smaller ones\n`);
  });
}
