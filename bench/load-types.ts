/** What the benchmark sends the load generator, and what it answers. */
export type PooledRequest = {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Each send carries a new random `Idempotency-Key` (a UUID), as a client that may retry sends it. */
  new_idempotency_key?: boolean;
};

export type LoadSpec = {
  url: string;
  connections: number;
  duration_s: number;
  warmup_s: number;
  requests: PooledRequest[];
  /** Parse each response as a batch answer and add up its `accepted` and `rejected`. */
  count_batch_items: boolean;
  /** Requests per second over all connections (an offered load); unset: each connection sends as fast as it is answered. */
  rate_per_s?: number;
};

export type LoadResult = {
  requests: number;
  duration_s: number;
  requests_per_s: number;
  latency_ms: { p50: number; p90: number; p99: number; mean: number; max: number };
  status_counts: Record<string, number>;
  /** Responses that were not 2xx, plus connection errors and timeouts. */
  errors: number;
  batch_items: { accepted: number; rejected: number } | null;
  /** Submissions the server acknowledged (202s, or accepted batch items), warm-up included: all must be durable. */
  acknowledged: number;
};

