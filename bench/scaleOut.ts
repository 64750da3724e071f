/**
 * Scenario "scale-out": the many-integrators load (50 keys at once) on the design call and on small
 * records calls, against one service process and against two processes on the same database, run
 * back to back. The ratio (two processes ÷ one) shows whether a second process adds throughput on
 * this machine; the database, autocannon and both processes share its two cores.
 */
import type { BenchContext } from './lib/context.js';
import { describeRun, expectOnly, INTEGRATORS, loadRun, loadWorld, type LoadResult, loadSeconds } from './lib/load.js';
import { summarise, type ScenarioResult } from './lib/results.js';
import { median, round } from './lib/stats.js';
import { resetRateWindows } from './lib/world.js';

export async function scaleOut(ctx: BenchContext): Promise<ScenarioResult[]> {
  const { knex } = ctx.db;
  const world = await loadWorld(knex, 'SCALE');
  const one = await ctx.service('scale-out-1');
  const two = await ctx.service('scale-out-2');
  const seconds = loadSeconds();
  const run = async (label: string, urls: string[], call: 'design' | 'records', duration = seconds): Promise<LoadResult> => {
    await resetRateWindows(knex);
    const pids = urls.length === 1 ? [one.pid] : [one.pid, two.pid];
    const result = await loadRun({ urls, world, call, seconds: duration, measure: { pids, knex } });
    describeRun(ctx, label, result);
    expectOnly(result, ['200'], label);
    return result;
  };

  ctx.log('scale-out: warm-up');
  for (const call of ['design', 'records'] as const) await run(`warm-up ${call}`, [one.url, two.url], call, 3);
  one.markMeasuring();
  two.markMeasuring();

  const reps = Math.max(1, Math.min(ctx.repetitions, Number(process.env.BENCH_LOAD_REPS ?? 3)));
  const results = { design: { one: [] as LoadResult[], two: [] as LoadResult[] }, records: { one: [] as LoadResult[], two: [] as LoadResult[] } };
  for (let i = 1; i <= reps; i++) {
    for (const call of ['design', 'records'] as const) {
      results[call].one.push(await run(`${call}, one process ${i}/${reps}`, [one.url], call));
      results[call].two.push(await run(`${call}, two processes ${i}/${reps}`, [one.url, two.url], call));
    }
  }
  const cpu = (runs: LoadResult[]) => ({
    service: round(median(runs.map((r) => r.cpuPerRequest.service))),
    database: round(median(runs.map((r) => r.cpuPerRequest.database))),
  });
  await one.stop();
  await two.stop();
  return (['design', 'records'] as const).map((call) => summarise({
    scenario: `scale_out_${call}`,
    title: `scale-out: ${call === 'design' ? 'design call' : 'records calls'}, two processes`,
    unit: 'req/s',
    runs: results[call].two.map((r) => r.rps),
    floorName: 'the same load on one process',
    floorRuns: results[call].one.map((r) => r.rps),
    details: {
      connections: INTEGRATORS, note: 'ratio > 1: the second process adds throughput',
      cpu_ms_per_request_one_process: cpu(results[call].one), cpu_ms_per_request_two_processes: cpu(results[call].two),
    },
  }));
}
