/**
 * Scenario "bulk read": a study of 100,000 records (5,000 patients of the demo study, 20 forms each,
 * valid values, consent given, at both sites) read through every page of GET /records at limit=1000,
 * following `next` to the end, as a sponsor's full load would.
 *
 * Floor: the same rows (the same columns, joins, visibility conditions and keyset order as the read
 * call's own query) selected page by page with plain `pg`. Reported as rows per second. The same study
 * then measures the CDISC exports against the same floor (bench/exports.ts).
 */
import type { Knex } from 'knex';
import pg from 'pg';
import { at, only, present } from '../test/helpers/only.js';
import { exportsOfStudy } from './exports.js';
import type { BenchContext } from './lib/context.js';
import { expectStatus, request } from './lib/http.js';
import { ratioAtLeast, summarise, type ScenarioResult } from './lib/results.js';
import { timed } from './lib/stats.js';
import { randomSource } from './recordsCall.js';
import { createStudy, demoDesign, makeKeys, resetRateWindows, seedPatients, seedRecords, storedContent, type BenchPatient, type BenchStudy, type SeedRecord } from './lib/world.js';

const PATIENTS = 5000;
const PAGE = 1000;
/** Every form of every visit of the demo study, plus one unscheduled vital signs: 20 records a patient. */
const SCHEDULE: [visit: string, form: string][] = [
  ['screening', 'dm'], ['screening', 'vs'], ['screening', 'lab_hem'], ['screening', 'lab_chem'], ['screening', 'mh'], ['screening', 'cm'],
  ['baseline', 'vs'], ['baseline', 'lab_hem'], ['baseline', 'lab_chem'], ['baseline', 'ip_alloc'],
  ['week4', 'vs'], ['week4', 'lab_chem'], ['week4', 'ae'], ['week4', 'cm'],
  ['week12', 'vs'], ['week12', 'lab_hem'], ['week12', 'lab_chem'], ['week12', 'ae'], ['week12', 'cm'],
  ['unscheduled', 'vs'],
];

function fixed(random: () => number, min: number, max: number, decimals: number): string {
  return (min + random() * (max - min)).toFixed(decimals);
}

/** What a site would send for one form: in range, and passing the demo study's edit checks. */
function sentFor(form: string, random: () => number, day: string): { values?: Record<string, string>; tables?: Record<string, Record<string, string>[]> } {
  switch (form) {
    case 'dm':
      return { values: { sex: random() < 0.5 ? '1' : '2', ethnicity: at(['1', '2', '9'], Math.floor(random() * 3), 'the ethnicity codes'), height: fixed(random, 150, 195, 1), weight: fixed(random, 50, 110, 1) } };
    case 'vs': {
      const sbp = Math.round(115 + random() * 35);
      return { values: { vsdate: day, sbp: String(sbp), dbp: String(sbp - 30 - Math.round(random() * 20)), hr: fixed(random, 55, 95, 0), rr: fixed(random, 12, 20, 0), temp: fixed(random, 36.1, 37.4, 1), weight: fixed(random, 50, 110, 1) } };
    }
    case 'lab_hem': {
      const hgb = 12 + random() * 4;
      return { values: { hgb: hgb.toFixed(1), wbc: fixed(random, 4, 10, 2), plt: fixed(random, 150, 400, 0), hct: (hgb * 3).toFixed(1) } };
    }
    case 'lab_chem':
      return { values: { glucose: fixed(random, 4, 7, 1), creat: fixed(random, 60, 110, 0), chol: fixed(random, 3.5, 6.5, 2), alt: fixed(random, 10, 40, 0), egfr: fixed(random, 60, 120, 0) } };
    case 'mh':
      return { tables: { conditions: [
        { term: 'Essential hypertension', code: '59621000', onset: '2015-06-01', ongoing: 'yes' },
        { term: 'Type 2 diabetes mellitus', code: '44054006', onset: '2019-02-11', ongoing: 'yes' },
      ] } };
    case 'cm':
      return { tables: { medications: [
        { name: 'Amlodipine 5 MG Oral Tablet', code: '197361', start: '2016-01-10', dose: '5 mg once daily' },
        { name: 'Metformin 500 MG Oral Tablet', code: '860975', start: '2019-03-01', dose: '500 mg twice daily' },
      ] } };
    case 'ae':
      return { tables: { events: [{ term: 'Headache', onset: day, severity: 'mild', serious: 'no' }] } };
    case 'ip_alloc':
      return { values: { kit: `K-${Math.floor(random() * 1e6).toString().padStart(6, '0')}`, arm: random() < 0.5 ? 'A' : 'B' } };
    default:
      throw new Error(`no bench values for form ${form}`);
  }
}

const ENROLLED_ON = '2026-01-12';
/** Each visit's planned day for a patient enrolled on ENROLLED_ON, inside its window as a site would send it. */
const VISIT_DAY: Record<string, string> = {
  screening: '2025-12-29', baseline: '2026-01-12', week4: '2026-02-09', week12: '2026-04-06', unscheduled: '2026-02-02',
};

