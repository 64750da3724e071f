/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and tells where the time went: self time by function and
 * by area (a package under node_modules, a folder of the service's code, the garbage collector…).
 * Run alone: `npx tsx bench/lib/profile.ts <file.cpuprofile>…`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame }
interface CpuProfile { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }

/** Where a function lives: `knex`, `src/domain/fhir`, `(garbage collector)`, `node:internal`… */
function areaOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules?.[1]) return modules[1];
  const source = /\/(src\/[^/]+(?:\/[^/]+)?)\/[^/]+\.js$/.exec(url);
  if (source?.[1]) return source[1].replace(/\/[^/]+\.js$/, '');
  if (url.startsWith('node:')) return 'node:internal';
  return path.basename(url);
}

/**
 * @param fromUs - drop the samples taken before this CLOCK_MONOTONIC time in µs (what
 *   `process.hrtime.bigint() / 1000n` gave in the harness when measuring began), so start-up and
 *   warm-up (compiling the contract's and FHIR R4's validators) do not drown the steady state.
 */
export function summariseProfile(file: string, fromUs = 0, top = 25): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  let total = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    if (at < fromUs) return;
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') return;
    total += us;
    const where = frame.url ? `${frame.url.replace(/^file:\/\/.*?\/(node_modules|dist|src)\//, '$1/')}:${frame.lineNumber + 1}` : '';
    const name = `${frame.functionName || '(anonymous)'} ${where}`.trim();
    self.set(name, (self.get(name) ?? 0) + us);
    areas.set(areaOf(frame), (areas.get(areaOf(frame)) ?? 0) + us);
  });
  const ms = (us: number) => (us / 1000).toFixed(0).padStart(7);
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
  const rank = (m: Map<string, number>, n: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
  return [
    `${path.basename(file)}: ${(total / 1000).toFixed(0)} ms busy${fromUs ? ' after warm-up' : ''} (idle excluded)`,
    '  by area (self time):',
    ...rank(areas, 15).map(([k, v]) => `  ${ms(v)} ms ${pct(v)}  ${k}`),
    '  by function (self time):',
    ...rank(self, top).map(([k, v]) => `  ${ms(v)} ms ${pct(v)}  ${k}`),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const file of process.argv.slice(2)) process.stdout.write(`${summariseProfile(file)}\n\n`);
}
