/** What the benchmark asks of a running ledger outside the measured load: tokens, batch loading, stats, metrics. */
import { SignJWT } from 'jose';
import { BenchError, sleep } from './processes.js';

export const ADMIN_SCOPE = 'ledger:admin';
const TOKEN_TTL_S = 4 * 3600;
const LOAD_RETRIES_MAX = 5;
/** A loader paced by the backlog bound (503 pending_backlog_full) waits as long as sealing takes: 2,000 refusals of one batch, at least 2,000 s. */
const BACKLOG_RETRIES_MAX = 2_000;
const SEALED_WAIT_MS_MAX = 600_000;

export type TransferBody = { from: string; to: string; amount: string; token: string; type: 'transfer' | 'mint' };

export function signToken(secret: string, sub: string, admin = false): Promise<string> {
  return new SignJWT({ scope: admin ? ADMIN_SCOPE : 'openid' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + TOKEN_TTL_S)
    .sign(new TextEncoder().encode(secret));
}

type BatchAnswer = { accepted: number; rejected: number; results: Array<{ index: number; status: number; tx_hash?: string; error?: { code: string } }> };

export async function submitBatch(url: string, token: string, items: readonly TransferBody[]): Promise<BatchAnswer> {
  for (let attempt = 1; ; attempt += 1) {
    const response = await fetch(`${url}/api/transactions/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ transactions: items }),
    });
    // 503 service_overloaded: the write queue is full; 503 pending_backlog_full: PENDING_MAX transactions
    // wait to be sealed. Back off as Retry-After says; the second paces a long load by the sealer.
    if (response.status === 503 && attempt < (await retriesFor(response))) {
      await sleep(Number(response.headers.get('retry-after') ?? '1') * 1000);
      continue;
    }
    if (response.status !== 200) throw new BenchError(`batch answered ${response.status}: ${(await response.text()).slice(0, 500)}`);
    const answer = (await response.json()) as BatchAnswer;
    if (answer.rejected > 0) {
      const first = answer.results.find((result) => result.status !== 202);
      throw new BenchError(`the ledger refused ${answer.rejected} items of a loading batch, e.g. ${JSON.stringify(first)}`);
    }
    return answer;
  }
}

/**
 * Submits `count` transactions made by `make(index)` in batches of `batch_size`, `concurrency` batches
 * at a time, and returns every `sample_every`-th transaction hash.
 */
export async function loadTransactions(
  url: string, token: string, count: number, make: (index: number) => TransferBody,
  options: { batch_size: number; concurrency: number; sample_every: number },
): Promise<{ accepted: number; sampled_hashes: string[] }> {
  let next = 0;
  let accepted = 0;
  const sampled_hashes: string[] = [];
  const worker = async () => {
    while (next < count) {
      const start = next;
      const end = Math.min(count, start + options.batch_size);
      next = end;
      const items = Array.from({ length: end - start }, (_, offset) => make(start + offset));
      const answer = await submitBatch(url, token, items);
      accepted += answer.accepted;
      answer.results.forEach((result, offset) => {
        if ((start + offset) % options.sample_every === 0 && result.tx_hash !== undefined) sampled_hashes.push(result.tx_hash);
      });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return { accepted, sampled_hashes };
}

async function retriesFor(response: Response): Promise<number> {
  const problem = (await response.clone().json().catch(() => null)) as { code?: string } | null;
  return problem?.code === 'pending_backlog_full' ? BACKLOG_RETRIES_MAX : LOAD_RETRIES_MAX;
}

export type Stats = { total_transactions: number; total_users: number; latest_block_number: number };

export async function getJson<T>(url: string, token: string): Promise<T> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (!response.ok) throw new BenchError(`GET ${url} answered ${response.status}: ${(await response.text()).slice(0, 500)}`);
  return (await response.json()) as T;
}

/** Sums the samples of `name` in a Prometheus exposition, optionally only those with `labels`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)/.exec(line);
    if (match === null || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',');
    if (wanted.every((pair) => present.includes(pair))) sum += Number(match[3]);
  }
  return sum;
}

export async function scrapeMetrics(url: string, metrics_token: string): Promise<string> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${metrics_token}` } });
  if (!response.ok) throw new BenchError(`/metrics answered ${response.status}`);
  return response.text();
}

/**
 * Waits until the ledger's sealed transactions (`/api/stats`' `total_transactions`, the newest block's
 * running total) reach `total`, polling every 100 ms, then scrapes /metrics once and returns the scrape.
 * For measuring the sealer: every /metrics scrape counts the pending rows (`tabula_pending_transactions`),
 * and scraping ten times a second while 200,000 were pending took a fifth or more of the PostgreSQL
 * sealer's rate (docs/performance.md, "The sealer's measurement, without its own load").
 */
export async function waitUntilSealedTotal(url: string, token: string, metrics_token: string, total: number): Promise<string> {
  const deadline = Date.now() + SEALED_WAIT_MS_MAX;
  while ((await getJson<Stats>(`${url}/api/stats`, token)).total_transactions < total) {
    if (Date.now() > deadline) throw new BenchError(`the ledger did not reach ${total} sealed transactions within 10 minutes`);
    await sleep(100);
  }
  return scrapeMetrics(url, metrics_token);
}

/** Waits until nothing is waiting for a commit and nothing stored is pending; returns the last scrape. */
export async function waitUntilSealed(url: string, metrics_token: string): Promise<string> {
  const deadline = Date.now() + SEALED_WAIT_MS_MAX;
  for (;;) {
    const text = await scrapeMetrics(url, metrics_token);
    if (metricValue(text, 'tabula_pending_transactions') === 0 && metricValue(text, 'tabula_submission_queue_depth') === 0) return text;
    if (Date.now() > deadline) throw new BenchError('pending transactions were not sealed within 10 minutes');
    await sleep(100);
  }
}

export type HeapPeaks = { heap_used_bytes: number; heap_total_bytes: number; external_bytes: number };
/** How often sampleHeapPeaks scrapes: often enough to see a load's peaks, rarely enough to cost nothing. */
const HEAP_SCRAPE_INTERVAL_MS = 2000;

/** Scrapes a service's V8 heap (used, committed) and external memory until stopped; returns their peaks. */
export function sampleHeapPeaks(url: string, metrics_token: string): { stop(): Promise<HeapPeaks> } {
  const peaks: HeapPeaks = { heap_used_bytes: 0, heap_total_bytes: 0, external_bytes: 0 };
  let sampling = true;
  const scrapes = (async () => {
    while (sampling) {
      const text = await scrapeMetrics(url, metrics_token).catch(() => '');
      peaks.heap_used_bytes = Math.max(peaks.heap_used_bytes, metricValue(text, 'nodejs_heap_size_used_bytes'));
      peaks.heap_total_bytes = Math.max(peaks.heap_total_bytes, metricValue(text, 'nodejs_heap_size_total_bytes'));
      peaks.external_bytes = Math.max(peaks.external_bytes, metricValue(text, 'nodejs_external_memory_bytes'));
      await sleep(HEAP_SCRAPE_INTERVAL_MS);
    }
  })();
  return {
    async stop() {
      sampling = false;
      await scrapes;
      return peaks;
    },
  };
}
