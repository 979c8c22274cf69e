/** The transfer form and the swap form side by side: two tabs, each a page of its own (a link, so each can be bookmarked). */
import { href } from '../routes';

export function TradeTabs({ current }: { current: 'transfer' | 'swap' }) {
  return (
    <nav class="tabs" aria-label="Transfer or swap">
      <a href={href({ name: 'transfer' })} aria-current={current === 'transfer' ? 'page' : undefined}>Transfer</a>
      <a href={href({ name: 'swap' })} aria-current={current === 'swap' ? 'page' : undefined}>Swap</a>
    </nav>
  );
}
