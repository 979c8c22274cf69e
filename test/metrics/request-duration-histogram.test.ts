import fc from 'fast-check';
import { Histogram, Registry, type MetricValueWithName } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestDurationHistogram, SERIES_MAX } from '../../src/metrics/request-duration-histogram.js';

const NAME = 'tabula_http_request_duration_seconds';
const HELP = 'HTTP requests by method, route and status: count and duration in seconds';
const BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

type Observation = { method: string; route: string; status_code: number; duration_s: number };

function both(): { ours: RequestDurationHistogram; theirs: Histogram<'method' | 'route' | 'status_code'>; ours_registry: Registry; their_registry: Registry } {
  const ours_registry = new Registry();
  const their_registry = new Registry();
  const ours = new RequestDurationHistogram(NAME, HELP, BUCKETS_S);
  ours_registry.registerMetric(ours as unknown as Parameters<Registry['registerMetric']>[0]);
  const theirs = new Histogram({ name: NAME, help: HELP, labelNames: ['method', 'route', 'status_code'], buckets: BUCKETS_S, registers: [their_registry] });
  return { ours, theirs, ours_registry, their_registry };
}

const observation = fc.record({
  method: fc.constantFrom('GET', 'POST', 'HEAD'),
  route: fc.constantFrom('/api/transactions', '/api/transactions/:hash', '/api/blocks', 'unmatched', 'a "quoted" \\ route'),
  status_code: fc.constantFrom(200, 202, 304, 400, 404, 429, 503),
  duration_s: fc.oneof(fc.constantFrom(...BUCKETS_S, 0, 2.5000001, 10), fc.double({ min: 0, max: 5, noNaN: true })),
});

describe('the HTTP requests\' duration histogram', () => {
  it('exposes what prom-client\'s Histogram exposes for the same observations, as text and as JSON', async () => {
    await fc.assert(fc.asyncProperty(fc.array(observation, { maxLength: 200 }), async (observations: Observation[]) => {
      const { ours, theirs, ours_registry, their_registry } = both();
      for (const { method, route, status_code, duration_s } of observations) {
        ours.observe(method, route, status_code, duration_s);
        theirs.labels(method, route, String(status_code)).observe(duration_s);
      }
      expect(await ours_registry.metrics()).toBe(await their_registry.metrics());
      expect(await ours_registry.getMetricsAsJSON()).toEqual(await their_registry.getMetricsAsJSON());
    }), { numRuns: 200 });
  });

  it('starts empty again when the registry is reset', async () => {
    const { ours, ours_registry } = both();
    ours.observe('GET', '/api/blocks', 200, 0.002);
    ours_registry.resetMetrics();
    expect(await ours_registry.metrics()).toBe(`# HELP ${NAME} ${HELP}\n# TYPE ${NAME} histogram\n`);
  });

  it(`keeps at most ${SERIES_MAX} series: later label sets count under the route "other"`, async () => {
    const { ours, ours_registry } = both();
    for (let index = 0; index < SERIES_MAX + 10; index += 1) ours.observe('GET', `/route-${index}`, 200, 0.001);
    ours.observe('GET', '/route-0', 200, 0.001);
    const values = ((await ours_registry.getMetricsAsJSON())[0]?.values ?? []) as Array<MetricValueWithName<string>>;
    const counts = values.filter((value) => value.metricName === `${NAME}_count`);
    expect(counts).toHaveLength(SERIES_MAX + 1);
    expect(counts.find((value) => value.labels.route === 'other')?.value).toBe(10);
    expect(counts.find((value) => value.labels.route === '/route-0')?.value).toBe(2);
  });
});
