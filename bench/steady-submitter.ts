/**
 * Submissions at a steady rate (open loop: each starts on its schedule, whatever the answers before
 * it), for the events scenario. It runs in the benchmark's own process, whose event loop has little
 * else to do meanwhile, so the moment it takes for each 202 (when the answer's headers arrive) is
 * close to the moment the answer reached the machine.
 */
import { monotonicMs, summarize, type Acknowledgement, type Summary } from './event-measures.js';
import { sleep } from './processes.js';

export type Sender = { user: string; token: string };

export type SteadyLoad = {
  url: string;
  senders: readonly Sender[];
  rate_per_s: number;
  /** Submissions of the first seconds are made but not measured. */
  warmup_s: number;
  duration_s: number;
  /** Submissions awaiting their answer at the most; one that would exceed it starts late (counted). */
  in_flight_max: number;
};

export type SteadyResult = {
  submitted: number;
  acknowledged: number;
  errors: number;
  error_samples: string[];
  /** Submissions that started more than a tick late because `in_flight_max` were awaiting answers. */
  late_starts: number;
  /** Time from sending to the 202's headers, measured submissions only. */
  latency_ms: Summary;
  /** The measured submissions' acknowledgements (after the warm-up). */
  measured: Acknowledgement[];
};

const TICK_MS = 5;
const LOCATION_PREFIX = '/api/transactions/';
const ERROR_SAMPLES_MAX = 5;

export async function submitSteadily(load: SteadyLoad): Promise<SteadyResult> {
  const result: SteadyResult = { submitted: 0, acknowledged: 0, errors: 0, error_samples: [], late_starts: 0, latency_ms: summarize([]), measured: [] };
  const latencies: number[] = [];
  const started_ms = monotonicMs();
  const measured_from_ms = started_ms + load.warmup_s * 1000;
  const total = Math.round(load.rate_per_s * (load.warmup_s + load.duration_s));
  const in_flight = new Set<Promise<void>>();
  const fail = (text: string) => {
    result.errors += 1;
    if (result.error_samples.length < ERROR_SAMPLES_MAX) result.error_samples.push(text);
  };
  const submit = async (index: number) => {
    const sender = load.senders[index % load.senders.length] as Sender;
    const receiver = load.senders[(index + 1) % load.senders.length] as Sender;
    const sent_ms = monotonicMs();
    try {
      const response = await fetch(`${load.url}/api/transactions/submit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sender.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: sender.user, to: receiver.user, amount: '0.01', token: 'TAB', type: 'transfer' }),
      });
      const acked_ms = monotonicMs();
      const body = await response.text();
      const location = response.headers.get('location') ?? '';
      if (response.status !== 202 || !location.startsWith(LOCATION_PREFIX)) {
        fail(`${response.status}: ${body.slice(0, 300)}`);
        return;
      }
      result.acknowledged += 1;
      if (sent_ms < measured_from_ms) return;
      result.measured.push({ tx_hash: location.slice(LOCATION_PREFIX.length), sent_ms, acked_ms });
      latencies.push(acked_ms - sent_ms);
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error));
    }
  };
  while (result.submitted < total) {
    const due = Math.min(total, Math.floor(((monotonicMs() - started_ms) * load.rate_per_s) / 1000) + 1);
    while (result.submitted < due) {
      if (in_flight.size >= load.in_flight_max) {
        result.late_starts += 1;
        while (in_flight.size >= load.in_flight_max) await Promise.race(in_flight);
      }
      const pending = submit(result.submitted).finally(() => in_flight.delete(pending));
      in_flight.add(pending);
      result.submitted += 1;
    }
    await sleep(TICK_MS);
  }
  await Promise.all(in_flight);
  result.latency_ms = summarize(latencies);
  return result;
}
