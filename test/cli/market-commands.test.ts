/**
 * `tabula swap` and `tabula price` end to end against the service: the quote and the exact
 * min_receive a slippage tolerance gives, the receipt or (--wait) the sealed swap, the price and its
 * candles as text and JSON, and bad usage refused with exit 2 before anything is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ServiceProcess } from '../support/service-process.js';
import { ok, tabula } from './support/run-cli.js';

describe('tabula swap and tabula price', () => {
  let server: ServiceProcess;
  let admin: Record<string, string>;
  let alice: Record<string, string>;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    admin = { TABULA_URL: server.url, TABULA_TOKEN: await server.token('treasury', { admin: true }) };
    alice = { TABULA_URL: server.url, TABULA_TOKEN: await server.token('alice') };
  });
  afterAll(async () => { await server?.close(); });

  it('price shows the current price; swap on an empty pool fails with the service\'s code', async () => {
    expect(ok(await tabula(['price'], alice)).stdout).toMatch(/^price +[0-9.]+ USD per native token$/m);
    const refused = await tabula(['swap', '10', 'TAB'], alice);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('error 409 market_unavailable');
  });

  it('swap --slippage quotes, sends the exact min_receive and, with --wait, prints the sealed swap', async () => {
    for (const [to, token, amount] of [['@pool', 'TAB', '1000'], ['@pool', 'USDG', '1000'], ['alice', 'TAB', '100']]) {
      ok(await tabula(['submit', '--from', 'treasury', '--to', to as string, '--amount', amount as string, '--token', token as string, '--type', 'mint', '--wait'], admin));
    }
    const run = ok(await tabula(['swap', '10', 'TAB', '--slippage', '0.5%', '--wait'], alice));
    expect(run.stdout).toMatch(/^pay +10 TAB$/m);
    expect(run.stdout).toMatch(/^quote +9\.87158 USDG$/m);
    expect(run.stdout).toMatch(/^price +1 → 0\.980325168316 USD$/m);
    expect(run.stdout).toMatch(/^fee +0\.03 TAB$/m);
    expect(run.stdout).toMatch(/^min_receive +9\.822222 USDG \(slippage 0\.5%\)$/m);
    expect(run.stdout).toMatch(/^status +confirmed$/m);
    expect(run.stdout).toMatch(/^type +swap$/m);
    expect(run.stdout).toMatch(/^from +alice$/m); // the token's subject
    expect(run.stdout).toMatch(/^amount_out +9\.87158 USDG$/m);
  });

  it('swap --min-receive bounds it exactly (slippage_exceeded); --json prints the plan and the record', async () => {
    const run = ok(await tabula(['swap', '1', 'tab', '--min-receive', '1000', '--wait', '--json'], alice));
    const body = JSON.parse(run.stdout) as { quote: unknown; min_receive: string; transaction: Record<string, unknown> };
    expect(body).toMatchObject({ quote: null, min_receive: '1000' });
    expect(body.transaction).toMatchObject({ type: 'swap', status: 'failed', error: 'slippage_exceeded', min_receive: 1000, amount_out: null, token_out: 'USDG' });
    expect(body.transaction.min_receive_text).toBeUndefined();
  });

  it('swap without --wait prints the receipt, with the default tolerance, --from and --to', async () => {
    const run = ok(await tabula(['swap', '2', 'TAB', '--from', 'alice', '--to', 'bob', '--idempotency-key', 'cli-swap-1'], alice));
    expect(run.stdout).toMatch(/^min_receive +[0-9.]+ USDG \(slippage 0\.5%\)$/m);
    expect(run.stdout).toMatch(/^tx_hash +0x[0-9a-f]{64}$/m);
    expect(run.stdout).toMatch(/^status +pending$/m);
    const json = JSON.parse(ok(await tabula(['swap', '2', 'TAB', '--from', 'alice', '--to', 'bob', '--idempotency-key', 'cli-swap-2', '--json'], alice)).stdout) as {
      quote: { amount_out: number; token_out: string }; min_receive: string; receipt: { status: string; idempotency_key: string };
    };
    expect(json.quote.token_out).toBe('USDG');
    expect(json.receipt).toMatchObject({ status: 'pending', idempotency_key: 'cli-swap-2' });
    expect(Number(json.min_receive)).toBeLessThan(json.quote.amount_out);
  });

  it('refuses bad swap usage with exit 2 and a clear message, before sending anything', async () => {
    const cases: [string[], RegExp][] = [
      [['swap', '10'], /expected <amount> <token>/],
      [['swap', 'ten', 'TAB'], /amount must be a positive decimal/],
      [['swap', '-1', 'TAB'], /amount must be a positive decimal|expected <amount>|unknown option/i],
      [['swap', '10', 'TAB', '--slippage', '0.5'], /--slippage must be a percentage such as 0\.5%/],
      [['swap', '10', 'TAB', '--slippage', '100%'], /below 100 %/],
      [['swap', '10', 'TAB', '--slippage=-1%'], /negative/],
      [['swap', '10', 'TAB', '--slippage', '1%', '--min-receive', '9'], /exclude each other/],
      [['swap', '10', 'TAB', '--min-receive', 'lots'], /--min-receive must be a positive decimal/],
    ];
    for (const [args, message] of cases) {
      const run = await tabula(args, alice);
      expect(run.status, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toMatch(message);
    }
    const anonymous = await tabula(['swap', '10', 'TAB'], { TABULA_URL: server.url });
    expect(anonymous.status).toBe(2);
    expect(anonymous.stderr).toContain('--from is required');
  });

  it('price --history prints candles as a table, or as the API\'s JSON', async () => {
    const table = ok(await tabula(['price', '--history', '1m', '--limit', '5'], alice)).stdout;
    expect(table).toMatch(/^start +open +high +low +close +volume_usd$/m);
    expect(table).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$/m);
    expect(table).toMatch(/^\d+ 1m candles?, oldest first$/m);
    const json = JSON.parse(ok(await tabula(['price', '--history', '1m', '--json'], alice)).stdout) as { interval: string; candles: Record<string, unknown>[] };
    expect(json.interval).toBe('1m');
    expect(json.candles.at(-1)).toEqual({ start: expect.any(Number), open: expect.any(Number), high: expect.any(Number), low: expect.any(Number), close: expect.any(Number), volume_usd: expect.any(Number) });
    const now = JSON.parse(ok(await tabula(['price', '--json'], alice)).stdout) as { native_price: number };
    expect(json.candles.at(-1)?.close).toBe(now.native_price);
    for (const args of [['price', '--history', '5m'], ['price', '--limit', '3'], ['price', '--history', '1h', '--limit', '0'], ['price', 'now']]) {
      expect((await tabula(args, alice)).status, args.join(' ')).toBe(2);
    }
  });
});
