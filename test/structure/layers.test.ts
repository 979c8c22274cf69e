/**
 * The layers import one way (README, "Architecture"): the domain imports nothing of the service's, the
 * code the SDK compiles in (src/domain/shared) imports only itself, the service owns the store interface
 * and imports no store, only the HTTP edge and the composition root import metrics or HTTP, and no module
 * imports itself through others. Read from the source files' import statements.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');

/** Every TypeScript source file under src/, as a path relative to src/ (tests excluded). */
function sourceFiles(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path.relative(SRC, full)] : [];
  });
}

const IMPORT = /^(?:import|export)\b[^'"]*?from\s+'([^']+)'|^import\s+'([^']+)'|\bimport\('([^']+)'\)/gm;

/** The src/ files that `file` imports (relative paths only; packages and node: builtins are left out). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(SRC, file), 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2] ?? match[3];
    if (specifier === undefined || !specifier.startsWith('.')) continue;
    found.push(path.relative(SRC, path.resolve(SRC, path.dirname(file), specifier)).replace(/\.js$/, '.ts'));
  }
  return found;
}

const FILES = sourceFiles();
const GRAPH = new Map(FILES.map((file) => [file, importsOf(file)]));

function violations(from: (file: string) => boolean, to: (target: string) => boolean): string[] {
  return [...GRAPH].flatMap(([file, targets]) => (from(file) ? targets.filter(to).map((target) => `${file} → ${target}`) : []));
}

const under = (folder: string) => (file: string) => file.startsWith(`${folder}/`);

/**
 * The imports allowed to cross a layer, each with why; any other fails. None today: the pool's arithmetic
 * moved into src/domain/market, and the API's views, which the event payloads write too, into src/views
 * below both HTTP and the events. A crossing added here must say why, and leaves the list once mended.
 */
const KNOWN_CROSSINGS: readonly string[] = [];
const unknown = (crossings: string[]) => crossings.filter((crossing) => !KNOWN_CROSSINGS.includes(crossing));

describe('the layers of src/', () => {
  it('reads the import graph it checks, and each known crossing is still there', () => {
    const all = [...GRAPH].flatMap(([file, targets]) => targets.map((target) => `${file} → ${target}`));
    for (const crossing of KNOWN_CROSSINGS) expect(all, 'a mended crossing leaves the list').toContain(crossing);
    expect(FILES.length).toBeGreaterThan(100);
    for (const targets of GRAPH.values()) for (const target of targets) expect(FILES, `${target} exists`).toContain(target);
    expect(GRAPH.get('compose.ts')).toContain('service/ledger-service.ts');
  });

  it('src/domain/shared, which the SDK compiles in, imports only itself', () => {
    expect(violations(under('domain/shared'), (target) => !target.startsWith('domain/shared/'))).toEqual([]);
  });

  it('src/domain imports nothing outside src/domain', () => {
    expect(unknown(violations(under('domain'), (target) => !target.startsWith('domain/')))).toEqual([]);
  });

  it('the service imports no store, no HTTP and no metrics: it owns the interfaces they implement or listen on', () => {
    expect(violations(under('service'), (target) => /^(store|http|metrics)\//.test(target))).toEqual([]);
  });

  it('only the HTTP edge and the composition root import HTTP or metrics', () => {
    const edge = (file: string) => /^(http|metrics|cli)\//.test(file) || ['compose.ts', 'run-service.ts', 'main.ts'].includes(file);
    expect(unknown(violations((file) => !edge(file), (target) => /^(http|metrics)\//.test(target)))).toEqual([]);
  });

  it('no module imports itself through others', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (file: string, trail: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'visiting') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(' → '));
        return;
      }
      state.set(file, 'visiting');
      for (const target of GRAPH.get(file) ?? []) visit(target, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of FILES) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
