/**
 * `make bench`: runs every scenario against the compiled service on real PostgreSQL and writes
 * bench/results.json (one entry per measurement) and bench/results.md (the same as a table, also
 * printed). See bench/README.md for the scenarios, their floors and how to read the numbers.
 *
 * Environment: BENCH_ONLY=records,bulk,fhir,integrators,scaleout,webhooks (a subset), BENCH_REPS (default 9),
 * BENCH_BULK_REPS / BENCH_LOAD_REPS (default 3), BENCH_LOAD_SECONDS (default 3), BENCH_PROFILE=1 (CPU
 * profiles of every service process, summarised at the end), BENCH_DIST (default dist),
 * BENCH_DATABASE_URL (a throwaway database to use instead of making one).
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../src/serviceNodeFlags.js';
import { bulkRead } from './bulkRead.js';
import { fhirImport } from './fhirImport.js';
import { integrators } from './integrators.js';
import { createContext, type BenchContext } from './lib/context.js';
import { openBenchDatabase } from './lib/database.js';
import { summariseProfile } from './lib/profile.js';
import { markdownTable, type ScenarioResult } from './lib/results.js';
import { recordsCall } from './recordsCall.js';
import { scaleOut } from './scaleOut.js';
import { webhooks } from './webhooks.js';

const SCENARIOS: Record<string, (ctx: BenchContext) => Promise<ScenarioResult[]>> = {
  records: recordsCall,
  bulk: bulkRead,
  fhir: fhirImport,
  integrators,
  scaleout: scaleOut,
  webhooks,
};

async function main(): Promise<void> {
  const dist = path.resolve(process.env.BENCH_DIST ?? 'dist');
  if (!existsSync(path.join(dist, 'src', 'server.js'))) throw new Error(`${dist}/src/server.js is missing: run \`make build\` first (make bench does)`);
  const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',').map((s) => s.trim()) : Object.keys(SCENARIOS);
  const unknown = only.filter((name) => !SCENARIOS[name]);
  if (unknown.length > 0) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  const profileDir = process.env.BENCH_PROFILE === '1' ? path.resolve('bench/profiles', new Date().toISOString().replace(/[:.]/g, '-')) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });

  const started = Date.now();
  const db = await openBenchDatabase();
  const ctx = createContext({ db, dist, profileDir, repetitions: Math.max(1, Number(process.env.BENCH_REPS ?? 9)) });
  ctx.log(`database: ${db.where}`);
  ctx.log(`service: node ${SERVICE_NODE_FLAGS.join(' ')} ${path.relative(process.cwd(), dist)}/src/server.js (compiled JavaScript, NODE_ENV unset, response validation off)`);
  const results: ScenarioResult[] = [];
  try {
    for (const name of only) {
      ctx.log(`— ${name}`);
      await db.settle();
      const scenario = SCENARIOS[name];
      // Unknown names were refused above.
      if (scenario) results.push(...(await scenario(ctx)));
    }
  } finally {
    await ctx.stopAll();
    await db.close();
  }

  const machine = {
    cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model, memory_gb: Math.round(os.totalmem() / 2 ** 30),
    load_average_at_end: os.loadavg().map((l) => Math.round(l * 100) / 100), node: process.version,
  };
  const report = {
    generated_at: new Date().toISOString(),
    duration_s: Math.round((Date.now() - started) / 1000),
    database: db.where,
    service: `node ${SERVICE_NODE_FLAGS.join(' ')} ${path.relative(process.cwd(), dist)}/src/server.js, NODE_ENV unset, VALIDATE_RESPONSES unset (response validation off), RATE_LIMIT_PER_MINUTE 600`,
    machine,
    results,
  };
  writeFileSync('bench/results.json', `${JSON.stringify(report, null, 2)}\n`);
  const missed = results.filter((r) => r.met === false);
  const markdown = [
    `# Benchmark results, ${report.generated_at}`,
    '',
    `${machine.cpus} cores (${machine.cpu_model}), Node ${machine.node}, load average at the end ${machine.load_average_at_end.join(' / ')}; ${db.where}; ${report.duration_s} s in all.`,
    'Ratios compare each run with its floor run next to it (see bench/README.md); absolute numbers on a shared machine are noisy.',
    '',
    markdownTable(results),
    '',
    missed.length === 0 ? 'Every target is met.' : `Targets not met: ${missed.map((r) => r.scenario).join(', ')}.`,
    '',
  ].join('\n');
  writeFileSync('bench/results.md', markdown);
  process.stdout.write(`\n${markdown}`);
  if (profileDir) {
    for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
      const summary = summariseProfile(path.join(profileDir, file), ctx.measuringFrom().get(file.replace(/\.cpuprofile$/, '')));
      writeFileSync(path.join(profileDir, file.replace(/\.cpuprofile$/, '.txt')), `${summary}\n`);
      process.stdout.write(`\n${summary}\n`);
    }
  }
}

main().catch((error) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
