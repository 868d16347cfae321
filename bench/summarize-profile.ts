/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`) into where the time went: self time by area of the code
 * (our modules, each dependency, Node internals, GC, idle) and the top functions.
 *
 *   node --cpu-prof --cpu-prof-dir=.profiles --import tsx bench/run.ts
 *   npx tsx bench/summarize-profile.ts .profiles/<file>.cpuprofile [--top 25]
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
});
if (positionals.length !== 1) {
  console.error('usage: summarize-profile <file.cpuprofile> [--top N]');
  process.exit(2);
}
const profile = JSON.parse(await readFile(positionals[0]!, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMs = new Map<number, number>();
profile.samples.forEach((id, index) => {
  selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000);
});

const areas = new Map<string, number>();
const functions = new Map<string, number>();
let total = 0;
for (const [id, ms] of selfMs) {
  const frame = byId.get(id)!.callFrame;
  total += ms;
  const area = areaOf(frame.url, frame.functionName);
  areas.set(area, (areas.get(area) ?? 0) + ms);
  const name = `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + ms);
}

const busy = total - (areas.get('(idle)') ?? 0);
console.log(
  `profile: ${(total / 1000).toFixed(1)} s sampled, ${(busy / 1000).toFixed(1)} s busy (not idle)\n`,
);
console.log('self time by area (share of busy time)');
for (const [area, ms] of [...areas].sort((a, b) => b[1] - a[1])) {
  if (area === '(idle)') continue;
  console.log(`  ${pct(ms, busy)}  ${ms.toFixed(0).padStart(7)} ms  ${area}`);
}
console.log(`\ntop ${values.top} functions by self time`);
for (const [name, ms] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  if (name.startsWith('(idle)')) continue;
  console.log(`  ${pct(ms, busy)}  ${ms.toFixed(0).padStart(7)} ms  ${name}`);
}

function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return dependency[1]!;
  const ours = /\/(src\/[^/]+|bench|test)\//.exec(url);
  return ours ? ours[1]! : 'other';
}

function shortUrl(url: string): string {
  return url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench|test)\//, '$1/');
}

function pct(part: number, whole: number): string {
  return `${((part / whole) * 100).toFixed(1).padStart(5)}%`;
}
