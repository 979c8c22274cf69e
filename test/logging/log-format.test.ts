import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { chooseLogFormat, loggerFormatOptions } from '../../src/logging/log-format.js';

describe('log format', () => {
  it('pretty-prints on a terminal outside production when LOG_FORMAT is unset, JSON lines otherwise', () => {
    expect(chooseLogFormat('auto', { stdout_terminal: true, production: false })).toBe('pretty');
    expect(chooseLogFormat('auto', { stdout_terminal: false, production: false })).toBe('json');
    expect(chooseLogFormat('auto', { stdout_terminal: true, production: true })).toBe('json');
    expect(chooseLogFormat('auto', { stdout_terminal: false, production: true })).toBe('json');
  });

  it('does what LOG_FORMAT says whatever the surroundings', () => {
    for (const stdout_terminal of [true, false]) {
      for (const production of [true, false]) {
        expect(chooseLogFormat('json', { stdout_terminal, production })).toBe('json');
        expect(chooseLogFormat('pretty', { stdout_terminal, production })).toBe('pretty');
      }
    }
  });

  it('is read from LOG_FORMAT, with the terminal told by the entry point, and refuses anything else', () => {
    expect(loadConfig({}).log_format).toBe('json');
    expect(loadConfig({}, { stdout_terminal: true }).log_format).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'json' }, { stdout_terminal: true }).log_format).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).log_format).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'auto' }, { stdout_terminal: true }).log_format).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'production', CHECKPOINT_SIGNING_KEY: Buffer.alloc(32, 7).toString('base64'), JWT_SECRET: 'x'.repeat(32) }, { stdout_terminal: true }).log_format).toBe('json');
    for (const bad of ['text', 'JSON', 'pino-pretty']) expect(() => loadConfig({ LOG_FORMAT: bad }), bad).toThrowError(/^LOG_FORMAT: must be one of json, pretty, auto/);
  });

  it('sends pretty lines through the pino-pretty transport and JSON lines straight out', () => {
    expect(loggerFormatOptions('json')).toEqual({});
    expect(loggerFormatOptions('pretty').transport).toMatchObject({ target: 'pino-pretty' });
  });
});
