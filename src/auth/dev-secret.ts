/** The development signing secret: created once in the data folder when no identity provider is set. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config.js';

export const DEV_SECRET_FILE = 'dev-jwt-secret';
export const DEV_ISSUER = 'tabula-dev';
/** What HS256 needs (a 256-bit key); a new secret is 64 hex digits. */
const DEV_SECRET_BYTES_MIN = 32;

export function devSecretPath(data_dir: string): string {
  return path.join(data_dir, DEV_SECRET_FILE);
}

export function readOrCreateDevSecret(data_dir: string): string {
  const file = devSecretPath(data_dir);
  fs.mkdirSync(data_dir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const secret = fs.readFileSync(file, 'utf8').trim();
  // The same floor as JWT_SECRET: a truncated or hand-edited file must not sign tokens with a weak key.
  if (Buffer.byteLength(secret, 'utf8') < DEV_SECRET_BYTES_MIN) {
    throw new ConfigError('JWT_SECRET', `unset, so the development secret in ${file} is used, but it holds ${Buffer.byteLength(secret, 'utf8')} bytes where at least ${DEV_SECRET_BYTES_MIN} are needed: delete the file to have a new one made (tokens signed with the old one stop working)`);
  }
  return secret;
}
