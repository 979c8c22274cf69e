/** The webhook gauges read at scrape time: the endpoints by state and the deliverer's workers, from one read of the endpoints a scrape. */
import { describe, expect, it } from 'vitest';
import { LedgerMetrics, type WebhookEndpointState } from '../../src/metrics/ledger-metrics.js';

describe('webhook metrics', () => {
  it('counts endpoints by state and the workers, reading the endpoints once a scrape', async () => {
    const metrics = new LedgerMetrics();
    let reads = 0;
    const endpoints: WebhookEndpointState[] = [
      { endpoint: 'wh_a', events: 0, state: 'active' },
      { endpoint: 'wh_b', events: 7, state: 'failing' },
      { endpoint: 'wh_c', events: 3, state: 'failing' },
      { endpoint: 'wh_d', events: 9, state: 'disabled' },
    ];
    metrics.watchWebhooks(async () => {
      reads += 1;
      return endpoints;
    }, () => ({ busy: 3, failing: 2, max: 16 }));
    const text = await metrics.registry.metrics();
    expect(reads).toBe(1);
    expect(text).toMatch(/^tabula_webhook_endpoints\{state="active"\} 1$/m);
    expect(text).toMatch(/^tabula_webhook_endpoints\{state="failing"\} 2$/m);
    expect(text).toMatch(/^tabula_webhook_endpoints\{state="disabled"\} 1$/m);
    expect(text).toMatch(/^tabula_webhook_endpoint_lag_events\{endpoint="wh_b"\} 7$/m);
    expect(text).toMatch(/^tabula_webhook_workers\{state="busy"\} 3$/m);
    expect(text).toMatch(/^tabula_webhook_workers\{state="failing"\} 2$/m);
    expect(text).toMatch(/^tabula_webhook_workers\{state="max"\} 16$/m);
    await metrics.registry.metrics();
    expect(reads).toBe(2);
  });
});
