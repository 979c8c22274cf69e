/**
 * The load generator: a process of its own (so it never shares an event loop with the server it
 * measures), run as `node --import tsx bench/load.ts`. For each spec it reads (one JSON line
 * on stdin) it drives autocannon with the spec's pool of requests, taken in turn across all
 * connections (a request marked so gets a new `Idempotency-Key` each time it is sent), and prints
 * one JSON result line on stdout:
 * requests per second, exact latency percentiles (from every response time, not autocannon's
 * whole-millisecond histogram), status counts, and, for batch requests, the transactions accepted.
 */
import { randomUUID } from 'node:crypto';
import readline from 'node:readline';
import autocannon from 'autocannon';
import type { LoadResult, LoadSpec, PooledRequest } from './load-types.js';

async function run(spec: LoadSpec, duration_s: number, record: boolean): Promise<LoadResult> {
  let next = 0;
  const latencies: number[] = [];
  const status_counts: Record<string, number> = {};
  const batch_items = { accepted: 0, rejected: 0 };
  const pool = spec.requests;
  const request: autocannon.Request = {
    setupRequest: (prepared) => {
      const chosen = pool[next % pool.length] as PooledRequest;
      next += 1;
      const headers = chosen.new_idempotency_key === true ? { ...chosen.headers, 'idempotency-key': randomUUID() } : chosen.headers;
      return { ...prepared, method: chosen.method, path: chosen.path, headers, body: chosen.body } as autocannon.Request;
    },
  };
  if (spec.count_batch_items) {
    request.onResponse = (status, body) => {
      if (status !== 200) return;
      const answer = JSON.parse(body) as { accepted: number; rejected: number };
      batch_items.accepted += answer.accepted;
      batch_items.rejected += answer.rejected;
    };
  }
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const rate = spec.rate_per_s === undefined ? {} : { overallRate: Math.max(1, Math.round(spec.rate_per_s)) };
    const instance = autocannon({ url: spec.url, connections: spec.connections, duration: duration_s, requests: [request], timeout: 30, ...rate }, (error, done) => {
      if (error !== null && error !== undefined) reject(error);
      else resolve(done);
    });
    instance.on('response', (_client, status_code, _bytes, response_time_ms) => {
      status_counts[status_code] = (status_counts[status_code] ?? 0) + 1;
      if (record) latencies.push(response_time_ms);
    });
  });
  const elapsed_s = Math.min((performance.now() - started) / 1000, result.duration || duration_s);
  latencies.sort((a, b) => a - b);
  const non_2xx = Object.entries(status_counts).filter(([status]) => !status.startsWith('2')).reduce((sum, [, count]) => sum + count, 0);
  return {
    requests: latencies.length,
    duration_s: elapsed_s,
    requests_per_s: latencies.length / elapsed_s,
    latency_ms: {
      p50: percentile(latencies, 0.5),
      p90: percentile(latencies, 0.9),
      p99: percentile(latencies, 0.99),
      mean: latencies.reduce((sum, value) => sum + value, 0) / Math.max(1, latencies.length),
      max: latencies[latencies.length - 1] ?? 0,
    },
    status_counts,
    errors: non_2xx + result.errors + result.timeouts,
    batch_items: spec.count_batch_items ? batch_items : null,
    acknowledged: spec.count_batch_items ? batch_items.accepted : status_counts[202] ?? 0,
  };
}

function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

async function measure(spec: LoadSpec): Promise<LoadResult> {
  const warmup = spec.warmup_s > 0 ? await run(spec, spec.warmup_s, false) : null;
  const result = await run(spec, spec.duration_s, true);
  return { ...result, acknowledged: result.acknowledged + (warmup?.acknowledged ?? 0) };
}

// One spec per line on stdin, one result per line on stdout, until stdin closes.
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  process.stdout.write(`${JSON.stringify(await measure(JSON.parse(line) as LoadSpec))}\n`);
}
