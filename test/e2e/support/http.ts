/**
 * The tests' HTTP client: global fetch with a bearer token and JSON bodies. Every answer is checked
 * to be below 500: a 5xx throws at once and is also recorded, so a suite can assert at the end that
 * none happened even where errors are caught (e.g. requests cut off by a crash).
 */
import type { BlockHeaderRecord } from '../../../src/domain/shared/chain-hashes.js';

export type ApiResponse<T = unknown> = {
  status: number;
  headers: Headers;
  /** The body as received. */
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: T;
};

export type RequestOptions = {
  method?: string;
  /** A bearer token; `null` sends no Authorization header. */
  token?: string | null;
  /** A raw Authorization header value (overrides `token`). */
  authorization?: string;
  /** A JSON body (serialized here) or, as a string, the exact body text. */
  body?: unknown;
  headers?: Record<string, string>;
  timeout_ms?: number;
};

export type ServerErrorRecord = { method: string; url: string; status: number; text: string };

const server_errors: ServerErrorRecord[] = [];

/** Every 5xx answer seen in this worker so far. */
export function serverErrors(): readonly ServerErrorRecord[] {
  return server_errors;
}

export class ServerError extends Error {
  constructor(record: ServerErrorRecord) {
    super(`${record.method} ${record.url} answered ${record.status}: ${record.text.slice(0, 500)}`);
    this.name = 'ServerError';
  }
}

export class ApiClient {
  private readonly base: () => string;
  private readonly defaults: { token?: string | null; headers?: Record<string, string> };

  /** `base` is a function so that a client follows a service across restarts (new port). */
  constructor(base: string | (() => string), defaults: { token?: string | null; headers?: Record<string, string> } = {}) {
    this.base = typeof base === 'string' ? () => base : base;
    this.defaults = defaults;
  }

  get baseUrl(): string {
    return this.base();
  }

  /** A client with other defaults (e.g. another caller's token). */
  as(token: string | null, headers: Record<string, string> = {}): ApiClient {
    return new ApiClient(this.base, { token, headers: { ...this.defaults.headers, ...headers } });
  }

  async request<T = unknown>(path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const method = options.method ?? (options.body === undefined ? 'GET' : 'POST');
    const headers: Record<string, string> = { ...this.defaults.headers, ...options.headers };
    const token = options.token === undefined ? this.defaults.token : options.token;
    if (options.authorization !== undefined) headers.authorization = options.authorization;
    else if (token !== undefined && token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const url = `${this.base()}${path}`;
    const response = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(options.timeout_ms ?? 20_000),
    });
    const text = await response.text();
    if (response.status >= 500) {
      const record = { method, url, status: response.status, text };
      server_errors.push(record);
      throw new ServerError(record);
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, text, body: parsed as T };
  }

  get<T = unknown>(path: string, options: Omit<RequestOptions, 'method' | 'body'> = {}): Promise<ApiResponse<T>> {
    return this.request<T>(path, { ...options, method: 'GET' });
  }

  post<T = unknown>(path: string, body: unknown, options: Omit<RequestOptions, 'method' | 'body'> = {}): Promise<ApiResponse<T>> {
    return this.request<T>(path, { ...options, method: 'POST', body });
  }

  /** POST /api/transactions/submit. */
  submit(body: SubmitBody, options: Omit<RequestOptions, 'method' | 'body'> = {}): Promise<ApiResponse<Receipt>> {
    return this.post<Receipt>('/api/transactions/submit', body, options);
  }

  transaction(tx_hash: string): Promise<ApiResponse<TransactionRecord>> {
    return this.get<TransactionRecord>(`/api/transactions/${tx_hash}`);
  }

  balance(user_id: string): Promise<ApiResponse<BalanceRecord>> {
    return this.get<BalanceRecord>(`/api/balance/${encodeURIComponent(user_id)}`);
  }

  block(number: number): Promise<ApiResponse<BlockRecord>> {
    return this.get<BlockRecord>(`/api/blocks/${number}`);
  }

  stats(): Promise<ApiResponse<StatsRecord>> {
    return this.get<StatsRecord>('/api/stats');
  }
}

export type SubmitBody = {
  from: string;
  to: string;
  amount: number | string;
  token: string;
  type: string;
  metadata?: Record<string, unknown>;
  /** Swaps only. */
  min_receive?: number | string;
};

export type Receipt = { tx_hash: string; status: string; timestamp: number };

export type TransactionRecord = {
  tx_hash: string;
  from: string;
  to: string;
  amount: number;
  token: string;
  type: 'transfer' | 'mint' | 'burn' | 'swap';
  metadata: Record<string, unknown>;
  /** Swaps: the minimum (exact text via rawMembers), what `to` received, the token received; null otherwise. */
  min_receive: number | null;
  amount_out: number | null;
  token_out: string | null;
  status: 'pending' | 'confirmed' | 'failed';
  timestamp: number;
  block_number: number | null;
  block_hash: string | null;
  position: number | null;
  error: string | null;
  nonce: string;
};

/** The API's block header and proof records, as the shared verifier defines them. */
export type { BlockHeaderRecord, InclusionProofRecord as ProofRecord } from '../../../src/domain/shared/chain-hashes.js';

