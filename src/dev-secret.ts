/** The development signing secret: created once in the data folder when no identity provider is set. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const DEV_SECRET_FILE = 'dev-jwt-secret';
export const DEV_ISSUER = 'tabula-dev';

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
  return fs.readFileSync(file, 'utf8').trim();
}
