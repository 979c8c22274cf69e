/**
 * The native token's price over the pool's candles (GET /api/price/history), as a hand-drawn SVG:
 * one candle per bucket (wick from low to high, body from open to close), the closes joined by a
 * line, the lowest and highest price on the axis. An interval selector (1 minute, 1 hour, 1 day),
 * and a text summary for everyone: the last close, the change over 24 hours and the volume shown.
 * Loaded again with each new block (or polled).
 */
import { useState } from 'preact/hooks';
import { useApi } from '../api';
import { formatUtc, groupDigits } from '../format';
import { isBlockSealed } from '../live-events';
import { useLive } from '../live';
import { CANDLE_INTERVALS, chartGeometry, dayChange, totalVolume, type Candle, type CandleInterval, type ChartBox } from '../market';
import { fetchCandles } from '../market-api';
import { Notice } from './bits';

export const CHART_POLL_MS = 5000;
const CANDLES_SHOWN: Record<CandleInterval, number> = { '1m': 60, '1h': 48, '1d': 90 };
/** Hourly candles for the 24-hour change, whatever the chart shows. */
const DAY_CANDLES = 26;
const INTERVAL_NAMES: Record<CandleInterval, string> = { '1m': '1 minute', '1h': '1 hour', '1d': '1 day' };
const INTERVAL_ADJECTIVES: Record<CandleInterval, string> = { '1m': 'one-minute', '1h': 'hourly', '1d': 'daily' };
const BOX: ChartBox = { width: 720, height: 260, left: 8, right: 164, top: 14, bottom: 36 };

type Loaded = { candles: Candle[]; day: Candle[]; at_s: number };

export function PriceChart() {
  const api = useApi();
  const native = api.config.native_symbol;
  const [interval, setInterval] = useState<CandleInterval>('1h');
  const live = useLive<Loaded>(async (_client, signal) => {
    const [candles, day] = await Promise.all([
      fetchCandles(interval, CANDLES_SHOWN[interval], api.session.token, signal),
      fetchCandles('1h', DAY_CANDLES, api.session.token, signal),
    ]);
    return { candles, day, at_s: Math.floor(Date.now() / 1000) };
  }, [interval], { poll_ms: () => CHART_POLL_MS, refresh_on: isBlockSealed });

  const data = live.data;
  return (
    <section aria-labelledby="price-heading" class="price">
      <div class="section-heading">
        <h2 id="price-heading">{native} price</h2>
        <div class="segmented" role="group" aria-label="Candle interval">
          {CANDLE_INTERVALS.map((choice) => (
            <button key={choice} type="button" aria-pressed={choice === interval} onClick={() => setInterval(choice)} title={`One candle per ${INTERVAL_NAMES[choice]}`}>
              {choice}
            </button>
          ))}
        </div>
      </div>
      {live.error === null ? null : <Notice kind="error">The price history could not be refreshed: {live.error}</Notice>}
      {data === null ? <p class="muted" role="status">Loading the price history…</p> : data.candles.length === 0 ? (
        <div class="card chart-empty" data-chart="empty"><p><strong>No trades yet.</strong> The chart starts with the first block priced by the pool.</p></div>
      ) : (
        <div class="card chart-card">
          <PriceSummary native={native} data={data} interval={interval} />
          <CandleChart native={native} candles={data.candles} interval={interval} />
        </div>
      )}
    </section>
  );
}

function PriceSummary({ native, data, interval }: { native: string; data: Loaded; interval: CandleInterval }) {
  const last = data.candles[data.candles.length - 1];
  const change = dayChange(data.day, '1h', data.at_s);
  const volume = totalVolume(data.candles);
  return (
    <p class="chart-summary" data-chart="summary" aria-live="polite">
      Last close <strong data-field="last-close">${groupDigits(last?.close ?? '0')}</strong> per {native}
      {change === null || change.change_pct === null ? null : (
        <>; 24 h change <strong data-field="day-change" class={change.change_pct.startsWith('-') ? 'down' : change.change_pct === '0' ? '' : 'up'}>{change.change_pct} %</strong> (from ${groupDigits(change.from)})</>
      )}
      ; volume <strong data-field="volume">${groupDigits(volume)}</strong> over the {data.candles.length === 1 ? '' : `${data.candles.length} `}{INTERVAL_ADJECTIVES[interval]} candle{data.candles.length === 1 ? '' : 's'} shown.
    </p>
  );
}

function CandleChart({ native, candles, interval }: { native: string; candles: Candle[]; interval: CandleInterval }) {
  const geometry = chartGeometry(candles, BOX);
  const first = candles[0];
  const last = candles[candles.length - 1];
  const axis_x = BOX.width - BOX.right + 6;
  const description = first === undefined || last === undefined ? '' :
    `${candles.length} candles of ${INTERVAL_NAMES[interval]} from ${formatUtc(first.start)} to ${formatUtc(last.start)}: `
    + `lowest $${geometry.low}, highest $${geometry.high}, last close $${last.close}.`;
  return (
    <svg class="price-chart" data-chart="candles" data-candles={candles.length} viewBox={`0 0 ${BOX.width} ${BOX.height}`} role="img" aria-labelledby="price-chart-title price-chart-desc">
      <title id="price-chart-title">{`${native} price in USD, ${INTERVAL_NAMES[interval]} candles`}</title>
      <desc id="price-chart-desc">{description}</desc>
      <line class="chart-grid" x1={BOX.left} x2={BOX.width - BOX.right} y1={geometry.y(geometry.high)} y2={geometry.y(geometry.high)} />
      <line class="chart-grid" x1={BOX.left} x2={BOX.width - BOX.right} y1={geometry.y(geometry.low)} y2={geometry.y(geometry.low)} />
      <text class="chart-label" x={axis_x} y={geometry.y(geometry.high) + 4}>${trimPrice(geometry.high)}</text>
      <text class="chart-label" x={axis_x} y={geometry.y(geometry.low) + 4}>${trimPrice(geometry.low)}</text>
      <path class="chart-close" d={geometry.close_path} fill="none" />
      {geometry.bars.map((bar) => (
        <g key={bar.start} class={bar.rising ? 'candle candle-up' : 'candle candle-down'}>
          <line x1={bar.x} x2={bar.x} y1={bar.high_y} y2={bar.low_y} />
          <rect x={bar.x - bar.width / 2} y={bar.body_top} width={bar.width} height={Math.max(1, bar.body_bottom - bar.body_top)} />
        </g>
      ))}
      {first === undefined || last === undefined ? null : (
        <>
          <text class="chart-label" x={BOX.left} y={BOX.height - 8}>{shortTime(first.start, interval)}</text>
          {first.start === last.start ? null : <text class="chart-label" x={BOX.width - BOX.right} y={BOX.height - 8} text-anchor="end">{shortTime(last.start, interval)}</text>}
        </>
      )}
    </svg>
  );
}

/** At most 6 decimals on the axis (the summary and the description keep every digit). */
function trimPrice(price: string): string {
  const [whole = '0', fraction = ''] = price.split('.');
  const kept = fraction.slice(0, 6).replace(/0+$/, '');
  return groupDigits(kept === '' ? whole : `${whole}.${kept}`);
}

function shortTime(seconds: number, interval: CandleInterval): string {
  const text = formatUtc(seconds);
  return interval === '1d' ? text.slice(0, 10) : text.slice(5, 16) + ' UTC';
}
