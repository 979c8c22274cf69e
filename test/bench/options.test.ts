// The benchmark's flags: `--help` lists every one of them, and an unknown flag says where to look.
import { describe, expect, it } from 'vitest';
import { BENCH_FLAGS, BENCH_USAGE, readOptions } from '../../bench/options.js';

describe("the benchmark's options", () => {
  it('lists every flag it accepts in its --help text', () => {
    for (const flag of Object.keys(BENCH_FLAGS)) expect(BENCH_USAGE, flag).toContain(`--${flag} `);
    expect(readOptions(['--help'], {}).help).toBe(true);
    expect(readOptions([], {}).help).toBe(false);
  });

  it('refuses an unknown flag, pointing at --help', () => {
    expect(() => readOptions(['--durations-s', '5'], {})).toThrow(/Unknown option '--durations-s'.*npm run bench -- --help lists the options/);
  });
});
