/**
 * `useLive`: loads something through the API and, when asked, keeps it fresh by polling. Stale data
 * stays on screen while a refresh fails; polling waits out a 429's Retry-After.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { TabulaClient } from '@tabula/client';
import { useApi } from './api';

export type Live<T> = {
  data: T | null;
  /** The last failure, in words; cleared by the next success. */
  error: string | null;
  loading: boolean;
  /** Loads again now. */
  refresh(): void;
};

export type LiveOptions<T> = {
  /** Milliseconds until the next load after `data`; null stops polling. */
  poll_ms?: (data: T | null) => number | null;
};

export function useLive<T>(load: (client: TabulaClient, signal: AbortSignal) => Promise<T>, deps: unknown[], options: LiveOptions<T> = {}): Live<T> {
  const api = useApi();
  const [state, setState] = useState<{ data: T | null; error: string | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [generation, setGeneration] = useState(0);
  const poll = useRef(options.poll_ms);
  poll.current = options.poll_ms;

  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let data: T | null = null;
    setState({ data: null, error: null, loading: true });
    const run = async (): Promise<void> => {
      try {
        data = await load(api.client, controller.signal);
        if (controller.signal.aborted) return;
        setState({ data, error: null, loading: false });
      } catch (error) {
        if (controller.signal.aborted) return;
        const message = api.describe(error);
        setState((previous) => ({ data: previous.data, error: message, loading: false }));
      }
      const next_ms = poll.current?.(data) ?? null;
      if (next_ms === null || controller.signal.aborted) return;
      const wait_ms = Math.max(next_ms, api.pausedUntilMs() - Date.now());
      timer = setTimeout(() => void run(), wait_ms);
    };
    void run();
    return () => {
      controller.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [api, generation, ...deps]);

  return { ...state, refresh: () => setGeneration((value) => value + 1) };
}
