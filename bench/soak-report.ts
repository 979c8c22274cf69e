/**
 * What a soak run found: its samples, whether anything grows (a least-squares slope over the samples
 * after the warm-up), and the same as markdown and as an SVG time series. Pure: no I/O.
 */

/** One sample, taken after each 10 s slice of load. */
export type SoakSample = {
  elapsed_s: number;
  rss_mib: number;
  heap_used_mib: number;
  event_loop_delay_p99_ms: number;
  active_handles: number;
  open_fds: number;
  pending_transactions: number;
  requests_per_s: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  errors: number;
};

export type OverloadResult = {
  sustainable_per_s: number;
  offered_per_s: number;
  duration_s: number;
  accepted: number;
  refused_503: number;
  other_errors: number;
  rss_mib_before: number;
  rss_mib_max: number;
  latency_p99_ms: number;
};

/** Well-behaved reads alone, then the same while another address floods the service with forged tokens. */
export type FloodResult = {
  duration_s: number;
  idle_p99_ms: number;
  flooded_p99_ms: number;
  idle_per_s: number;
  flooded_per_s: number;
  /** Forged-token requests sent, and how many of them the per-address budget refused before any signature check. */
  forged_sent: number;
  forged_refused_early: number;
};

export type Trend = { metric: keyof SoakSample; slope_per_min: number; growth_over_run: number; mean: number; grows: boolean };

export type SoakResults = {
  started_at: string;
  minutes: number;
  store: string;
  load_average: string;
  samples: SoakSample[];
  trends: Trend[];
  acknowledged: number;
  lost: number;
  overload: OverloadResult | null;
  flood: FloodResult | null;
};

/** The share of the run treated as warm-up: caches and pools fill, the heap finds its size. */
const WARMUP_SHARE = 0.2;
/** A metric "grows" when its fitted growth over the run exceeds this share of its mean, and this floor. */
const GROWTH_SHARE_MAX = 0.1;
const GROWTH_FLOORS: Partial<Record<keyof SoakSample, number>> = { rss_mib: 16, heap_used_mib: 16, active_handles: 20, open_fds: 20, event_loop_delay_p99_ms: 10, latency_p99_ms: 10 };
export const TRENDED: ReadonlyArray<keyof SoakSample> = ['rss_mib', 'heap_used_mib', 'active_handles', 'open_fds', 'event_loop_delay_p99_ms', 'latency_p99_ms'];

/** Samples summed up per point of the fit: a minute of 10 s samples. */
const WINDOW_SAMPLES = 6;
/**
 * What a window says of a metric. Memory, handles and descriptors: the window's lowest sample, the
 * floor the garbage collector comes back to (a leak raises the floor; the sawtooth between
 * collections is not growth). Delays and response times: the window's median.
 */
const FLOOR_METRICS: ReadonlySet<keyof SoakSample> = new Set(['rss_mib', 'heap_used_mib', 'active_handles', 'open_fds']);

/**
 * The trend of `metric` after the warm-up: a least-squares line through one point per minute (its
 * floor or median, see above), and whether its growth over the run is more than noise.
 */
export function trendOf(samples: readonly SoakSample[], metric: keyof SoakSample): Trend {
  const kept = samples.slice(Math.floor(samples.length * WARMUP_SHARE));
  const windows: SoakSample[][] = [];
  for (let start = 0; start < kept.length; start += WINDOW_SAMPLES) windows.push(kept.slice(start, start + WINDOW_SAMPLES));
  const xs = windows.map((window) => average(window.map((sample) => sample.elapsed_s)) / 60);
  const ys = windows.map((window) => summarize(window.map((sample) => sample[metric]), FLOOR_METRICS.has(metric)));
  const mean_x = average(xs);
  const mean = average(ys);
  const covariance = xs.reduce((sum, x, index) => sum + (x - mean_x) * ((ys[index] as number) - mean), 0);
  const variance = xs.reduce((sum, x) => sum + (x - mean_x) ** 2, 0);
  const slope_per_min = variance === 0 ? 0 : covariance / variance;
  const span_min = xs.length < 2 ? 0 : (xs[xs.length - 1] as number) - (xs[0] as number);
  const growth_over_run = slope_per_min * span_min;
  const allowed = Math.max(GROWTH_FLOORS[metric] ?? 0, Math.abs(mean) * GROWTH_SHARE_MAX);
  return { metric, slope_per_min, growth_over_run, mean, grows: growth_over_run > allowed };
}

function summarize(values: readonly number[], floor: boolean): number {
  const sorted = [...values].sort((a, b) => a - b);
  return floor ? (sorted[0] ?? 0) : (sorted[Math.floor(sorted.length / 2)] ?? 0);
}

function average(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
}

function fixed(value: number, digits = 1): string {
  return value.toFixed(digits);
}

