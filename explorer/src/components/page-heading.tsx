/** A page's h1, which names the page in the window title. `App` moves focus to it when the page changes. */
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';

export function PageHeading({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Tabula explorer`;
  }, [title]);
  return <h1 tabIndex={-1}>{children ?? title}</h1>;
}
