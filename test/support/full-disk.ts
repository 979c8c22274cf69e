/**
 * A full disk for the fault tests: a small tmpfs of a test's own, and a file that fills it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

const CHUNK_BYTES = 16 * 1024;

/** Fills the file system that holds `file` until a write fails with ENOSPC, in chunks small enough to leave no room for even a page of a database. */

export function fillUntilFull(file: string): void {
  const handle = fs.openSync(file, 'w');
  try {
    for (;;) fs.writeSync(handle, Buffer.alloc(CHUNK_BYTES, 1));
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error;
  } finally {
    fs.closeSync(handle);
  }
}

/**
 * A small tmpfs for the tests of the calling `describe` block: mounted before them (CI runs as root),
 * unmounted and removed after them whatever happens. Returns its mount point. Hooks the block registers
 * after calling this (closing a service on it, say) run before the unmount: vitest runs `afterAll` hooks
 * in reverse order.
 */
export function tmpfsForSuite(size: string, prefix: string): string {
  const mount_point = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let mounted = false;
  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error('this test mounts a tmpfs: run it as root (CI does)');
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mount_point]);
    mounted = true;
  });
  afterAll(() => {
    if (mounted) execFileSync('umount', ['-l', mount_point]);
    fs.rmSync(mount_point, { recursive: true, force: true });
  });
  return mount_point;
}
