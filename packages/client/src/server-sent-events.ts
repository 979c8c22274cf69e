/**
 * A Server-Sent Events parser (the WHATWG HTML "event stream" interpretation): lines end with CRLF,
 * LF or CR (also split across chunks), `field: value` with one optional space, `data` lines joined with
 * newlines, comments (`:`) ignored, `retry:` only when all digits, a blank line dispatches. Bounded: a
 * message over `MESSAGE_CHARACTERS_MAX` is refused rather than buffered.
 */
import { ResponseFormatError } from './errors.js';

export type SseMessage = { event: string; data: string; id: string };

/** What one chunk of the stream produced: messages in order, and the last `retry:` value seen (if any). */
export type SseChunk = { messages: SseMessage[]; retry_ms: number | null };

/** The most characters one message (its lines and data together) may take. */
export const MESSAGE_CHARACTERS_MAX = 4 * 1024 * 1024;

export class SseParser {
  private pending = '';
  private skip_line_feed = false;
  private data: string[] = [];
  private data_characters = 0;
  private event = '';
  /** The last event id buffer: it persists across messages until an `id:` field changes it. */
  private last_id = '';

  /** Parses `text` (decoded) and returns what it completed; an unfinished line waits for the next chunk. */
  push(text: string): SseChunk {
    const chunk: SseChunk = { messages: [], retry_ms: null };
    let start = 0;
    let index = 0;
    if (this.skip_line_feed && text.startsWith('\n')) {
      start = 1;
      index = 1;
    }
    this.skip_line_feed = false;
    for (; index < text.length; index += 1) {
      const char = text.charCodeAt(index);
      if (char !== 0x0a && char !== 0x0d) continue;
      const line = this.pending + text.slice(start, index);
      this.pending = '';
      if (char === 0x0d) {
        if (index + 1 === text.length) this.skip_line_feed = true;
        else if (text.charCodeAt(index + 1) === 0x0a) index += 1;
      }
      start = index + 1;
      this.line(line, chunk);
    }
    this.pending += text.slice(start);
    if (this.pending.length + this.data_characters > MESSAGE_CHARACTERS_MAX) {
      throw new ResponseFormatError(`an event stream message exceeds ${MESSAGE_CHARACTERS_MAX} characters`);
    }
    return chunk;
  }

  private line(line: string, chunk: SseChunk): void {
    if (line === '') {
      this.dispatch(chunk);
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.data_characters += value.length + 1;
      if (this.data_characters > MESSAGE_CHARACTERS_MAX) throw new ResponseFormatError(`an event stream message exceeds ${MESSAGE_CHARACTERS_MAX} characters`);
    } else if (field === 'event') {
      this.event = value;
    } else if (field === 'id') {
      if (!value.includes('\u0000')) this.last_id = value;
    } else if (field === 'retry') {
      if (/^[0-9]{1,9}$/.test(value)) chunk.retry_ms = Number(value);
    }
  }

  private dispatch(chunk: SseChunk): void {
    if (this.data.length > 0) chunk.messages.push({ event: this.event === '' ? 'message' : this.event, data: this.data.join('\n'), id: this.last_id });
    this.data = [];
    this.data_characters = 0;
    this.event = '';
  }
}
