/**
 * Scenario "many integrators": 50 API keys at once (autocannon, one connection per key, loopback only,
 * 3 s a run: lib/load.ts loadSeconds) on the design call and on small records calls (5 records each), against one service process.
 *
 * Floor: a bare Koa route answering the same design JSON (bench/bareKoa.mjs) on the same machine,
 * run back to back with the design call. The p99 is reported twice: at saturation (50 connections
 * sending as fast as they are answered), and at the most the rate limit lets 50 keys send (50 × 600 a
 * minute = 500 requests a second, offered open-loop at a steady pace: `pacedRun`).
 *
 * Rate limit: 2 fresh keys send 700 design calls each; the share of 429 among the answers after each
 * key's 600th in its minute should be 100 %, and 0 % before it. The run must end within the minute.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BenchContext } from './lib/context.js';
import { freePort } from './lib/context.js';
import { expectStatus, request } from './lib/http.js';
import { describeRun, expectOnly, INTEGRATORS, loadRun, loadWorld, pacedRun, SMALL_CALL, type LoadResult, loadSeconds } from './lib/load.js';
import { ratioAtLeast, summarise, valueBelow, type ScenarioResult } from './lib/results.js';
import { startProcess } from './lib/service.js';
import { median, round } from './lib/stats.js';
import { resetRateWindows } from './lib/world.js';
import { at } from '../test/helpers/only.js';

const PER_MINUTE = 600;
const RATE_KEYS = 2;
const RATE_CONNECTIONS_PER_KEY = 5;
const RATE_REQUESTS_PER_KEY = 700;

export async function integrators(ctx: BenchContext): Promise<ScenarioResult[]> {
  const { knex } = ctx.db;
  const world = await loadWorld(knex, 'LOAD');
  const service = await ctx.service('integrators');
  const designUrl = `${service.url}/api/v1/studies/${world.study.code}`;

  const design = await request('GET', designUrl, { key: at(world.integrators, 0, 'the integrators').key });
  expectStatus(design, 200, 'design call');
  const bodyFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'sdx-bench-')), 'design.json');
  writeFileSync(bodyFile, design.text);
  const barePort = await freePort();
  const bare = ctx.track(await startProcess('bare-koa', [path.resolve('bench/bareKoa.mjs'), String(barePort), bodyFile], { PATH: process.env.PATH }, /bare koa listening/, `http://127.0.0.1:${barePort}`));

  const seconds = loadSeconds();
  const run = async (label: string, options: Omit<Parameters<typeof loadRun>[0], 'world' | 'measure'>, allowed = ['200']): Promise<LoadResult> => {
    await resetRateWindows(knex);
    const measure = options.call === 'bare' ? { pids: [bare.pid] } : { pids: [service.pid], knex };
    const result = await loadRun({ world, seconds, measure, ...options });
    describeRun(ctx, label, result);
    expectOnly(result, allowed, label);
    return result;
  };

  ctx.log('integrators: warm-up');
  await run('warm-up bare Koa', { urls: [bare.url], call: 'bare', seconds: 2 });
  await run('warm-up design call', { urls: [service.url], call: 'design', seconds: 3 });
  await run('warm-up records calls', { urls: [service.url], call: 'records', seconds: 3 });
  service.markMeasuring();

  const reps = Math.max(1, Math.min(ctx.repetitions, Number(process.env.BENCH_LOAD_REPS ?? 3)));
  const bareRuns: LoadResult[] = [];
  const designRuns: LoadResult[] = [];
  const legalRuns: LoadResult[] = [];
  const recordRuns: LoadResult[] = [];
  for (let i = 1; i <= reps; i++) {
    bareRuns.push(await run(`bare Koa ${i}/${reps}`, { urls: [bare.url], call: 'bare' }));
    designRuns.push(await run(`design call ${i}/${reps}`, { urls: [service.url], call: 'design' }));
    await resetRateWindows(knex);
    const paced = await pacedRun({ url: service.url, world, rate: INTEGRATORS * PER_MINUTE / 60, seconds, measure: { pids: [service.pid], knex } });
    describeRun(ctx, `design call at 500 req/s ${i}/${reps}`, paced);
    expectOnly(paced, ['200'], 'design call at 500 req/s');
    legalRuns.push(paced);
    recordRuns.push(await run(`records calls ${i}/${reps}`, { urls: [service.url], call: 'records' }));
  }

  // Two fresh keys, five connections each: each key's answers arrive in about the order it sent them, give
  // or take the five in flight, so only answers clearly before or after the 600th are counted.
  ctx.log(`rate limit: ${RATE_KEYS} keys × ${RATE_REQUESTS_PER_KEY} design calls`);
  await resetRateWindows(knex);
  const seen = new Map<number, number>();
  const tally = { before: 0, beforeRefused: 0, after: 0, afterRefused: 0 };
  const rateStart = Date.now();
  const rateRun = await loadRun({
    urls: [service.url], world: { ...world, integrators: world.integrators.slice(0, RATE_KEYS) }, call: 'design',
    connections: RATE_KEYS * RATE_CONNECTIONS_PER_KEY, amount: RATE_KEYS * RATE_REQUESTS_PER_KEY,
    onStatus: (index, status) => {
      const n = (seen.get(index) ?? 0) + 1;
      seen.set(index, n);
      if (n <= PER_MINUTE - RATE_CONNECTIONS_PER_KEY) { tally.before++; if (status === 429) tally.beforeRefused++; }
      if (n > PER_MINUTE + RATE_CONNECTIONS_PER_KEY) { tally.after++; if (status === 429) tally.afterRefused++; }
    },
  });
  const rateSeconds = (Date.now() - rateStart) / 1000;
  describeRun(ctx, `rate limit (${rateSeconds.toFixed(1)} s)`, rateRun);
  expectOnly(rateRun, ['200', '429'], 'rate limit');
  await bare.stop();
  await service.stop();

  const rps = (runs: LoadResult[]) => runs.map((r) => r.rps);
  const cpu = (runs: LoadResult[]) => ({
    service_cpu_ms_per_request: round(median(runs.map((r) => r.cpuPerRequest.service))),
    database_cpu_ms_per_request: round(median(runs.map((r) => r.cpuPerRequest.database))),
  });
  const p99 = (runs: LoadResult[]) => runs.map((r) => r.p99);
  const afterShare = tally.after > 0 ? (100 * tally.afterRefused) / tally.after : Number.NaN;
  return [
    summarise({
      scenario: 'design_call_rps', title: `design call, ${INTEGRATORS} keys at once`, unit: 'req/s', runs: rps(designRuns),
      floorName: 'bare Koa route, same JSON body', floorRuns: rps(bareRuns), goal: ratioAtLeast(0.4),
      details: { p50_ms: designRuns.map((r) => r.p50), bare_p99_ms: p99(bareRuns), ...cpu(designRuns), bare_cpu_ms_per_request: cpu(bareRuns).service_cpu_ms_per_request },
    }),
    summarise({ scenario: 'design_call_p99', title: `design call p99 at saturation (${INTEGRATORS} connections)`, unit: 'ms', runs: p99(designRuns), goal: valueBelow(50, 'ms') }),
    summarise({
      scenario: 'design_call_p99_at_limit', title: `design call p99 at ${INTEGRATORS * PER_MINUTE / 60} req/s (${INTEGRATORS} keys × 600/min)`, unit: 'ms',
      runs: p99(legalRuns), goal: valueBelow(50, 'ms'), details: { achieved_rps: rps(legalRuns) },
    }),
    summarise({
      scenario: 'records_small_rps', title: `records calls of ${SMALL_CALL}, ${INTEGRATORS} keys at once`, unit: 'req/s', runs: rps(recordRuns),
      details: { records_per_second: rps(recordRuns).map((r) => Math.round(r * SMALL_CALL)), ...cpu(recordRuns) },
    }),
    summarise({ scenario: 'records_small_p99', title: `records calls of ${SMALL_CALL}: p99 at saturation`, unit: 'ms', runs: p99(recordRuns) }),
    summarise({
      scenario: 'rate_limit_429_share', title: 'share of 429 once a key passed 600 a minute', unit: '%', runs: [afterShare],
      goal: { text: '100 % after the 600th, none before', met: () => afterShare === 100 && tally.beforeRefused === 0 && rateSeconds < 60 },
      details: { seconds: Math.round(rateSeconds), answers_after_600: tally.after, refused_after_600: tally.afterRefused, answers_up_to_600: tally.before, refused_up_to_600: tally.beforeRefused, rps: Math.round(rateRun.rps) },
    }),
  ];
}
