/**
 * How the service's log lines look: JSON lines (pino's own, for collectors) or pretty-printed for a human
 * at a terminal (`pino-pretty`, run by pino as a transport). The choice is made once, at start.
 */
import type { LoggerOptions } from 'pino';

/** What LOG_FORMAT may ask for; `auto` (the default, LOG_FORMAT unset) decides by where the logs go. */
export const LOG_FORMAT_SETTINGS = ['json', 'pretty', 'auto'] as const;
export type LogFormatSetting = (typeof LOG_FORMAT_SETTINGS)[number];
export type LogFormat = 'json' | 'pretty';

/** Where the service runs: whether its standard output is a terminal (told by the entry point) and in production. */
export type LogSurroundings = { stdout_terminal: boolean; production: boolean };

/** An explicit setting wins; `auto` is pretty only for a terminal outside production, JSON lines otherwise. */
export function chooseLogFormat(setting: LogFormatSetting, surroundings: LogSurroundings): LogFormat {
  if (setting !== 'auto') return setting;
  return surroundings.stdout_terminal && !surroundings.production ? 'pretty' : 'json';
}

/** pino's options for a format: pretty lines go through the `pino-pretty` transport (a worker thread) to stdout. */
export function loggerFormatOptions(format: LogFormat): Pick<LoggerOptions, 'transport'> {
  if (format === 'json') return {};
  return {
    transport: {
      target: 'pino-pretty',
      options: { destination: 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'service' },
    },
  };
}
