/**
 * The chart of a run, as SVG drawn here (no browser, no plotting library): throughput of every
 * scenario as a share of the bare Fastify route (with the targets), its latency (p50 and p99, log
 * scale), the scale curve (p50 latency of each read as the ledger grows) and the events scenario's lag.
 */
import { formatSize } from './options.js';
import { ratioGoal, type BenchResults } from './report.js';

const WIDTH = 960;
const ROW_HEIGHT = 24;
const LABEL_WIDTH = 230;
const PLOT_WIDTH = WIDTH - LABEL_WIDTH - 150;
const COLORS = { service: '#2b6cb0', bare: '#cbd5e0', p50: '#2f855a', p99: '#c05621', target: '#e53e3e', grid: '#e2e8f0', text: '#1a202c' };
const LINE_COLORS = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1', '#b7791f'];

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function text(x: number, y: number, content: string, options: { anchor?: string; size?: number; weight?: string; color?: string } = {}): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-size="${options.size ?? 12}" text-anchor="${options.anchor ?? 'start'}" ` +
    `font-weight="${options.weight ?? 'normal'}" fill="${options.color ?? COLORS.text}">${escape(content)}</text>`;
}

function rect(x: number, y: number, width: number, height: number, color: string): string {
  return `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(0, width).toFixed(1)}" height="${height.toFixed(1)}" fill="${color}"/>`;
}

function line(x1: number, y1: number, x2: number, y2: number, color: string, dash = ''): string {
  return `<line x1="${x1.toFixed(1)}" y1="${y1.toFixed(1)}" x2="${x2.toFixed(1)}" y2="${y2.toFixed(1)}" stroke="${color}" stroke-width="1"${dash === '' ? '' : ` stroke-dasharray="${dash}"`}/>`;
}

/** Panel 1: requests/s as a share of the bare route, 0–100 % (bars past 100 % are clipped and labelled). */
function throughputPanel(results: BenchResults, top: number): { svg: string[]; height: number } {
  if (results.scenarios.length === 0) return { svg: [], height: 0 };
  const svg = [text(20, top + 16, 'Throughput: share of a bare Fastify route answering the same bytes (same run, same load)', { size: 14, weight: 'bold' })];
  const y0 = top + 30;
  const x = (fraction: number) => LABEL_WIDTH + Math.min(1, fraction) * PLOT_WIDTH;
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    svg.push(line(x(tick), y0, x(tick), y0 + results.scenarios.length * ROW_HEIGHT, COLORS.grid));
    svg.push(text(x(tick), y0 + results.scenarios.length * ROW_HEIGHT + 14, `${tick * 100} %`, { anchor: 'middle', size: 11 }));
  }
  results.scenarios.forEach((scenario, index) => {
    const y = y0 + index * ROW_HEIGHT;
    const goal = ratioGoal(results.store, scenario.kind);
    svg.push(text(LABEL_WIDTH - 8, y + 16, scenario.title, { anchor: 'end' }));
    svg.push(rect(LABEL_WIDTH, y + 4, PLOT_WIDTH, ROW_HEIGHT - 8, COLORS.bare));
    svg.push(rect(LABEL_WIDTH, y + 4, x(scenario.ratio) - LABEL_WIDTH, ROW_HEIGHT - 8, COLORS.service));
    if (goal !== null) svg.push(line(x(goal), y + 1, x(goal), y + ROW_HEIGHT - 1, COLORS.target, '3,2'));
    const tx = scenario.kind === 'batch' && scenario.transactions_per_s !== null ? ` = ${Math.round(scenario.transactions_per_s).toLocaleString('en-US')} tx/s` : '';
    svg.push(text(LABEL_WIDTH + PLOT_WIDTH + 8, y + 16, `${(scenario.ratio * 100).toFixed(0)} % · ${Math.round(scenario.service.requests_per_s).toLocaleString('en-US')}/s${tx}`, { size: 11 }));
  });
  const legend_y = y0 + results.scenarios.length * ROW_HEIGHT + 32;
  svg.push(rect(LABEL_WIDTH, legend_y - 10, 12, 12, COLORS.service), text(LABEL_WIDTH + 16, legend_y, 'tabula', { size: 11 }));
  svg.push(rect(LABEL_WIDTH + 80, legend_y - 10, 12, 12, COLORS.bare), text(LABEL_WIDTH + 96, legend_y, 'bare route = 100 %', { size: 11 }));
  svg.push(line(LABEL_WIDTH + 230, legend_y - 10, LABEL_WIDTH + 230, legend_y + 2, COLORS.target, '3,2'), text(LABEL_WIDTH + 236, legend_y, 'target', { size: 11 }));
  return { svg, height: legend_y - top + 20 };
}

