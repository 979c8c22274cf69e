/** Waits, through the API, until every acknowledged transaction is sealed (confirmed or failed). */
import { expect } from 'vitest';

const POLL_INTERVAL_MS = 100;

export async function waitUntilAllSealed(url: string, token: string, hashes: Iterable<string>, timeout_ms = 30_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  for (const hash of hashes) {
    for (;;) {
      const response = await fetch(`${url}/api/transactions/${hash}`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status, hash).toBe(200);
      if (((await response.json()) as { status: string }).status !== 'pending') break;
      expect(Date.now(), `${hash} still pending after ${timeout_ms} ms`).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    }
  }
}
