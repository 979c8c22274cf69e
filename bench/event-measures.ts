/**
 * What the events scenario's processes share: one clock (CLOCK_MONOTONIC, the same in every process
 * of the machine, so a time taken by the submitter and one taken by a subscriber process compare),
 * percentile summaries, and the lines the benchmark and its subscriber process exchange.
 */

/** Milliseconds on the machine's monotonic clock (process.hrtime), comparable across processes. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export type Summary = { count: number; p50: number; p90: number; p99: number; mean: number; min: number; max: number };

/** Exact percentiles of `values` (sorted in place). */
export function summarize(values: number[]): Summary {
  values.sort((a, b) => a - b);
  const at = (fraction: number) => (values.length === 0 ? 0 : values[Math.min(values.length - 1, Math.ceil(fraction * values.length) - 1)] as number);
  let sum = 0;
  for (const value of values) sum += value;
  return {
    count: values.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), mean: sum / Math.max(1, values.length),
    min: values[0] ?? 0, max: values[values.length - 1] ?? 0,
  };
}

/** An acknowledged submission: its hash, when its request was sent and when its 202 arrived (monotonicMs). */
export type Acknowledgement = { tx_hash: string; sent_ms: number; acked_ms: number };

/** Benchmark → subscriber process, one JSON line each. */
export type SubscriberCommand =
  | { op: 'open'; url: string; after: number; tokens: string[]; connect_concurrency: number; timeout_ms: number }
  | { op: 'wait'; head: number; timeout_ms: number }
  | { op: 'finish'; acknowledgements: Acknowledgement[] };

/** Subscriber process → benchmark, one JSON line per command. */
export type SubscriberReply =
  | { op: 'opened'; opened: number; failures: string[] }
  | { op: 'caught_up'; reached: number; elapsed_ms: number }
  | { op: 'finished'; report: SubscriberReport };

export type SubscriberReport = {
  subscribers: number;
  /** Streams that were opened (200 and the `retry:` line). */
  opened: number;
  /** Streams that saw every event after the start cursor up to the head (or past it), each once, in sequence, and were still open. */
  complete: number;
  /** Events received out of sequence (a gap, a duplicate or a reordering), over all streams. */
  out_of_sequence: number;
  /** Streams that ended before the benchmark closed them (e.g. `: disconnected: …`), and why. */
  ended_early: number;
  end_reasons: string[];
  /** Events received by all streams together. */
  received: number;
  /** Acknowledged submissions whose `transaction.accepted` some stream never received. */
  missing_accepted: number;
  /** Deliveries of a `transaction.accepted` minus its 202's arrival at the submitter, ms. */
  lag_from_ack_ms: Summary;
  /** Deliveries minus the moment the submission was sent (an upper bound of commit → delivery), ms. */
  lag_from_send_ms: Summary;
  /** Deliveries that arrived before the submitter had the 202. */
  delivered_before_ack: number;
  /** Per accepted event, the last stream's receipt minus the first's (the fan-out), ms. */
  fanout_spread_ms: Summary;
  /** Acknowledged submissions whose `transaction.confirmed` some stream never received. */
  missing_confirmed: number;
  /** Deliveries of a `transaction.confirmed` minus its 202's arrival (waiting for the block included), ms. */
  confirmed_from_ack_ms: Summary;
  /** CPU the subscriber process used while the streams were open, % of one core. */
  cpu_percent: number;
};