/** Panel 2: p50 and p99 latency per scenario on a log scale. */
function latencyPanel(results: BenchResults, top: number): { svg: string[]; height: number } {
  if (results.scenarios.length === 0) return { svg: [], height: 0 };
  const svg = [text(20, top + 16, 'Latency per request (ms, log scale): p50 and p99', { size: 14, weight: 'bold' })];
  const y0 = top + 30;
  const values = results.scenarios.flatMap((scenario) => [scenario.service.latency_ms.p50, scenario.service.latency_ms.p99]).filter((value) => value > 0);
  const low = Math.pow(10, Math.floor(Math.log10(Math.min(...values, 1))));
  const high = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, 10))));
  const x = (value: number) => LABEL_WIDTH + (Math.log10(Math.max(value, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low)) * PLOT_WIDTH;
  const rows = results.scenarios.length * ROW_HEIGHT;
  for (let tick = low; tick <= high * 1.0001; tick *= 10) {
    svg.push(line(x(tick), y0, x(tick), y0 + rows, COLORS.grid));
    svg.push(text(x(tick), y0 + rows + 14, tick >= 1 ? String(tick) : tick.toPrecision(1), { anchor: 'middle', size: 11 }));
  }
  svg.push(line(x(25), y0, x(25), y0 + rows, COLORS.target, '3,2'), text(x(25) + 3, y0 - 4, '25 ms', { size: 10, color: COLORS.target }));
  results.scenarios.forEach((scenario, index) => {
    const y = y0 + index * ROW_HEIGHT;
    svg.push(text(LABEL_WIDTH - 8, y + 16, scenario.title, { anchor: 'end' }));
    svg.push(rect(LABEL_WIDTH, y + 4, x(scenario.service.latency_ms.p99) - LABEL_WIDTH, (ROW_HEIGHT - 8) / 2, COLORS.p99));
    svg.push(rect(LABEL_WIDTH, y + 4 + (ROW_HEIGHT - 8) / 2, x(scenario.service.latency_ms.p50) - LABEL_WIDTH, (ROW_HEIGHT - 8) / 2, COLORS.p50));
    svg.push(text(LABEL_WIDTH + PLOT_WIDTH + 8, y + 16, `${scenario.service.latency_ms.p50.toFixed(2)} / ${scenario.service.latency_ms.p99.toFixed(2)} ms`, { size: 11 }));
  });
  const legend_y = y0 + rows + 32;
  svg.push(rect(LABEL_WIDTH, legend_y - 10, 12, 12, COLORS.p50), text(LABEL_WIDTH + 16, legend_y, 'p50', { size: 11 }));
  svg.push(rect(LABEL_WIDTH + 60, legend_y - 10, 12, 12, COLORS.p99), text(LABEL_WIDTH + 76, legend_y, 'p99', { size: 11 }));
  return { svg, height: legend_y - top + 20 };
}

/** Panel 3: p50 latency of each read against the ledger's size (log x). */
function scalePanel(results: BenchResults, top: number): { svg: string[]; height: number } {
  const levels = results.scale?.levels ?? [];
  if (levels.length < 2) return { svg: [], height: 0 };
  const svg = [text(20, top + 16, 'Scale curve: p50 latency of each read (ms) as the ledger grows; peak RSS of the service', { size: 14, weight: 'bold' })];
  const y0 = top + 30;
  const plot_height = 200;
  const names = Object.keys(levels[0]?.reads ?? {});
  const all = levels.flatMap((level) => Object.values(level.reads).map((read) => read.latency_ms.p50));
  const y_max = Math.max(...all) * 1.2;
  const xs = levels.map((level) => Math.log10(level.transactions));
  const x = (value: number) => LABEL_WIDTH + (xs.length === 1 ? 0 : (Math.log10(value) - (xs[0] as number)) / ((xs[xs.length - 1] as number) - (xs[0] as number)) * PLOT_WIDTH);
  const y = (value: number) => y0 + plot_height - (value / y_max) * plot_height;
  for (const fraction of [0, 0.25, 0.5, 0.75, 1]) {
    svg.push(line(LABEL_WIDTH, y(fraction * y_max), LABEL_WIDTH + PLOT_WIDTH, y(fraction * y_max), COLORS.grid));
    svg.push(text(LABEL_WIDTH - 8, y(fraction * y_max) + 4, (fraction * y_max).toFixed(2), { anchor: 'end', size: 11 }));
  }
  for (const level of levels) {
    svg.push(text(x(level.transactions), y0 + plot_height + 16, `${formatSize(level.transactions)} tx`, { anchor: 'middle', size: 11 }));
    svg.push(text(x(level.transactions), y0 + plot_height + 30, `RSS ${(level.peak_rss_bytes / 2 ** 20).toFixed(0)} MiB`, { anchor: 'middle', size: 10 }));
  }
  names.forEach((name, index) => {
    const color = LINE_COLORS[index % LINE_COLORS.length] as string;
    const points = levels.map((level) => `${x(level.transactions).toFixed(1)},${y(level.reads[name]?.latency_ms.p50 ?? 0).toFixed(1)}`);
    svg.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const point of points) {
      const [px, py] = point.split(',');
      svg.push(`<circle cx="${px}" cy="${py}" r="3" fill="${color}"/>`);
    }
    svg.push(rect(LABEL_WIDTH + PLOT_WIDTH + 12, y0 + index * 18, 12, 12, color), text(LABEL_WIDTH + PLOT_WIDTH + 28, y0 + index * 18 + 10, name, { size: 11 }));
  });
  return { svg, height: plot_height + 70 };
}

