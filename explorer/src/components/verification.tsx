/** The outcome of checks the browser made itself: each check, and verified only if all passed. */
import type { TrustAnchor } from '@tabula/client';

export type Check = { label: string; ok: boolean; detail?: string };

/**
 * `anchor`: the signed checkpoint the checks were made against, shown as "verified against checkpoint
 * N, signed by key K" when every check passed.
 */
export function VerificationPanel({ heading, checks, pending, anchor }: { heading: string; checks: Check[] | null; pending?: string; anchor?: TrustAnchor | null }) {
  const verified = checks !== null && checks.length > 0 && checks.every((check) => check.ok);
  return (
    <section class={`verification ${checks === null ? '' : verified ? 'verification-ok' : 'verification-bad'}`} aria-labelledby="verification-heading" data-verified={checks === null ? 'pending' : String(verified)}>
      <h2 id="verification-heading">{heading}</h2>
      {checks === null ? <p role="status" class="muted">{pending ?? 'Verifying in your browser…'}</p> : (
        <>
          <p class="verdict" role="status">
            <span aria-hidden="true" class="verdict-icon">{verified ? '✓' : '✗'}</span>{' '}
            {verified ? 'Verified in your browser' : 'NOT verified: what the server sent does not add up'}
          </p>
          {verified && anchor ? (
            <p class="anchor" data-checkpoint={String(anchor.checkpoint.size)} data-key-id={anchor.key_id}>
              Verified against checkpoint {anchor.checkpoint.size}, signed by key <code>{anchor.key_id}</code>
            </p>
          ) : null}
          <ul class="checks">
            {checks.map((check) => (
              <li key={check.label} class={check.ok ? 'check-ok' : 'check-bad'}>
                <span class="visually-hidden">{check.ok ? 'Passed: ' : 'Failed: '}</span>
                <span aria-hidden="true">{check.ok ? '✓' : '✗'}</span> {check.label}
                {check.detail === undefined ? null : <span class="check-detail"> — {check.detail}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** Runs one check: passed when `run` resolves, failed with its message when it throws. */
export async function check(label: string, run: () => Promise<unknown> | unknown): Promise<Check> {
  try {
    await run();
    return { label, ok: true };
  } catch (error) {
    return { label, ok: false, detail: error instanceof Error ? error.message : String(error) };
  }
}

export function same(label: string, actual: unknown, expected: unknown): Check {
  return actual === expected ? { label, ok: true } : { label, ok: false, detail: `${String(actual)} ≠ ${String(expected)}` };
}