function* bulkRecords(study: BenchStudy, patients: BenchPatient[]): Generator<SeedRecord> {
  const random = randomSource(42);
  for (const patient of patients) {
    for (const [visit, form] of SCHEDULE) {
      yield { patient, visit, form, instance: 1, content: storedContent(study.design, form, sentFor(form, random, present(VISIT_DAY[visit], `the day of ${visit}`))) };
    }
  }
}

/** The read call's own query (src/db/readPages.ts `recordsPage`) written out for plain pg. */
const FLOOR_SQL = `select r.id, p.subject, s.number as site, v.code as visit, f.code as form, r.instance, r.status, r.source,
    r.updated_at, r.values, r.not_done, r.tables
  from records r join patients p on p.id = r.patient_id join sites s on s.id = r.site_id
    join visits v on v.id = r.visit_id join forms f on f.id = r.form_id
  where r.study_id = $1 and r.site_id = any($2) and p.data_use_withdrawn_at is null and r.id > $3
  order by r.id limit $4`;

/** The bulk read's study: the records seeded (set-up, not measured) and a key to read them. */
export async function seedBulkStudy(knex: Knex, log: (line: string) => void): Promise<{ study: BenchStudy; bearer: string; total: number }> {
  const study = await createStudy(knex, demoDesign('BULK'));
  const key = only(await makeKeys(knex, study, 1, 'Bench sponsor warehouse'), 'the keys');
  log(`bulk read: seeding ${PATIENTS * SCHEDULE.length} records`);
  const seeded = await timed(async () => {
    const patients = await seedPatients(knex, study, PATIENTS, { sex: 'male', birthYear: 1958, enrolledOn: ENROLLED_ON });
    return seedRecords(knex, study, bulkRecords(study, patients));
  });
  await knex.raw('analyze records, patients, sites, visits, forms');
  log(`bulk read: ${seeded.value} records seeded in ${(seeded.ms / 1000).toFixed(1)} s`);
  return { study, bearer: key.key, total: seeded.value };
}

/** Every page of the records call at limit=1000, following `next` to the end, as a sponsor's full load would; the rows read. */
export async function readAllRecords(serviceUrl: string, study: BenchStudy, bearer: string, total: number): Promise<number> {
  const base = `${serviceUrl}/api/v1/studies/${study.code}/records?limit=${PAGE}`;
  let rows = 0;
  let next: string | null = null;
  do {
    const answer = await request('GET', next ? `${base}&after=${encodeURIComponent(next)}` : base, { key: bearer });
    expectStatus(answer, 200, 'records page');
    const page = JSON.parse(answer.text) as { records: unknown[]; next: string | null };
    rows += page.records.length;
    next = page.next;
  } while (next);
  if (rows !== total) throw new Error(`bulk read: read ${rows} rows of ${total}`);
  return rows;
}

export async function bulkRead(ctx: BenchContext): Promise<ScenarioResult[]> {
  const { knex } = ctx.db;
  const seeding = await timed(() => seedBulkStudy(knex, ctx.log));
  const { study, bearer, total } = seeding.value;
  const service = await ctx.service('bulk-read');
  const readAll = () => readAllRecords(service.url, study, bearer, total);

  const client = new pg.Client({ connectionString: ctx.db.url });
  await client.connect();
  const siteIds = [...study.sites.values()];
  const selectAll = async (): Promise<number> => {
    let rows = 0;
    let after = 0;
    for (;;) {
      const page = await client.query<{ id: number }>(FLOOR_SQL, [study.id, siteIds, after, PAGE]);
      rows += page.rows.length;
      if (page.rows.length < PAGE) break;
      after = at(page.rows, page.rows.length - 1, 'the page').id;
    }
    if (rows !== total) throw new Error(`bulk read floor: selected ${rows} rows of ${total}`);
    return rows;
  };

  ctx.log('bulk read: warm-up');
  await resetRateWindows(knex);
  await readAll();
  await selectAll();
  service.markMeasuring();
  const reps = Math.max(1, Math.min(ctx.repetitions, Number(process.env.BENCH_BULK_REPS ?? 3)));
  const runs: number[] = [];
  const floorRuns: number[] = [];
  for (let i = 1; i <= reps; i++) {
    await resetRateWindows(knex);
    const read = await timed(readAll);
    const floor = await timed(selectAll);
    runs.push(total / (read.ms / 1000));
    floorRuns.push(total / (floor.ms / 1000));
    ctx.log(`bulk read ${i}/${reps}: ${(read.ms / 1000).toFixed(1)} s through the API, ${(floor.ms / 1000).toFixed(1)} s plain`);
  }
  await service.stop();
  const exports = await exportsOfStudy(ctx, study, bearer, total, selectAll, reps);
  await client.end();
  const bulk = summarise({
    scenario: 'bulk_read',
    title: `bulk read (${total} records, limit=${PAGE})`,
    unit: 'rows/s',
    runs,
    floorName: 'the same keyset query through plain pg',
    floorRuns,
    goal: ratioAtLeast(2 / 3, '0.67'),
    details: { records: total, pages: Math.ceil(total / PAGE), seeding_s: Math.round(seeding.ms / 100) / 10 },
  });
  return [bulk, ...exports];
}
