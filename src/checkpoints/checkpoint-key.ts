/** The checkpoint signing key: CHECKPOINT_SIGNING_KEY (base64 32-byte seed or PKCS#8 PEM), or in development one generated into the data folder. */
import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { runHashSteps } from '../domain/shared/hash-steps.js';
import { sha256 } from '../domain/hashing.js';
import { keyIdSteps } from '../domain/shared/checkpoint.js';

export const DEV_CHECKPOINT_KEY_FILE = 'dev-checkpoint-key';
/** DER prefix of a PKCS#8 Ed25519 private key, followed by the 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export type CheckpointKey = { private_key: KeyObject; public_key: Uint8Array; key_id: string };

/** Reads a key's text; throws a plain Error naming what is wrong (config.ts turns it into a ConfigError). */
export function parseCheckpointKey(text: string): CheckpointKey {
  const trimmed = text.trim();
  let private_key: KeyObject;
  if (trimmed.startsWith('-----BEGIN')) {
    private_key = createPrivateKey({ key: trimmed, format: 'pem' });
  } else {
    const seed = Buffer.from(trimmed, 'base64');
    if (seed.length !== 32 || seed.toString('base64') !== trimmed) throw new Error('must be the base64 of a 32-byte Ed25519 seed or a PKCS#8 PEM key');
    private_key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  }
  if (private_key.asymmetricKeyType !== 'ed25519') throw new Error(`must be an Ed25519 key, not ${private_key.asymmetricKeyType ?? 'unknown'}`);
  const jwk = createPublicKey(private_key).export({ format: 'jwk' });
  const public_key = new Uint8Array(Buffer.from(jwk.x as string, 'base64url'));
  return { private_key, public_key, key_id: runHashSteps(keyIdSteps(public_key), sha256) };
}

export function devCheckpointKeyPath(data_dir: string): string {
  return path.join(data_dir, DEV_CHECKPOINT_KEY_FILE);
}

/** The development key: created once (mode 0600) beside the development JWT secret. */
export function readOrCreateDevCheckpointKey(data_dir: string): CheckpointKey {
  const file = devCheckpointKeyPath(data_dir);
  fs.mkdirSync(data_dir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return parseCheckpointKey(fs.readFileSync(file, 'utf8'));
}
