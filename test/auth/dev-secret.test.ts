import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { devSecretPath, readOrCreateDevSecret } from '../../src/auth/dev-secret.js';

describe('the development secret', () => {
  const dirs: string[] = [];
  const folder = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-dev-secret-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => { for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true }); });

  it('is made once, 64 hex digits, readable only by its owner, and read back the same', () => {
    const dir = folder();
    const secret = readOrCreateDevSecret(dir);
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(fs.statSync(devSecretPath(dir)).mode & 0o777).toBe(0o600);
    expect(readOrCreateDevSecret(dir)).toBe(secret);
  });

  it('refuses a file whose secret is too short to sign with, naming the file and what to do', () => {
    const dir = folder();
    fs.writeFileSync(devSecretPath(dir), 'short\n', { mode: 0o600 });
    expect(() => readOrCreateDevSecret(dir)).toThrow(ConfigError);
    expect(() => readOrCreateDevSecret(dir)).toThrow(/holds 5 bytes where at least 32 are needed: delete the file/);
    fs.writeFileSync(devSecretPath(dir), '', { mode: 0o600 });
    expect(() => readOrCreateDevSecret(dir)).toThrow(/JWT_SECRET: unset/);
  });
});
