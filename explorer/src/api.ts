/**
 * The explorer's one way to the service: a TabulaClient from the SDK (@tabula/client) with the
 * signed-in user's token, and the rules for what a failure means to the page. The SDK does not
 * retry here: a 429 is shown with its Retry-After and pauses the page's polling instead.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { ApiError, ForkDetectedError, NetworkError, RateLimitedError, RequestTimeoutError, TabulaClient, UnauthorizedError, VerificationError } from '@tabula/client';
import { createCheckpointTrust, type CheckpointTrust } from './checkpoint-trust';
import { formatDuration } from './format';
import type { Session } from './session';

const REQUEST_TIMEOUT_MS = 10_000;
const RETRY_AFTER_MS_DEFAULT = 5_000;

export type ExplorerConfig = { native_symbol: string; dev_tokens: boolean };

export type Api = {
  client: TabulaClient;
  session: Session;
  config: ExplorerConfig;
  /** The tab's trusted signed checkpoint (kept in sessionStorage): pages prove blocks into its history. */
  trust: CheckpointTrust;
  /**
   * What the page says about a failed call. A 401 also signs the user out (with the service's reason)
   * and a 429 also pauses polling until Retry-After; both are reported to the whole page.
   */
  describe(error: unknown): string;
  /** When polling may resume after a 429 (0 when it is not paused). */
  pausedUntilMs(): number;
};

export type ApiEvents = {
  onUnauthorized(message: string): void;
  onRateLimited(retry_after_ms: number, message: string): void;
};

export function createApi(session: Session, config: ExplorerConfig, events: ApiEvents): Api {
  const client = new TabulaClient({
    baseUrl: window.location.origin,
    jwt: session.token,
    timeoutMs: REQUEST_TIMEOUT_MS,
    retry: { attempts: 1 },
  });
  let paused_until_ms = 0;
  return {
    client,
    session,
    config,
    trust: createCheckpointTrust(client, window.sessionStorage),
    pausedUntilMs: () => paused_until_ms,
    describe(error) {
      if (error instanceof UnauthorizedError) {
        const message = `The service refused your token (${error.problem.detail}). Sign in again.`;
        events.onUnauthorized(message);
        return message;
      }
      if (error instanceof RateLimitedError) {
        const retry_after_ms = error.retry_after_ms ?? RETRY_AFTER_MS_DEFAULT;
        paused_until_ms = Date.now() + retry_after_ms;
        const message = `Too many requests: the service asks to wait ${formatDuration(retry_after_ms)} (Retry-After: ${Math.ceil(retry_after_ms / 1000)} s) before trying again. The page resumes by itself.`;
        events.onRateLimited(retry_after_ms, message);
        return 'paused by the rate limit (429, see above).';
      }
      return describeFailure(error);
    },
  };
}

/** A failure in words, without side effects. */
export function describeFailure(error: unknown): string {
  if (error instanceof ApiError) return `${error.problem.detail} (${error.status} ${error.code})`;
  if (error instanceof RequestTimeoutError) return 'The service did not answer in time.';
  if (error instanceof NetworkError) return 'The service cannot be reached. Check your connection.';
  if (error instanceof VerificationError) return error.message;
  if (error instanceof ForkDetectedError) return `${error.message}; the two signed checkpoints are the evidence`;
  return error instanceof Error ? error.message : String(error);
}

export async function loadExplorerConfig(): Promise<ExplorerConfig> {
  const response = await fetch('/explorer-config.json', { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`the explorer's settings could not be loaded (${response.status})`);
  const body = (await response.json()) as Partial<ExplorerConfig>;
  return { native_symbol: typeof body.native_symbol === 'string' ? body.native_symbol : 'TAB', dev_tokens: body.dev_tokens === true };
}

export const ApiContext = createContext<Api | null>(null);

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (api === null) throw new Error('useApi outside a signed-in page');
  return api;
}
