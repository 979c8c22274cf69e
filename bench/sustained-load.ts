/**
 * The sustained mixed-load scenario: `npx tsx bench/sustained-load.ts [--duration-s 60]` (PostgreSQL
 * with BENCH_DATABASE_URL, as `npm run bench`). Starts the built service as deployed (default
 * PENDING_MAX and block settings), funds senders, then for `duration` seconds drives, closed-loop and
 * as fast as the service answers, single submissions, batches of 100 and reads (transaction by hash,
 * balance) at once, and samples `/metrics` every 250 ms. Reports, per second, transactions accepted,
 * refused (503) and confirmed, the pending backlog over time, and time-to-confirm p50/p99, and draws
 * a chart. Sealing is in arrival order, so the k-th transaction accepted is confirmed when the sealed
 * count reaches k: time-to-confirm is read off the two cumulative curves (±one sample, 250 ms).
 * Writes bench/results/sustained.<store>.json and docs/performance-sustained-<store>.svg (with
 * `--pending-max N` / `--block-txs-max N`, files named after those settings).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { freshDatabase, type FreshDatabase } from './databases.js';
import { loadTransactions, metricValue, scrapeMetrics, signToken, waitUntilSealed, type TransferBody } from './ledger-client.js';
import { sleep, startService } from './processes.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SENDERS = 200;
const BATCH_SIZE = 100;
const SAMPLE_MS = 250;
const CONNECTIONS = { submit: 32, batch: 4, read: 8 };

type Sample = { t_s: number; accepted: number; refused: number; sealed: number; pending: number; reads: number };

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'duration-s': { type: 'string' }, 'pending-max': { type: 'string' }, 'block-txs-max': { type: 'string' } } });
  const duration_s = Number(values['duration-s'] ?? 60);
  // Defaults as deployed; set lower to watch the push-back (503 pending_backlog_full) at work.
  const overrides = {
    ...(values['pending-max'] === undefined ? {} : { PENDING_MAX: values['pending-max'] }),
    ...(values['block-txs-max'] === undefined ? {} : { BLOCK_TXS_MAX: values['block-txs-max'] }),
  };
  const variant = Object.keys(overrides).length === 0 ? '' : `-${Object.entries(overrides).map(([name, value]) => `${name.toLowerCase().replace(/_/g, '-')}-${value}`).join('-')}`;
  const database_url = process.env.BENCH_DATABASE_URL?.trim() || undefined;
  const store = database_url === undefined ? 'sqlite' : 'postgres';
  const temp_dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-sustained-'));
  let database: FreshDatabase | null = null;
  const secret = randomBytes(32).toString('hex');
  const metrics_token = randomBytes(16).toString('hex');
  try {
    if (database_url !== undefined) database = await freshDatabase(database_url, 'sustained');
    const service = await startService(ROOT, {
      NODE_ENV: 'production', DATABASE_URL: database?.url ?? `sqlite:${path.join(temp_dir, 'sustained.db')}`, JWT_SECRET: secret,
      METRICS_TOKEN: metrics_token, RATE_LIMIT_MAX: '10000000', LOG_LEVEL: 'warn', CHECKPOINT_SIGNING_KEY: randomBytes(32).toString('base64'), ...overrides,
    });
    try {
      const admin = await signToken(secret, 'bench-treasury', true);
      const senders = Array.from({ length: SENDERS }, (_, index) => `sender-${index}`);
      const tokens = await Promise.all(senders.map((sender) => signToken(secret, sender)));
      const mint = (index: number): TransferBody => ({ from: 'bench-treasury', to: senders[index] as string, amount: '100000000', token: 'TAB', type: 'mint' });
      const seed = await loadTransactions(service.url, admin, SENDERS, mint, { batch_size: 1000, concurrency: 1, sample_every: 1 });
      await waitUntilSealed(service.url, metrics_token);
      const base = metricValue(await scrapeMetrics(service.url, metrics_token), 'tabula_transactions_sealed_total');
      const load_average_start = os.loadavg()[0] as number;
      console.error(`sustained (${store}): ${duration_s} s, load average ${load_average_start.toFixed(1)}`);

      const counts = { accepted: 0, refused: 0, reads: 0, other: 0 };
      const transfer = (index: number): TransferBody => ({
        from: senders[index % SENDERS] as string, to: senders[(index + 1) % SENDERS] as string, amount: '0.01', token: 'TAB', type: 'transfer',
      });
      let next = 0;
      const submit: autocannon.Request = {
        setupRequest: (prepared) => {
          next += 1;
          const sender = next % SENDERS;
          return { ...prepared, method: 'POST', path: '/api/transactions/submit', headers: { authorization: `Bearer ${tokens[sender]}`, 'content-type': 'application/json' }, body: JSON.stringify(transfer(sender)) } as autocannon.Request;
        },
        onResponse: (status) => {
          if (status === 202) counts.accepted += 1;
          else if (status === 503) counts.refused += 1;
          else counts.other += 1;
        },
      };
      // Batches are the treasury's mints (a batch is one caller's; the senders' transfers go through submit).
      const batch_body = JSON.stringify({ transactions: Array.from({ length: BATCH_SIZE }, (_, index) => mint(index % SENDERS)) });
      const batch: autocannon.Request = {
        method: 'POST', path: '/api/transactions/batch', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: batch_body,
        onResponse: (status, body) => {
          if (status === 200) counts.accepted += (JSON.parse(body) as { accepted: number }).accepted;
          else if (status === 503) counts.refused += BATCH_SIZE;
          else counts.other += 1;
        },
      };
      let read_index = 0;
      const read: autocannon.Request = {
        setupRequest: (prepared) => {
          read_index += 1;
          const request_path = read_index % 2 === 0 ? `/api/transactions/${seed.sampled_hashes[read_index % seed.sampled_hashes.length]}` : `/api/balance/${senders[read_index % SENDERS]}`;
          return { ...prepared, method: 'GET', path: request_path, headers: { authorization: `Bearer ${admin}` } } as autocannon.Request;
        },
        onResponse: (status) => {
          if (status === 200) counts.reads += 1;
          else counts.other += 1;
        },
      };

      const samples: Sample[] = [];
      const started = performance.now();
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const text = await scrapeMetrics(service.url, metrics_token).catch(() => null);
          if (text !== null) {
            samples.push({
              t_s: (performance.now() - started) / 1000, accepted: counts.accepted, refused: counts.refused,
              sealed: metricValue(text, 'tabula_transactions_sealed_total') - base, pending: metricValue(text, 'tabula_pending_transactions'), reads: counts.reads,
            });
          }
          await sleep(SAMPLE_MS);
        }
      })();
      const run = (request: autocannon.Request, connections: number) => new Promise<autocannon.Result>((resolve, reject) => {
        autocannon({ url: service.url, connections, duration: duration_s, requests: [request], timeout: 30 }, (error, result) => (error ? reject(error) : resolve(result)));
      });
      const results = await Promise.all([run(submit, CONNECTIONS.submit), run(batch, CONNECTIONS.batch), run(read, CONNECTIONS.read)]);
      // Keep sampling until what was accepted is sealed (or 60 s more), so every time-to-confirm is known.
      const drain_deadline = performance.now() + 60_000;
      while (performance.now() < drain_deadline && ((samples.at(-1)?.sealed ?? 0) < counts.accepted)) await sleep(SAMPLE_MS);
      sampling = false;
      await sampler;
      const summary = summarise(samples, duration_s, counts, results.reduce((sum, result) => sum + result.errors + result.timeouts, 0));
      const output = { store, settings: overrides, started_at: new Date(Date.now() - (performance.now() - started)).toISOString(), duration_s, connections: CONNECTIONS, batch_size: BATCH_SIZE,
        load_average_start, load_average_end: os.loadavg()[0], machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}`, node: process.version, ...summary, samples };
      fs.mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true });
      fs.writeFileSync(path.join(ROOT, 'bench', 'results', `sustained.${store}${variant}.json`), `${JSON.stringify(output, null, 1)}\n`);
      fs.writeFileSync(path.join(ROOT, 'docs', `performance-sustained-${store}${variant}.svg`), chart(samples, duration_s, `${store}${variant}`));
      console.log(JSON.stringify({ ...output, samples: undefined }, null, 1));
    } finally {
      await service.stop();
    }
  } finally {
    await database?.drop().catch(() => undefined);
    fs.rmSync(temp_dir, { recursive: true, force: true });
  }
}

function summarise(samples: Sample[], duration_s: number, counts: { accepted: number; refused: number; reads: number; other: number }, errors: number) {
  const in_run = samples.filter((sample) => sample.t_s <= duration_s);
  const last = in_run.at(-1) as Sample;
  // Time-to-confirm: for each sample interval's accepted transactions, the first sample whose sealed count covers them.
  const delays: Array<{ s: number; weight: number }> = [];
  let unconfirmed = 0;
  for (let index = 1; index < in_run.length; index += 1) {
    const sample = in_run[index] as Sample;
    const weight = sample.accepted - (in_run[index - 1] as Sample).accepted;
    if (weight <= 0) continue;
    const confirmed = samples.find((later) => later.t_s >= sample.t_s && later.sealed >= sample.accepted);
    if (confirmed === undefined) unconfirmed += weight;
    else delays.push({ s: confirmed.t_s - sample.t_s, weight });
  }
  delays.sort((a, b) => a.s - b.s);
  const quantile = (fraction: number) => {
    const total = delays.reduce((sum, delay) => sum + delay.weight, 0);
    let seen = 0;
    for (const delay of delays) {
      seen += delay.weight;
      if (seen >= fraction * total) return delay.s;
    }
    return Number.NaN;
  };
  const pending = in_run.map((sample) => sample.pending);
  return {
    accepted: last.accepted, accepted_per_s: last.accepted / last.t_s, confirmed_in_run: last.sealed, confirmed_per_s: last.sealed / last.t_s,
    confirmed_share_of_accepted: last.sealed / Math.max(1, last.accepted), refused: last.refused, reads_per_s: last.reads / last.t_s,
    pending_max_seen: Math.max(...pending), pending_at_end: last.pending, time_to_confirm_s: { p50: quantile(0.5), p99: quantile(0.99) },
    unconfirmed_after_drain: unconfirmed, other_answers: counts.other, load_errors: errors,
  };
}

/** Accepted, confirmed and refused per second (left axis) and the pending backlog (right axis), per second of the run. */
function chart(samples: Sample[], duration_s: number, store: string): string {
  const width = 760;
  const height = 320;
  const pad = { left: 60, right: 70, top: 30, bottom: 40 };
  const seconds: Array<{ t: number; accepted: number; confirmed: number; refused: number; pending: number }> = [];
  for (let t = 1; t <= duration_s; t += 1) {
    const at = samples.filter((sample) => sample.t_s <= t).at(-1);
    const before = samples.filter((sample) => sample.t_s <= t - 1).at(-1) ?? { accepted: 0, sealed: 0, refused: 0 };
    if (at === undefined) continue;
    seconds.push({ t, accepted: at.accepted - before.accepted, confirmed: at.sealed - before.sealed, refused: at.refused - before.refused, pending: at.pending });
  }
  const rate_max = Math.max(1, ...seconds.flatMap((second) => [second.accepted, second.confirmed, second.refused]));
  const pending_max = Math.max(1, ...seconds.map((second) => second.pending));
  const x = (t: number) => pad.left + ((width - pad.left - pad.right) * t) / duration_s;
  const y = (value: number, max: number) => height - pad.bottom - ((height - pad.top - pad.bottom) * value) / max;
  const line = (pick: (second: (typeof seconds)[number]) => number, max: number, color: string, dash = '') =>
    `<polyline fill="none" stroke="${color}" stroke-width="2"${dash === '' ? '' : ` stroke-dasharray="${dash}"`} points="${seconds.map((second) => `${x(second.t).toFixed(1)},${y(pick(second), max).toFixed(1)}`).join(' ')}"/>`;
  const ticks = [0, 0.5, 1].map((fraction) => `<text x="${pad.left - 6}" y="${y(rate_max * fraction, rate_max) + 4}" text-anchor="end" font-size="11">${Math.round(rate_max * fraction).toLocaleString('en-US')}</text>`
    + `<text x="${width - pad.right + 6}" y="${y(pending_max * fraction, pending_max) + 4}" font-size="11" fill="#7a4">${Math.round(pending_max * fraction).toLocaleString('en-US')}</text>`).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="${pad.left}" y="18" font-size="13">Sustained mixed load (${store}): transactions per second (left) and pending backlog (right, green dashed)</text>
<line x1="${pad.left}" y1="${height - pad.bottom}" x2="${width - pad.right}" y2="${height - pad.bottom}" stroke="#999"/>
<line x1="${pad.left}" y1="${pad.top}" x2="${pad.left}" y2="${height - pad.bottom}" stroke="#999"/>
${ticks}
${line((second) => second.accepted, rate_max, '#1f77b4')}
${line((second) => second.confirmed, rate_max, '#d62728')}
${line((second) => second.refused, rate_max, '#999', '2,3')}
${line((second) => second.pending, pending_max, '#7a4', '6,4')}
<text x="${x(duration_s / 2)}" y="${height - 10}" text-anchor="middle" font-size="11">seconds</text>
<text x="${pad.left + 10}" y="${pad.top + 14}" font-size="11" fill="#1f77b4">accepted/s</text>
<text x="${pad.left + 90}" y="${pad.top + 14}" font-size="11" fill="#d62728">confirmed/s</text>
<text x="${pad.left + 180}" y="${pad.top + 14}" font-size="11" fill="#777">refused (503)/s</text>
</svg>
`;
}

await main();
