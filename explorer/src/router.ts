/** The current route, following the address bar's fragment. */
import { useEffect, useState } from 'preact/hooks';
import { href, parseRoute, type Route } from './routes';

export function navigate(route: Route): void {
  window.location.hash = href(route);
}

/** The current route, following the address bar. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}
