/**
 * Whether the store can take writes: told by the stores of every write that failed because of the
 * storage (disk full, read-only, connection lost) and of every write that succeeded. While writes
 * fail, readiness answers 503; the failures are logged at most once a minute, with their count, and
 * counted for the metrics.
 */
import type { Logger } from 'pino';
import type { Clock } from './clock.js';

const LOG_INTERVAL_MS = 60_000;

export class StorageHealth {
  private readonly clock: Clock;
  private readonly logger: Logger;
  /** Since when writes fail (null: the last write succeeded). */
  private failing_since_ms: number | null = null;
  private unlogged = 0;
  private last_log_ms = Number.NEGATIVE_INFINITY;
  /** Writes refused by the storage since the process started. */
  failures = 0;

  constructor(clock: Clock, logger: Logger) {
    this.clock = clock;
    this.logger = logger;
  }

  get failing(): boolean {
    return this.failing_since_ms !== null;
  }

  writeFailed(operation: string, error: unknown): void {
    const now_ms = this.clock.now_ms();
    this.failures += 1;
    this.unlogged += 1;
    this.failing_since_ms ??= now_ms;
    if (now_ms - this.last_log_ms < LOG_INTERVAL_MS) return;
    this.logger.error(
      { err: error, operation, failures: this.unlogged, failing_since_ms: this.failing_since_ms },
      'the store refuses writes (disk full, read-only, or unreachable): submissions get 503 storage_unavailable until it recovers',
    );
    this.unlogged = 0;
    this.last_log_ms = now_ms;
  }

  writeSucceeded(): void {
    if (this.failing_since_ms === null) return;
    this.logger.warn({ failed_for_ms: this.clock.now_ms() - this.failing_since_ms, failures: this.unlogged }, 'the store takes writes again');
    this.failing_since_ms = null;
    this.unlogged = 0;
    this.last_log_ms = Number.NEGATIVE_INFINITY;
  }
}
