/**
 * Fills the file system that holds `file` (a test's own small tmpfs) until a write fails with ENOSPC,
 * in chunks small enough to leave no room for even a page of a database.
 */
import fs from 'node:fs';

const CHUNK_BYTES = 16 * 1024;

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
