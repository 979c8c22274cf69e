/**
 * The frame of every page: skip link, header (brand, navigation, search, whether the page is live or
 * polling, who is signed in), main, footer.
 */
import type { ComponentChildren } from 'preact';
import type { Route } from '../routes';
import type { Session } from '../session';
import { LiveIndicator } from './live-indicator';
import { SearchBox } from './search-box';

type Props = {
  route: Route | null;
  session: Session | null;
  onSignOut?: () => void;
  banner?: ComponentChildren;
  children: ComponentChildren;
};

const NAVIGATION: { label: string; href: string; active: (route: Route) => boolean }[] = [
  { label: 'Overview', href: '#/', active: (route) => route.name === 'home' },
  { label: 'Blocks', href: '#/blocks', active: (route) => route.name === 'blocks' || route.name === 'block' },
  { label: 'Transfer', href: '#/transfer', active: (route) => route.name === 'transfer' || route.name === 'swap' },
];

export function Layout({ route, session, onSignOut, banner, children }: Props) {
  const skipToMain = (event: Event) => {
    event.preventDefault();
    document.getElementById('main')?.focus();
  };
  return (
    <>
      <a class="skip-link" href="#main" onClick={skipToMain}>Skip to content</a>
      <header class="site-header">
        <div class="site-header-inner">
          <a class="brand" href="#/">
            <span class="brand-mark" aria-hidden="true">T</span> Tabula <span class="brand-sub">explorer</span>
          </a>
          {session === null || route === null ? null : (
            <>
              <nav aria-label="Main">
                <ul>
                  {NAVIGATION.map((item) => (
                    <li key={item.href}>
                      <a href={item.href} aria-current={item.active(route) ? 'page' : undefined}>{item.label}</a>
                    </li>
                  ))}
                </ul>
              </nav>
              <SearchBox />
              <div class="who">
                <LiveIndicator />
                <span>
                  Signed in as <a class="account" href={`#/account/${encodeURIComponent(session.sub)}`}>{session.sub}</a>
                </span>
                <button type="button" class="link-button" onClick={onSignOut}>Sign out</button>
              </div>
            </>
          )}
        </div>
      </header>
      {banner}
      <main id="main" tabIndex={-1}>
        {children}
      </main>
      <footer class="site-footer">
        <p>
          Every proof and block hash on these pages is recomputed in your browser (WebCrypto SHA-256), not taken from the
          server. Amounts are shown exactly as the ledger stores them.
        </p>
      </footer>
    </>
  );
}
