/**
 * Summarises V8 CPU profiles (`.cpuprofile`, from `--profile-dir` or `node --cpu-prof`): the share of
 * samples per function, self and inclusive, and optionally the inclusive time of named steps.
 * `npx tsx bench/profile-summary.ts FILE.cpuprofile [--top 30] [--match name,name…]`
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

type ProfileNode = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
};
type Profile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

export type FunctionShare = { name: string; self_ms: number; inclusive_ms: number };

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^.*\/(src|bench|node_modules)\//, '$1/');
  return `${functionName || '(anonymous)'} ${file === '' ? '' : `${file}:${lineNumber + 1}`}`.trim();
}

/** Self and inclusive milliseconds per function label (recursion counted once per sample). */
export function summarise(profile: Profile): { total_ms: number; functions: FunctionShare[] } {
  const by_id = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<number, number>();
  profile.samples.forEach((id, index) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000));
  const shares = new Map<string, FunctionShare>();
  const share = (name: string) => {
    let found = shares.get(name);
    if (found === undefined) shares.set(name, (found = { name, self_ms: 0, inclusive_ms: 0 }));
    return found;
  };
  let total_ms = 0;
  for (const [id, ms] of self) {
    total_ms += ms;
    const node = by_id.get(id) as ProfileNode;
    share(label(node)).self_ms += ms;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = label(by_id.get(at) as ProfileNode);
      if (seen.has(name)) continue;
      seen.add(name);
      share(name).inclusive_ms += ms;
    }
  }
  return { total_ms, functions: [...shares.values()] };
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string' }, match: { type: 'string' } } });
  const top = Number(values.top ?? 30);
  for (const file of positionals) {
    const { total_ms, functions } = summarise(JSON.parse(fs.readFileSync(file, 'utf8')) as Profile);
    const percent = (ms: number) => `${((100 * ms) / total_ms).toFixed(1).padStart(5)} %`;
    console.log(`${file}: ${(total_ms / 1000).toFixed(2)} s sampled`);
    console.log('self:');
    for (const f of [...functions].sort((a, b) => b.self_ms - a.self_ms).slice(0, top)) console.log(`  ${percent(f.self_ms)} ${f.self_ms.toFixed(0).padStart(7)} ms  ${f.name}`);
    console.log('inclusive:');
    const matches = values.match?.split(',').map((part) => part.trim()).filter((part) => part !== '');
    const listed = matches === undefined
      ? [...functions].sort((a, b) => b.inclusive_ms - a.inclusive_ms).slice(0, top)
      : functions.filter((f) => matches.some((m) => f.name.startsWith(`${m} `) || f.name === m)).sort((a, b) => b.inclusive_ms - a.inclusive_ms);
    for (const f of listed) console.log(`  ${percent(f.inclusive_ms)} ${f.inclusive_ms.toFixed(0).padStart(7)} ms  ${f.name}`);
  }
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop() as string)) main();
