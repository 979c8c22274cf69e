/** Constant-time checks of shared secrets presented by callers: `X-API-Key` and the metrics token. */
import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant-time check of an `X-API-Key` against the configured keys. */
export function createApiKeyCheck(keys: readonly string[]): (presented: string | undefined) => boolean {
  const digests = keys.map(digest);
  return (presented) => {
    if (presented === undefined) return false;
    const candidate = digest(presented);
    let matched = false;
    for (const known of digests) matched = timingSafeEqual(known, candidate) || matched;
    return matched;
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
