/**
 * An interleaved A/B of two builds: `npx tsx bench/compareBuilds.ts <distA> <distB>`, on the FHIR review
 * (COMPARE_CALL=fhir, the default), on the design call with 50 keys at once (COMPARE_CALL=design) or on
 * the bulk read of 100,000 records (COMPARE_CALL=bulk).
 *
 * make bench compares a call with its floor in the same run. Comparing two versions of the call by
 * running make bench once per build does not work on a shared machine: its drift between two runs is as
 * large as the changes measured, and a round-by-round comparison once showed a 15 ms "gain" that an
 * interleaved one did not (bench/README.md). Here both builds run at once, each as a service on its own
 * throwaway database, and take turns (which of the two goes first alternates), so both see the same
 * machine: COMPARE_REPS turns each (default 50 reviews of the largest Synthea file, 8 load runs of
 * BENCH_LOAD_SECONDS, or 8 bulk reads).
 *
 * Both builds must have the same migrations: the databases are made with this checkout's.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readAllRecords, seedBulkStudy } from './bulkRead.js';
import { FIXTURE } from './fhirImport.js';
import { createContext } from './lib/context.js';
import { openBenchDatabase } from './lib/database.js';
import { expectStatus, request } from './lib/http.js';
import { expectOnly, loadRun, loadWorld } from './lib/load.js';
import { median, percentile, timed } from './lib/stats.js';
import { createStudy, demoDesign, makeKeys, resetRateWindows, seedPatients } from './lib/world.js';

const WARM_UP = 3;

/** What one turn of a build measured: what is compared, and figures told beside it, by name. */
interface Turn { value: number; asides?: Record<string, number> }

/** A way to exercise a build: what it needs set up, and one turn of it. */
interface Comparison {
  unit: string;
  defaultReps: number;
  prepare(dist: string): Promise<{ turn(): Promise<Turn>; stop(): Promise<void> }>;
}

/** A build's service on its own throwaway database. */
async function startService(dist: string) {
  const db = await openBenchDatabase();
  const ctx = createContext({ db, dist: path.resolve(dist), repetitions: 1 });
  return { db, ctx, stop: async () => { await ctx.stopAll(); await db.close(); } };
}

/** The FHIR review of the largest Synthea file into the fixture's patient, in ms. */
const fhirReview: Comparison = {
  unit: 'ms',
  defaultReps: 50,
  async prepare(dist) {
    const { db, ctx, stop } = await startService(dist);
    const study = await createStudy(db.knex, demoDesign('FHIR'));
    const [key] = await makeKeys(db.knex, study, 1, 'Compared build');
    const [patient] = await seedPatients(db.knex, study, 1, { sex: 'male', birthYear: 1915, enrolledOn: '1992-12-05', site: '01' });
    const service = await ctx.service(path.basename(dist));
    const url = `${service.url}/api/v1/studies/${study.code}/fhir?subject=${encodeURIComponent(patient.subject)}&mode=review`;
    const body = readFileSync(FIXTURE);
    return {
      async turn() {
        const { ms, value } = await timed(() => request('POST', url, { key: key.key, body, contentType: 'application/fhir+json' }));
        expectStatus(value, 201, `FHIR review by ${dist}`);
        // The same file again while its import waits is answered with that import (issue 19.6), as in fhirImport.ts.
        await db.knex('fhir_imports').where({ status: 'proposed' }).update({ status: 'rejected', decided_at: db.knex.fn.now() });
        return { value: ms };
      },
      stop,
    };
  },
};

/**
 * The design call with 50 keys at once for a load run, in requests per second; beside it, the service's
 * CPU per request and the requests each committed statement served (the security step's batches).
 */
const designCall: Comparison = {
  unit: 'req/s',
  defaultReps: 8,
  async prepare(dist) {
    const { db, ctx, stop } = await startService(dist);
    const world = await loadWorld(db.knex, 'COMPARE');
    const service = await ctx.service(path.basename(dist));
    return {
      async turn() {
        await resetRateWindows(db.knex);
        const commits = async () => (await db.knex.raw('select xact_commit::int as n from pg_stat_database where datname = current_database()')).rows[0].n as number;
        const before = await commits();
        const result = await loadRun({ urls: [service.url], world, call: 'design', measure: { pids: [service.pid] } });
        expectOnly(result, ['200'], `design call by ${dist}`);
        // Statistics reach pg_stat_database up to half a second late.
        await new Promise((resolve) => setTimeout(resolve, 600));
        // Less the two reads of the count, each a committed statement of its own.
        const statements = Math.max(1, (await commits()) - before - 2);
        return { value: result.rps, asides: { 'service CPU ms per request': result.cpuPerRequest.service, 'requests per commit': result.requests / statements } };
      },
      stop,
    };
  },
};

/** Every page of the records call over a study of 100,000 records (bench/bulkRead.ts), in rows per second. */
const bulkRead: Comparison = {
  unit: 'rows/s',
  defaultReps: 8,
  async prepare(dist) {
    const { db, ctx, stop } = await startService(dist);
    const { study, bearer, total } = await seedBulkStudy(db.knex, (line) => process.stdout.write(`${dist}: ${line}\n`));
    const service = await ctx.service(path.basename(dist));
    return {
      async turn() {
        await resetRateWindows(db.knex);
        const { ms } = await timed(() => readAllRecords(service.url, study, bearer, total));
        return { value: total / (ms / 1000) };
      },
      stop,
    };
  },
};

const COMPARISONS: Record<string, Comparison> = { fhir: fhirReview, design: designCall, bulk: bulkRead };

async function main(): Promise<void> {
  const dists = process.argv.slice(2);
  const comparison = COMPARISONS[process.env.COMPARE_CALL ?? 'fhir'];
  if (dists.length !== 2 || !comparison) throw new Error('usage: [COMPARE_CALL=fhir|design|bulk] npx tsx bench/compareBuilds.ts <distA> <distB>');
  const reps = Number(process.env.COMPARE_REPS ?? comparison.defaultReps);
  const builds: { dist: string; turns: Turn[]; turn(): Promise<Turn>; stop(): Promise<void> }[] = [];
  try {
    for (const dist of dists) builds.push({ dist, turns: [], ...(await comparison.prepare(dist)) });
    for (let i = 0; i < WARM_UP; i++) for (const build of builds) await build.turn();
    for (let i = 0; i < reps; i++) {
      const order = i % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) build.turns.push(await build.turn());
    }
    for (const build of builds) {
      const values = build.turns.map((t) => t.value);
      const names = Object.keys(build.turns[0]?.asides ?? {});
      const aside = names.map((name) => `; ${name} ${median(build.turns.map((t) => t.asides![name])).toFixed(3)}`).join('');
      process.stdout.write(`${build.dist}: median ${median(values).toFixed(1)} ${comparison.unit}, quartiles ${percentile(values, 0.25).toFixed(1)}–${percentile(values, 0.75).toFixed(1)}${aside} (${reps} turns)\n`);
    }
  } finally {
    for (const build of builds) await build.stop();
  }
}

await main();
