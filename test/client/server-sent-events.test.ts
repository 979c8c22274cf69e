/**
 * The SDK's Server-Sent Events parser against the WHATWG rules: line endings of every kind (also split
 * between chunks), multi-line data, comments, `retry:`, the persisting last event id, and its bound.
 */
import { describe, expect, it } from 'vitest';
import { MESSAGE_CHARACTERS_MAX, SseParser, type SseChunk } from '../../packages/client/src/server-sent-events.js';

function feed(chunks: string[]): SseChunk {
  const parser = new SseParser();
  const all: SseChunk = { messages: [], retry_ms: null };
  for (const chunk of chunks) {
    const result = parser.push(chunk);
    all.messages.push(...result.messages);
    if (result.retry_ms !== null) all.retry_ms = result.retry_ms;
  }
  return all;
}

describe('SseParser', () => {
  it('dispatches on a blank line, joins data lines with newlines, and skips comments', () => {
    const parsed = feed(['retry: 2000\n\n: heartbeat\n\nid: evt_1\nevent: block.sealed\ndata: {"a":\ndata:1}\n\n']);
    expect(parsed.retry_ms).toBe(2000);
    expect(parsed.messages).toEqual([{ id: 'evt_1', event: 'block.sealed', data: '{"a":\n1}' }]);
  });

  it('reads CRLF, CR and LF line endings, also when a chunk ends between CR and LF', () => {
    const text = 'id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\rid: 3\ndata: c\n\n';
    const whole = feed([text]).messages;
    expect(whole.map((message) => [message.id, message.data])).toEqual([['1', 'a'], ['2', 'b'], ['3', 'c']]);
    for (let split = 1; split < text.length; split += 1) {
      expect(feed([text.slice(0, split), text.slice(split)]).messages, `split at ${split}`).toEqual(whole);
    }
    expect(feed(text.split('')).messages).toEqual(whole);
  });

  it('keeps the last id for later messages, defaults the type, and ignores a message without data', () => {
    const parsed = feed(['id: 7\nevent: x\n\ndata: one\n\nid\ndata:two\n\n']);
    expect(parsed.messages).toEqual([{ id: '7', event: 'message', data: 'one' }, { id: '', event: 'message', data: 'two' }]);
  });

  it('takes retry only when it is all digits, and only one leading space off a value', () => {
    expect(feed(['retry: 2s\n\n']).retry_ms).toBeNull();
    expect(feed(['data:  two spaces\n\n']).messages[0]?.data).toBe(' two spaces');
  });

  it('refuses a message over its bound instead of buffering it', () => {
    const parser = new SseParser();
    const line = `data: ${'x'.repeat(1024 * 1024)}\n`;
    expect(() => {
      for (let index = 0; index * 1024 * 1024 <= MESSAGE_CHARACTERS_MAX; index += 1) parser.push(line);
    }).toThrow(/exceeds/);
    expect(() => new SseParser().push('x'.repeat(MESSAGE_CHARACTERS_MAX + 1))).toThrow(/exceeds/);
  });
});
