/**
 * The explorer: sign-in until there is a token, then the page of the current route. A 401 from any
 * call signs out with the service's reason; a 429 shows a banner until its Retry-After has passed.
 * Live views share the tab's one event stream (event-stream.ts), handed down by context.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiContext, createApi, loadExplorerConfig, type ExplorerConfig } from './api';
import { EventStream } from './event-stream';
import { EventStreamContext } from './live';
import { Notice } from './components/bits';
import { Layout } from './components/layout';
import { formatUtc } from './format';
import { AccountPage } from './pages/account';
import { BlockPage } from './pages/block';
import { BlocksPage } from './pages/blocks';
import { HomePage } from './pages/home';
import { NotFoundPage } from './pages/not-found';
import { SignInPage } from './pages/sign-in';
import { TransactionPage } from './pages/transaction';
import { SwapPage } from './pages/swap';
import { TransferPage } from './pages/transfer';
import { useRoute } from './router';
import { href, type Route } from './routes';
import { clearSession, isExpired, loadSession, saveSession, type Session } from './session';
import { sseSource } from './sse-source';

type RateLimit = { until_ms: number; message: string };

export function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null>(() => loadSession(window.sessionStorage));
  const [sign_in_message, setSignInMessage] = useState<string | null>(null);
  const [config, setConfig] = useState<ExplorerConfig | null>(null);
  const [config_error, setConfigError] = useState<string | null>(null);
  const [rate_limit, setRateLimit] = useState<RateLimit | null>(null);

  useEffect(() => {
    loadExplorerConfig().then(setConfig, (error: unknown) => setConfigError(error instanceof Error ? error.message : String(error)));
  }, []);

  const signOut = (message: string | null) => {
    clearSession(window.sessionStorage);
    setSession(null);
    setSignInMessage(message);
  };
  const signIn = (next: Session) => {
    saveSession(window.sessionStorage, next);
    setSignInMessage(null);
    setRateLimit(null);
    setSession(next);
  };

  // A token that expires while the page is open leads back to sign-in, with the reason.
  useEffect(() => {
    if (session === null || session.expires_at_s === null) return;
    const check = () => {
      if (isExpired(session)) signOut(`Your token expired at ${formatUtc(session.expires_at_s ?? 0)}. Sign in again.`);
    };
    check();
    const timer = setInterval(check, 1000);
    return () => clearInterval(timer);
  }, [session]);

  const api = useMemo(() => {
    if (session === null || config === null) return null;
    return createApi(session, config, {
      onUnauthorized: (message) => signOut(message),
      onRateLimited: (retry_after_ms, message) => setRateLimit({ until_ms: Date.now() + retry_after_ms, message }),
    });
  }, [session, config]);

  // The tab's one event stream, for every live view: it opens when the first one needs it, rests
  // while the tab is hidden, and closes on sign-out (a new session gets a new stream).
  const stream = useMemo(() => {
    if (api === null) return null;
    return new EventStream({
      source: sseSource({ base_url: window.location.origin, token: api.session.token }),
      onError: (error) => void api.describe(error),
    });
  }, [api]);
  useEffect(() => {
    if (stream === null) return;
    const onVisibility = () => stream.setVisible(document.visibilityState !== 'hidden');
    onVisibility();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      document.removeEventListener('visibilitychange', onVisibility);
      stream.close();
    };
  }, [stream]);

  // After the first page, a new page moves focus to its heading, so keyboard and screen-reader users
  // start at the new content (the first page leaves focus alone: the skip link is the first stop).
  const first_page = useRef(true);
  const page_key = `${session === null ? 'signed-out' : session.sub}:${href(route)}`;
  useLayoutEffect(() => {
    if (first_page.current) {
      first_page.current = false;
      return;
    }
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [page_key]);

  useEffect(() => {
    if (rate_limit === null) return;
    const timer = setTimeout(() => setRateLimit(null), Math.max(0, rate_limit.until_ms - Date.now()));
    return () => clearTimeout(timer);
  }, [rate_limit]);

  if (config === null) {
    return (
      <Layout route={null} session={null}>
        {config_error === null ? <p role="status">Loading the explorer…</p> : <Notice kind="error" title="The explorer cannot start">{config_error}</Notice>}
      </Layout>
    );
  }
  if (session === null || api === null) {
    return (
      <Layout route={null} session={null}>
        <SignInPage config={config} message={sign_in_message} onSignIn={signIn} />
      </Layout>
    );
  }
  const banner = rate_limit === null ? null : (
    <div class="banner">
      <Notice kind="warning" title="Rate limited (429)">{rate_limit.message}</Notice>
    </div>
  );
  return (
    <ApiContext.Provider value={api}>
      <EventStreamContext.Provider value={stream}>
        <Layout route={route} session={session} onSignOut={() => signOut('You signed out.')} banner={banner}>
          <Page route={route} />
        </Layout>
      </EventStreamContext.Provider>
    </ApiContext.Provider>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.name) {
    case 'home': return <HomePage />;
    case 'blocks': return <BlocksPage from={route.from} limit={route.limit} />;
    case 'block': return <BlockPage key={route.number} number={route.number} />;
    case 'transaction': return <TransactionPage key={route.hash} hash={route.hash} />;
    case 'account': return <AccountPage key={route.user} user={route.user} />;
    case 'transfer': return <TransferPage />;
    case 'swap': return <SwapPage />;
    case 'not_found': return <NotFoundPage path={route.path} />;
  }
}
