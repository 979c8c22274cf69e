import type { Readable } from 'node:stream';

/**
 * Reads a process's log as it is written: `on_line` gets each whole JSON line (other lines, such as a
 * pretty log or npm's banner, are skipped) and `on_chunk` every chunk as it came, for error messages.
 */
export function readJsonLogLines<T>(stream: Readable, on_line: (line: T) => void, on_chunk: (chunk: string) => void = () => undefined): void {
  let pending = '';
  stream.setEncoding('utf8').on('data', (chunk: string) => {
    on_chunk(chunk);
    pending += chunk;
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) {
      if (part.startsWith('{')) on_line(JSON.parse(part) as T);
    }
  });
}
