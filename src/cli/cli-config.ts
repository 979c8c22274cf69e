/**
 * The CLI's configuration: flags first, then the environment (TABULA_URL, TABULA_TOKEN,
 * TABULA_API_KEY). The CLI is its own entry point, and this is the only module of it that reads
 * `process.env`; `serve` and `token` hand the same environment to the service's `loadConfig`.
 */
export type Environment = Record<string, string | undefined>;

export type ClientSettings = {
  url: string;
  token: string | undefined;
  api_key: string | undefined;
  timeout_ms: number;
};

export type GlobalFlags = {
  url?: string | undefined;
  token?: string | undefined;
  'api-key'?: string | undefined;
  'timeout-ms'?: string | undefined;
};

export const URL_DEFAULT = 'http://localhost:8080';
const TIMEOUT_MS_DEFAULT = 10_000;
const TIMEOUT_MS_MAX = 600_000;

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function readEnvironment(): Environment {
  return { ...process.env };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

export function clientSettings(flags: GlobalFlags, env: Environment): ClientSettings {
  const url = nonEmpty(flags.url) ?? nonEmpty(env.TABULA_URL) ?? URL_DEFAULT;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new UsageError(`--url / TABULA_URL must be an http(s) URL (got "${url}")`);
  }
  const timeout_text = nonEmpty(flags['timeout-ms']);
  const timeout_ms = timeout_text === undefined ? TIMEOUT_MS_DEFAULT : Number(timeout_text);
  if (!Number.isInteger(timeout_ms) || timeout_ms < 1 || timeout_ms > TIMEOUT_MS_MAX) {
    throw new UsageError(`--timeout-ms must be an integer from 1 to ${TIMEOUT_MS_MAX}`);
  }
  return {
    url,
    token: nonEmpty(flags.token) ?? nonEmpty(env.TABULA_TOKEN),
    api_key: nonEmpty(flags['api-key']) ?? nonEmpty(env.TABULA_API_KEY),
    timeout_ms,
  };
}
