/**
 * The HTTP requests' duration histogram, counted in plain numbers and handed to prom-client's registry
 * only when it is scraped. prom-client's own `Histogram` checks and hashes the label set on every
 * observation, even through a child bound to its labels: a few microseconds of every request, more than
 * a read's own store work (docs/performance.md, "Metrics counted as numbers"). This one finds a series
 * by route (a string Fastify keeps, so its hash is cached), then by method and status, and adds to one
 * bucket. Its exposition is prom-client's, line for line (test/metrics/request-duration-histogram.test.ts
 * compares the two).
 */

/** One method/route/status set: found by route (the map's key), then method and status; `labels` as exposed. */
type Series = { method: string; status_code: number; labels: Labels; bucket_counts: number[]; sum_s: number; count: number };
type Labels = Record<string, string | number>;
/** A bucket's value carries `exemplar: null`, as prom-client's do (exemplars are not kept). */
type Value = { labels: Labels; value: number; metricName: string; sharedLabels?: Labels; exemplar?: null };
type MetricData = { name: string; help: string; type: 'histogram'; values: Value[]; aggregator: 'sum' };

/** Series kept at the most before new method/route/status sets count under the route `other` (a series per method and status). */
export const SERIES_MAX = 1000;
const OVERFLOW_ROUTE = 'other';

export class RequestDurationHistogram {
  readonly name: string;
  readonly help: string;
  private readonly upper_bounds_s: readonly number[];
  private series_by_route = new Map<string, Series[]>();
  /** Every series in the order it was first seen, the order prom-client lists its label sets in. */
  private all_series: Series[] = [];

  constructor(name: string, help: string, upper_bounds_s: readonly number[]) {
    this.name = name;
    this.help = help;
    this.upper_bounds_s = upper_bounds_s;
  }

  observe(method: string, route: string, status_code: number, duration_s: number): void {
    const series = this.seriesOf(method, route, status_code);
    let bucket = 0;
    while (bucket < this.upper_bounds_s.length && duration_s > (this.upper_bounds_s[bucket] as number)) bucket += 1;
    // Past the last bound: counted in +Inf alone, which is the count.
    if (bucket < this.upper_bounds_s.length) series.bucket_counts[bucket] = (series.bucket_counts[bucket] as number) + 1;
    series.sum_s += duration_s;
    series.count += 1;
  }

  /** What prom-client's registry formats (`getMetricsAsString`): the same shape its `Histogram` gives. */
  getForPromString(): MetricData {
    const values: Value[] = [];
    for (const series of this.all_series) {
      const labels = series.labels;
      let cumulative = 0;
      this.upper_bounds_s.forEach((bound, index) => {
        cumulative += series.bucket_counts[index] as number;
        values.push({ labels: { le: bound }, value: cumulative, metricName: `${this.name}_bucket`, exemplar: null, sharedLabels: labels });
      });
      values.push({ labels: { le: '+Inf' }, value: series.count, metricName: `${this.name}_bucket`, exemplar: null, sharedLabels: labels });
      values.push({ labels: {}, value: series.sum_s, metricName: `${this.name}_sum`, sharedLabels: labels });
      values.push({ labels: {}, value: series.count, metricName: `${this.name}_count`, sharedLabels: labels });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }

  /** The same as JSON (`getMetricsAsJSON`): each value's labels whole. */
  get(): MetricData {
    const data = this.getForPromString();
    return { ...data, values: data.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) };
  }

  reset(): void {
    this.series_by_route = new Map();
    this.all_series = [];
  }

  private seriesOf(method: string, route: string, status_code: number): Series {
    const of_route = this.series_by_route.get(route);
    const found = of_route?.find((series) => series.method === method && series.status_code === status_code);
    if (found !== undefined) return found;
    if (this.all_series.length >= SERIES_MAX && route !== OVERFLOW_ROUTE) return this.seriesOf(method, OVERFLOW_ROUTE, status_code);
    const series: Series = {
      method, status_code, labels: { method, route, status_code: String(status_code) }, bucket_counts: this.upper_bounds_s.map(() => 0), sum_s: 0, count: 0,
    };
    if (of_route === undefined) this.series_by_route.set(route, [series]);
    else of_route.push(series);
    this.all_series.push(series);
    return series;
  }
}
