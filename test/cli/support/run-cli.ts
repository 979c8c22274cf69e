/** Runs the built `tabula` command line (dist/cli/tabula.js) as a user would, for the CLI tests. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { expect } from 'vitest';
import { ROOT } from '../../support/service-process.js';

export const TABULA_BIN = path.join(ROOT, 'dist/cli/tabula.js');

export type Run = { status: number; stdout: string; stderr: string };

/** `tabula …args` with only PATH and `env` in its environment; resolves with its exit status and output. */
export function tabula(args: string[], env: Record<string, string>, timeout_ms = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TABULA_BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: timeout_ms }, (error, stdout, stderr) => {
      const status = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ status, stdout, stderr });
    });
  });
}

/** Expects exit status 0 (showing the output otherwise) and returns the run. */
export function ok(run: Run): Run {
  expect(run.status, `${run.stderr}\n${run.stdout}`).toBe(0);
  return run;
}
