/** Display helpers: times, hashes and amounts as people read them. Amounts stay the exact text the API sent. */

/** `2026-11-22 00:18:03 UTC` from Unix seconds. */
export function formatUtc(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago` (or `in 4 s` for a clock that runs behind). */
export function formatAge(seconds: number, now_ms: number = Date.now()): string {
  const delta_s = Math.round(now_ms / 1000 - seconds);
  const magnitude = Math.abs(delta_s);
  const text = magnitude < 60 ? `${magnitude} s`
    : magnitude < 3600 ? `${Math.floor(magnitude / 60)} min`
    : magnitude < 86_400 ? `${Math.floor(magnitude / 3600)} h`
    : `${Math.floor(magnitude / 86_400)} d`;
  return delta_s >= 0 ? `${text} ago` : `in ${text}`;
}

/** `0x1a2b3c…9f8e` for tight places; the full hash stays in the page for copying and screen readers. */
export function shortHash(hash: string, keep = 6): string {
  return hash.length <= 2 + keep * 2 ? hash : `${hash.slice(0, 2 + keep)}…${hash.slice(-keep)}`;
}

/** Groups the integer digits of an exact decimal text: `1234567.5` → `1,234,567.5`. */
export function groupDigits(decimal_text: string): string {
  const match = /^(-?)(\d+)(\.\d+)?$/.exec(decimal_text);
  if (match === null) return decimal_text;
  const [, sign = '', whole = '', fraction = ''] = match;
  return `${sign}${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction}`;
}

export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/** `45 s`, `3 min 20 s`, `23 h 34 min`: a wait, for people. */
export function formatDuration(ms: number): string {
  const total_s = Math.max(0, Math.ceil(ms / 1000));
  if (total_s < 60) return `${total_s} s`;
  if (total_s < 3600) return `${Math.floor(total_s / 60)} min${total_s % 60 === 0 ? '' : ` ${total_s % 60} s`}`;
  const minutes = Math.floor((total_s % 3600) / 60);
  return `${Math.floor(total_s / 3600)} h${minutes === 0 ? '' : ` ${minutes} min`}`;
}
