/** A one-line progress bar on a stream (stderr), redrawn at most every `redraw_ms`. */
export type ProgressSink = { write(text: string): unknown };

const WIDTH = 30;
const REDRAW_MS = 100;

export class ProgressBar {
  private readonly sink: ProgressSink;
  private readonly total: number;
  private readonly label: string;
  private drawn_at_ms = 0;

  constructor(sink: ProgressSink, total: number, label: string) {
    this.sink = sink;
    this.total = Math.max(1, total);
    this.label = label;
  }

  update(done: number, now_ms = Date.now()): void {
    if (done < this.total && now_ms - this.drawn_at_ms < REDRAW_MS) return;
    this.drawn_at_ms = now_ms;
    this.sink.write(`\r${render(done, this.total, this.label)}`);
  }

  finish(): void {
    this.sink.write('\n');
  }
}

export function render(done: number, total: number, label: string): string {
  const fraction = Math.min(1, Math.max(0, done / total));
  const filled = Math.round(fraction * WIDTH);
  const percent = Math.floor(fraction * 100).toString().padStart(3);
  return `[${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${percent}% ${done}/${total} ${label}`;
}
