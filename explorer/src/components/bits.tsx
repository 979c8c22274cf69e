/** Small pieces every page uses: links to records, hashes, times, status badges and notices. */
import type { ComponentChildren } from 'preact';
import { formatAge, formatUtc, shortHash } from '../format';
import { href } from '../routes';

/** A full hash, wrapped where needed, in a monospace face. */
export function Hash({ value }: { value: string }) {
  return <code class="hash">{value}</code>;
}

/**
 * A link to a transaction. `short` shows `0x1a2b3c…9f8e`, named "Transaction 0x1a2b3c…9f8e" (the
 * visible text stays in the name, for speech input) with the full hash as its title.
 */
export function TransactionLink({ hash, short = false }: { hash: string; short?: boolean }) {
  if (!short) return <a class="mono" href={href({ name: 'transaction', hash })}>{hash}</a>;
  return (
    <a class="mono" href={href({ name: 'transaction', hash })} title={hash}>
      <span class="visually-hidden">Transaction </span>{shortHash(hash)}
    </a>
  );
}

export function BlockLink({ number, children }: { number: number; children?: ComponentChildren }) {
  return <a href={href({ name: 'block', number })}>{children ?? `#${number}`}</a>;
}

export function AccountLink({ user }: { user: string }) {
  return <a class="account" href={href({ name: 'account', user })}>{user}</a>;
}

/** A Unix-seconds time: UTC for reading, with its age. */
export function Time({ seconds, now_ms }: { seconds: number; now_ms?: number }) {
  return (
    <time dateTime={new Date(seconds * 1000).toISOString()} title={formatUtc(seconds)}>
      {formatUtc(seconds)} <span class="muted">({formatAge(seconds, now_ms)})</span>
    </time>
  );
}

export function Age({ seconds, now_ms }: { seconds: number; now_ms?: number }) {
  return (
    <time dateTime={new Date(seconds * 1000).toISOString()} title={formatUtc(seconds)}>
      {formatAge(seconds, now_ms)}
    </time>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status}</span>;
}

/** A message box: `alert` for failures (announced at once), `status` for news (announced politely). */
export function Notice({ kind, children, title }: { kind: 'error' | 'info' | 'success' | 'warning'; title?: string; children: ComponentChildren }) {
  return (
    <div class={`notice notice-${kind}`} role={kind === 'error' || kind === 'warning' ? 'alert' : 'status'}>
      {title === undefined ? null : <strong class="notice-title">{title}</strong>}
      <div>{children}</div>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" role="status">Loading {what}…</p>;
}

/** A definition list of a record's fields. */
export function Fields({ rows }: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="fields">
      {rows.map(([label, value]) => (
        <div class="field" key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
