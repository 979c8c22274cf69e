/**
 * `useLive`: loads something through the API and keeps it fresh: from the tab's event stream when it
 * is live (a relevant event loads it again), by polling when it is not (see refresher.ts). Stale
 * data stays on screen while a refresh fails; a 429's Retry-After is waited out. Also the context
 * that hands the views the tab's one stream, and the hooks that read its mode and keep ages current.
 */
import { createContext } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { TabulaClient } from '@tabula/client';
import { useApi } from './api';
import type { EventStream, LedgerEvent, StreamMode } from './event-stream';
import { Refresher } from './refresher';

export type Live<T> = {
  data: T | null;
  /** The last failure, in words; cleared by the next success. */
  error: string | null;
  loading: boolean;
  /** Loads again soon. */
  refresh(): void;
};

export type LiveOptions<T> = {
  /** Milliseconds between polls while the event stream is not live; null: `data` is final (no more loads). */
  poll_ms?: (data: T | null) => number | null;
  /** Whether an event from the stream may change `data` (then it is loaded again). */
  refresh_on?: (event: LedgerEvent, data: T | null) => boolean;
};

/** The tab's event stream (null before sign-in, or where there is none, e.g. in tests). */
export const EventStreamContext = createContext<EventStream | null>(null);

export function useLive<T>(load: (client: TabulaClient, signal: AbortSignal) => Promise<T>, deps: unknown[], options: LiveOptions<T> = {}): Live<T> {
  const api = useApi();
  const stream = useContext(EventStreamContext);
  const [state, setState] = useState<{ data: T | null; error: string | null; loading: boolean }>({ data: null, error: null, loading: true });
  const latest_options = useRef(options);
  latest_options.current = options;
  const refresher = useRef<Refresher<T> | null>(null);

  useEffect(() => {
    setState({ data: null, error: null, loading: true });
    const current = new Refresher<T>({
      load: (signal) => load(api.client, signal),
      report: (outcome) => {
        if ('data' in outcome) {
          setState({ data: outcome.data, error: null, loading: false });
          return;
        }
        const message = api.describe(outcome.error);
        setState((previous) => ({ data: previous.data, error: message, loading: false }));
      },
      poll_ms: (data) => latest_options.current.poll_ms?.(data) ?? null,
      relevant: (event, data) => latest_options.current.refresh_on?.(event, data) ?? false,
      stream,
      paused_until_ms: api.pausedUntilMs,
    });
    refresher.current = current;
    current.start();
    return () => current.stop();
  }, [api, stream, ...deps]);

  return { ...state, refresh: () => refresher.current?.refresh() };
}

/** The stream's mode as it changes (`idle` without a stream). */
export function useStreamMode(): StreamMode {
  const stream = useContext(EventStreamContext);
  const [mode, setMode] = useState<StreamMode>(() => stream?.mode() ?? 'idle');
  useEffect(() => {
    if (stream === null) return;
    setMode(stream.mode());
    return stream.watchMode(setMode);
  }, [stream]);
  return mode;
}

/** Now, in milliseconds, updated every `interval_ms`: ages ("12 s ago") stay true between loads. */
export function useNow(interval_ms = 1000): number {
  const [now_ms, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), interval_ms);
    return () => clearInterval(timer);
  }, [interval_ms]);
  return now_ms;
}
