/**
 * An interleaved A/B of two builds on the FHIR review: `npx tsx bench/compareBuilds.ts <distA> <distB>`.
 *
 * make bench compares a call with its floor in the same run. Comparing two versions of the call by
 * running make bench once per build does not work on a shared machine: its drift between two runs is as
 * large as the changes measured, and a round-by-round comparison once showed a 15 ms "gain" that an
 * interleaved one did not (bench/README.md). Here both builds run at once, each as a service on its own
 * throwaway database, and answer alternate reviews of the largest Synthea file (COMPARE_REPS each,
 * default 50; which of the two goes first alternates), so both see the same machine.
 *
 * Both builds must have the same migrations: the databases are made with this checkout's.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FIXTURE } from './fhirImport.js';
import { createContext } from './lib/context.js';
import { openBenchDatabase } from './lib/database.js';
import { expectStatus, request } from './lib/http.js';
import { median, percentile, timed } from './lib/stats.js';
import { createStudy, demoDesign, makeKeys, seedPatients } from './lib/world.js';

const WARM_UP = 3;

/** A build's service on its own database, with a study, a key and the fixture's patient enrolled. */
async function startBuild(dist: string) {
  const db = await openBenchDatabase();
  const ctx = createContext({ db, dist: path.resolve(dist), repetitions: 1 });
  const study = await createStudy(db.knex, demoDesign('FHIR'));
  const [key] = await makeKeys(db.knex, study, 1, 'Compared build');
  const [patient] = await seedPatients(db.knex, study, 1, { sex: 'male', birthYear: 1915, enrolledOn: '1992-12-05', site: '01' });
  const service = await ctx.service(path.basename(dist));
  const url = `${service.url}/api/v1/studies/${study.code}/fhir?subject=${encodeURIComponent(patient.subject)}&mode=review`;
  return { dist, db, ctx, url, key: key.key, runs: [] as number[] };
}

type Build = Awaited<ReturnType<typeof startBuild>>;

async function review(build: Build, body: Buffer): Promise<number> {
  const { ms, value } = await timed(() => request('POST', build.url, { key: build.key, body, contentType: 'application/fhir+json' }));
  expectStatus(value, 201, `FHIR review by ${build.dist}`);
  return ms;
}

async function stop(build: Build): Promise<void> {
  await build.ctx.stopAll();
  await build.db.close();
}

async function main(): Promise<void> {
  const dists = process.argv.slice(2);
  if (dists.length !== 2) throw new Error('usage: npx tsx bench/compareBuilds.ts <distA> <distB>');
  const reps = Number(process.env.COMPARE_REPS ?? 50);
  const body = readFileSync(FIXTURE);
  const builds: Build[] = [];
  try {
    for (const dist of dists) builds.push(await startBuild(dist));
    for (let i = 0; i < WARM_UP; i++) for (const build of builds) await review(build, body);
    for (let i = 0; i < reps; i++) {
      const order = i % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) build.runs.push(await review(build, body));
    }
    for (const build of builds) {
      process.stdout.write(`${build.dist}: median ${median(build.runs).toFixed(1)} ms, first quartile ${percentile(build.runs, 0.25).toFixed(1)} ms (${reps} reviews)\n`);
    }
  } finally {
    for (const build of builds) await stop(build);
  }
}

await main();