export type BlockRecord = BlockHeaderRecord & { transactions: string[] };

export type BlockPageRecord = { blocks: BlockHeaderRecord[]; total: number; limit: number; offset: number };

export type BalanceRecord = { user_id: string; native: number; usdg: number; total_usd: number };

export type StatsRecord = {
  total_transactions: number;
  total_users: number;
  native_price: number;
  trading_volume_24h: number;
  active_users_24h: number;
  latest_block_number: number;
};


export type ProblemRecord = { type: string; title: string; status: number; detail: string; code: string; errors?: Array<{ field: string; message: string }> };

export const HASH_PATTERN = /^0x[0-9a-f]{64}$/;

/** Runs `task` over `items` with at most `limit` in flight; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await task(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls the transactions until none is pending; returns their final records by hash. While some are
 * pending it asks for one of them at a time, and reads the rest again only once that one is sealed
 * (blocks take many at once), so waiting costs a few requests per block rather than one per hash
 * every 50 ms, which would spend a low rate limit.
 */
export async function waitUntilSealed(client: ApiClient, tx_hashes: readonly string[], timeout_ms = 20_000): Promise<Map<string, TransactionRecord>> {
  const deadline = Date.now() + timeout_ms;
  const sealed = new Map<string, TransactionRecord>();
  let waiting = [...new Set(tx_hashes)];
  const read = async (tx_hash: string): Promise<TransactionRecord> => {
    const response = await client.transaction(tx_hash);
    if (response.status !== 200) throw new Error(`GET /api/transactions/${tx_hash} answered ${response.status}: ${response.text}`);
    return response.body;
  };
  for (;;) {
    const still: string[] = [];
    await mapLimit(waiting, 16, async (tx_hash) => {
      const record = await read(tx_hash);
      if (record.status === 'pending') still.push(tx_hash);
      else sealed.set(tx_hash, record);
    });
    waiting = still;
    if (waiting.length === 0) return sealed;
    const [probe] = waiting as [string];
    while ((await read(probe)).status === 'pending') {
      if (Date.now() > deadline) throw new Error(`${waiting.length} transactions still pending after ${timeout_ms} ms, e.g. ${probe}`);
      await sleep(50);
    }
  }
}

/**
 * The raw JSON text of each member of a top-level JSON object, so that numbers can be read exactly
 * (JSON.parse would round `90071992.54740993` to the nearest double).
 */
export function rawMembers(text: string): Map<string, string> {
  const members = new Map<string, string>();
  let index = skipSpace(text, 0);
  if (text[index] !== '{') throw new SyntaxError('not a JSON object');
  index = skipSpace(text, index + 1);
  if (text[index] === '}') return members;
  for (;;) {
    const key_end = scanValue(text, index);
    const key = JSON.parse(text.slice(index, key_end)) as string;
    index = skipSpace(text, key_end);
    if (text[index] !== ':') throw new SyntaxError(`expected ':' at ${index}`);
    const value_start = skipSpace(text, index + 1);
    const value_end = scanValue(text, value_start);
    members.set(key, text.slice(value_start, value_end));
    index = skipSpace(text, value_end);
    if (text[index] === '}') return members;
    if (text[index] !== ',') throw new SyntaxError(`expected ',' at ${index}`);
    index = skipSpace(text, index + 1);
  }
}

function skipSpace(text: string, index: number): number {
  while (index < text.length && ' \t\n\r'.includes(text[index] as string)) index += 1;
  return index;
}

/** The end (exclusive) of the JSON value starting at `start`. */
function scanValue(text: string, start: number): number {
  const first = text[start];
  if (first === '"') {
    let index = start + 1;
    while (index < text.length) {
      const char = text[index];
      if (char === '\\') index += 2;
      else if (char === '"') return index + 1;
      else index += 1;
    }
    throw new SyntaxError('unterminated string');
  }
  if (first === '{' || first === '[') {
    let depth = 0;
    let index = start;
    while (index < text.length) {
      const char = text[index];
      if (char === '"') {
        index = scanValue(text, index);
        continue;
      }
      if (char === '{' || char === '[') depth += 1;
      if (char === '}' || char === ']') {
        depth -= 1;
        if (depth === 0) return index + 1;
      }
      index += 1;
    }
    throw new SyntaxError('unterminated container');
  }
  let index = start;
  while (index < text.length && !',}] \t\n\r'.includes(text[index] as string)) index += 1;
  if (index === start) throw new SyntaxError(`no value at ${start}`);
  return index;
}

/** Exact decimal text (as a JSON number is written) → integer base units; throws if it does not fit. */
export function decimalToUnits(text: string, decimals: number): bigint {
  const match = /^(-?)([0-9]+)(?:\.([0-9]+))?$/.exec(text);
  if (match === null) throw new Error(`"${text}" is not a plain decimal number`);
  const fraction = match[3] ?? '';
  if (fraction.length > decimals) throw new Error(`"${text}" has more than ${decimals} decimals`);
  const units = BigInt((match[2] ?? '0') + fraction.padEnd(decimals, '0'));
  return match[1] === '-' ? -units : units;
}

/** Integer base units → the shortest exact decimal text. */
export function unitsToDecimal(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}