export function soakMarkdown(results: SoakResults): string {
  const last = results.samples.at(-1);
  const lines = [
    `Soak run of ${results.started_at}: ${results.minutes} min of steady mixed load on ${results.store} (load average at the start: ${results.load_average}).`,
    '',
    '| metric (per minute: floor of memory and handles, median of delays) | mean | fitted growth over the run (after warm-up) | per minute | grows? |',
    '|---|---|---|---|---|',
    ...results.trends.map((trend) => `| ${trend.metric} | ${fixed(trend.mean)} | ${fixed(trend.growth_over_run)} | ${fixed(trend.slope_per_min, 2)} | ${trend.grows ? '**yes**' : 'no'} |`),
    '',
    `Throughput in the last slice: ${fixed(last?.requests_per_s ?? 0, 0)} req/s, p50 ${fixed(last?.latency_p50_ms ?? 0)} ms, p99 ${fixed(last?.latency_p99_ms ?? 0)} ms; `
      + `errors over the run: ${results.samples.reduce((sum, sample) => sum + sample.errors, 0)}; submissions acknowledged: ${results.acknowledged}, lost: ${results.lost}.`,
  ];
  if (results.overload !== null) {
    const overload = results.overload;
    lines.push('', `Overload: ${fixed(overload.offered_per_s, 0)} submissions/s offered for ${overload.duration_s} s, 5× the ${fixed(overload.sustainable_per_s, 0)}/s measured as sustainable: `
      + `${overload.accepted} accepted, ${overload.refused_503} refused with 503 \`service_overloaded\`, ${overload.other_errors} other errors; `
      + `RSS ${fixed(overload.rss_mib_before)} MiB before, ${fixed(overload.rss_mib_max)} MiB at most; p99 ${fixed(overload.latency_p99_ms)} ms.`);
  }
  if (results.flood !== null) {
    const flood = results.flood;
    lines.push('', `Invalid-token flood: ${flood.duration_s} s of requests with forged tokens from another address (${flood.forged_sent} sent, `
      + `${flood.forged_refused_early} refused by the per-address budget before any signature check); well-behaved reads `
      + `p99 ${fixed(flood.idle_p99_ms)} ms alone and ${fixed(flood.flooded_p99_ms)} ms during the flood (${fixed(flood.flooded_p99_ms / Math.max(0.001, flood.idle_p99_ms), 2)}×; goal ≤ 2×), `
      + `${fixed(flood.idle_per_s, 0)} and ${fixed(flood.flooded_per_s, 0)} req/s.`);
  }
  return `${lines.join('\n')}\n`;
}

const WIDTH = 960;
const PANEL_HEIGHT = 150;
const LEFT = 70;
const RIGHT = 20;
const COLORS = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1'];

/** Four small time series: memory, event-loop delay, handles and descriptors, response times. */
export function soakChart(results: SoakResults): string {
  const panels: Array<{ title: string; series: Array<{ name: string; metric: keyof SoakSample }> }> = [
    { title: 'Memory (MiB)', series: [{ name: 'RSS', metric: 'rss_mib' }, { name: 'heap used', metric: 'heap_used_mib' }] },
    { title: 'Event-loop delay p99 (ms)', series: [{ name: 'delay p99', metric: 'event_loop_delay_p99_ms' }] },
    { title: 'Handles and descriptors', series: [{ name: 'active handles', metric: 'active_handles' }, { name: 'open fds', metric: 'open_fds' }] },
    { title: 'Response time (ms)', series: [{ name: 'p50', metric: 'latency_p50_ms' }, { name: 'p99', metric: 'latency_p99_ms' }] },
  ];
  const svg: string[] = [];
  const end_s = Math.max(1, results.samples.at(-1)?.elapsed_s ?? 1);
  const x = (seconds: number) => LEFT + (seconds / end_s) * (WIDTH - LEFT - RIGHT);
  panels.forEach((panel, index) => {
    const top = 30 + index * (PANEL_HEIGHT + 40);
    const values = panel.series.flatMap((series) => results.samples.map((sample) => sample[series.metric]));
    const max = Math.max(1, ...values) * 1.1;
    const y = (value: number) => top + PANEL_HEIGHT - (value / max) * PANEL_HEIGHT;
    svg.push(`<text x="${LEFT}" y="${top - 8}" font-size="13" font-weight="bold">${panel.title}</text>`);
    svg.push(`<line x1="${LEFT}" y1="${top + PANEL_HEIGHT}" x2="${WIDTH - RIGHT}" y2="${top + PANEL_HEIGHT}" stroke="#a0aec0"/>`);
    svg.push(`<text x="${LEFT - 6}" y="${top + 4}" font-size="11" text-anchor="end">${fixed(max, 0)}</text>`);
    svg.push(`<text x="${LEFT - 6}" y="${top + PANEL_HEIGHT}" font-size="11" text-anchor="end">0</text>`);
    panel.series.forEach((series, series_index) => {
      const points = results.samples.map((sample) => `${x(sample.elapsed_s).toFixed(1)},${y(sample[series.metric]).toFixed(1)}`).join(' ');
      const color = COLORS[series_index % COLORS.length] as string;
      svg.push(`<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points}"/>`);
      svg.push(`<text x="${WIDTH - RIGHT - 150 + series_index * 75}" y="${top - 8}" font-size="11" fill="${color}">${series.name}</text>`);
    });
  });
  const height = 30 + panels.length * (PANEL_HEIGHT + 40);
  svg.push(`<text x="${WIDTH / 2}" y="${height - 8}" font-size="11" text-anchor="middle">minutes 0 – ${fixed(end_s / 60)}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n${svg.join('\n')}\n</svg>\n`;
}