/** Panel 4: the events scenario's lag (202 → delivery, p50 and p99, log scale) per placement of the streams, with its goal. */
function eventsPanel(results: BenchResults, top: number): { svg: string[]; height: number } {
  const events = results.events;
  if (events === null || events.placements.length === 0) return { svg: [], height: 0 };
  const svg = [text(20, top + 16, `Events: lag from the 202 to delivery on ${events.subscribers.toLocaleString('en-US')} SSE streams (ms, log scale), ${events.rate_per_s} submissions/s`, { size: 14, weight: 'bold' })];
  const y0 = top + 30;
  const goals = { same_instance: 100, across_instances: 250 } as const;
  const values = events.placements.flatMap((placement) => [placement.streams.lag_from_ack_ms.p50, placement.streams.lag_from_ack_ms.p99]).filter((value) => value > 0);
  const low = Math.pow(10, Math.floor(Math.log10(Math.min(...values, 1))));
  const high = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, 1000))));
  const x = (value: number) => LABEL_WIDTH + (Math.log10(Math.max(value, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low)) * PLOT_WIDTH;
  const rows = events.placements.length * ROW_HEIGHT;
  for (let tick = low; tick <= high * 1.0001; tick *= 10) {
    svg.push(line(x(tick), y0, x(tick), y0 + rows, COLORS.grid));
    svg.push(text(x(tick), y0 + rows + 14, tick >= 1 ? String(tick) : tick.toPrecision(1), { anchor: 'middle', size: 11 }));
  }
  events.placements.forEach((placement, index) => {
    const y = y0 + index * ROW_HEIGHT;
    const lag = placement.streams.lag_from_ack_ms;
    svg.push(text(LABEL_WIDTH - 8, y + 16, `streams ${placement.title}`, { anchor: 'end' }));
    svg.push(rect(LABEL_WIDTH, y + 4, x(lag.p99) - LABEL_WIDTH, (ROW_HEIGHT - 8) / 2, COLORS.p99));
    svg.push(rect(LABEL_WIDTH, y + 4 + (ROW_HEIGHT - 8) / 2, x(lag.p50) - LABEL_WIDTH, (ROW_HEIGHT - 8) / 2, COLORS.p50));
    svg.push(line(x(goals[placement.name]), y + 1, x(goals[placement.name]), y + ROW_HEIGHT - 1, COLORS.target, '3,2'));
    svg.push(text(LABEL_WIDTH + PLOT_WIDTH + 8, y + 16, `${lag.p50.toFixed(1)} / ${lag.p99.toFixed(1)} ms · RSS ${(placement.service.rss_peak_bytes / 2 ** 20).toFixed(0)} MiB`, { size: 11 }));
  });
  const legend_y = y0 + rows + 32;
  svg.push(rect(LABEL_WIDTH, legend_y - 10, 12, 12, COLORS.p50), text(LABEL_WIDTH + 16, legend_y, 'p50', { size: 11 }));
  svg.push(rect(LABEL_WIDTH + 60, legend_y - 10, 12, 12, COLORS.p99), text(LABEL_WIDTH + 76, legend_y, 'p99', { size: 11 }));
  svg.push(line(LABEL_WIDTH + 130, legend_y - 10, LABEL_WIDTH + 130, legend_y + 2, COLORS.target, '3,2'), text(LABEL_WIDTH + 136, legend_y, 'goal (p99)', { size: 11 }));
  return { svg, height: legend_y - top + 20 };
}

export function drawChart(results: BenchResults): string {
  const title = `tabula benchmark · ${results.store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} · ${results.machine.cpus} cores · Node ${results.machine.node} · ${results.started_at.slice(0, 10)}${results.smoke ? ' · smoke' : ''}`;
  const parts = [text(20, 26, title, { size: 16, weight: 'bold' })];
  let top = 44;
  for (const panel of [throughputPanel, latencyPanel, scalePanel, eventsPanel]) {
    const drawn = panel(results, top);
    parts.push(...drawn.svg);
    top += drawn.height + (drawn.height > 0 ? 16 : 0);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${top}" viewBox="0 0 ${WIDTH} ${top}" font-family="Helvetica, Arial, sans-serif">\n` +
    `<rect width="100%" height="100%" fill="#ffffff"/>\n${parts.join('\n')}\n</svg>\n`;
}
