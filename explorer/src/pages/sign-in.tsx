/**
 * Sign-in: paste a JWT from your identity provider. It is checked against the service before it is
 * kept (in sessionStorage only). On a development server, a button mints a development token.
 */
import { useState } from 'preact/hooks';
import { RateLimitedError, TabulaClient, UnauthorizedError } from '@tabula/client';
import { describeFailure, type ExplorerConfig } from '../api';
import { Notice } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { isExpired, sessionFromToken, TokenFormatError, type Session } from '../session';
import { formatDuration, formatUtc } from '../format';

type Props = { config: ExplorerConfig; message: string | null; onSignIn(session: Session): void };

export function SignInPage({ config, message, onSignIn }: Props) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const tryToken = async (raw: string) => {
    setBusy(true);
    setProblem(null);
    try {
      const session = sessionFromToken(raw);
      if (isExpired(session)) throw new TokenFormatError(`This token expired at ${formatUtc(session.expires_at_s ?? 0)}. Get a new one.`);
      // One call proves the service accepts the token before the page relies on it.
      await new TabulaClient({ baseUrl: window.location.origin, jwt: session.token, retry: { attempts: 1 } }).getStats();
      onSignIn(session);
    } catch (error) {
      setProblem(signInProblem(error));
      setBusy(false);
    }
  };

  const submit = (event: Event) => {
    event.preventDefault();
    void tryToken(token);
  };

  return (
    <section class="sign-in">
      <PageHeading title="Sign in" />
      <p>
        The explorer reads the ledger through the API, which needs a token (a JWT) from your identity provider. The token
        stays in this tab only (sessionStorage) and is sent to this service and nowhere else.
      </p>
      {message === null ? null : <Notice kind="warning" title="Signed out">{message}</Notice>}
      <form onSubmit={submit} class="card form" noValidate>
        <label for="token-input">Your token (JWT)</label>
        <textarea
          id="token-input"
          name="token"
          rows={4}
          value={token}
          onInput={(event) => setToken((event.currentTarget as HTMLTextAreaElement).value)}
          spellcheck={false}
          autoComplete="off"
          aria-describedby={problem === null ? 'token-help' : 'token-help token-problem'}
          aria-invalid={problem !== null}
          required
        />
        <p id="token-help" class="help">Paste the token itself, or the whole <code>Bearer …</code> header value.</p>
        {problem === null ? null : <p id="token-problem" class="field-problem" role="alert">{problem}</p>}
        <button type="submit" class="primary" disabled={busy}>{busy ? 'Checking…' : 'Sign in'}</button>
      </form>
      {config.dev_tokens ? <DevTokenForm busy={busy} onToken={(value) => void tryToken(value)} onProblem={setProblem} /> : null}
    </section>
  );
}

function DevTokenForm({ busy, onToken, onProblem }: { busy: boolean; onToken(token: string): void; onProblem(problem: string): void }) {
  const [user, setUser] = useState('alice');
  const [admin, setAdmin] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      const response = await fetch('/dev/token', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ sub: user.trim(), admin }),
      });
      const body = (await response.json()) as { token?: string; detail?: string };
      if (!response.ok || typeof body.token !== 'string') throw new Error(body.detail ?? `the service answered ${response.status}`);
      onToken(body.token);
    } catch (error) {
      onProblem(`No development token: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  return (
    <form class="card form dev-token" onSubmit={(event) => void submit(event)} aria-labelledby="dev-token-heading">
      <h2 id="dev-token-heading">Development server</h2>
      <p class="help">
        This service runs with its development secret (no identity provider), so it can mint a token for any user. A
        production service has no such button.
      </p>
      <label for="dev-user">User id</label>
      <input id="dev-user" name="user" value={user} onInput={(event) => setUser((event.currentTarget as HTMLInputElement).value)} autoComplete="off" spellcheck={false} />
      <div class="checkbox">
        <input id="dev-admin" type="checkbox" checked={admin} onChange={(event) => setAdmin((event.currentTarget as HTMLInputElement).checked)} />
        <label for="dev-admin">Admin (may mint and burn)</label>
      </div>
      <button type="submit" disabled={busy}>Mint a development token and sign in</button>
    </form>
  );
}

function signInProblem(error: unknown): string {
  if (error instanceof TokenFormatError) return error.message;
  if (error instanceof UnauthorizedError) return `The service refused this token: ${error.problem.detail}.`;
  if (error instanceof RateLimitedError) {
    const retry_after_ms = error.retry_after_ms ?? 5000;
    return `Too many requests (429): wait ${formatDuration(retry_after_ms)} (Retry-After: ${Math.ceil(retry_after_ms / 1000)} s) and try again.`;
  }
  return `Could not sign in: ${describeFailure(error)}`;
}
