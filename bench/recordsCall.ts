/**
 * Scenario "records call": one POST /records of 500 records, each a form of 12 fields with ranges and
 * one edit check per form; about one record in ten breaks a range and one in twenty an edit check, so
 * the call opens automatic queries and writes the whole audit trail (one row per value, one per query).
 *
 * Floor: the very rows that call wrote (records, queries, audit rows), read back and inserted again for
 * other patients by one plain Knex transaction, with no look-up and no check. The ratio says what the
 * records path costs on top of writing its rows.
 */
import type { Knex } from 'knex';
import { parseStudyDesign } from '../src/domain/studyDesign/parseStudyDesign.js';
import type { FieldDef, StudyDesign } from '../src/domain/studyDesign/types.js';
import { at, only, present } from '../test/helpers/only.js';
import type { BenchContext } from './lib/context.js';
import { expectStatus, request } from './lib/http.js';
import { ratioAtMost, summarise, type ScenarioResult } from './lib/results.js';
import { cpuMs } from './lib/service.js';
import { timed } from './lib/stats.js';
import { createStudy, demoDesign, makeKeys, seedPatients, type BenchPatient } from './lib/world.js';

const PATIENTS_PER_CALL = 50;
const VISITS = ['screening', 'baseline', 'week4', 'week12', 'unscheduled'];
const FORMS = ['labs12', 'vitals12'];

const decimal = (code: string, label: string, unit: string, decimals: number, min: number, max: number, required = true): FieldDef =>
  ({ code, label, type: 'decimal', unit, decimals, min, max, required });
const integer = (code: string, label: string, unit: string | undefined, min: number, max: number, required = true): FieldDef =>
  ({ code, label, type: 'integer', ...(unit ? { unit } : {}), min, max, required });

/** The demo study plus two forms of 12 ranged fields, each with one query edit check, in every visit. */
export function recordsDesign(code: string): StudyDesign {
  const design = demoDesign(code, (d) => {
    d.forms.push(
      {
        code: 'labs12', name: 'Chemistry panel', team: 'all', fields: [
          { code: 'ldate', label: 'Date of sampling', type: 'date', required: true },
          decimal('na', 'Sodium', 'mmol/L', 0, 120, 160), decimal('k', 'Potassium', 'mmol/L', 1, 2.5, 7),
          decimal('cl', 'Chloride', 'mmol/L', 0, 80, 120), decimal('hco3', 'Bicarbonate', 'mmol/L', 0, 10, 40),
          decimal('urea', 'Urea', 'mmol/L', 1, 1, 30), decimal('creat', 'Creatinine', 'umol/L', 0, 20, 1000),
          decimal('ca', 'Calcium', 'mmol/L', 2, 1.5, 3.5), decimal('mg', 'Magnesium', 'mmol/L', 2, 0.4, 2),
          decimal('phos', 'Phosphate', 'mmol/L', 2, 0.5, 3), decimal('alb', 'Albumin', 'g/L', 0, 15, 60, false),
          decimal('crp', 'C-reactive protein', 'mg/L', 1, 0, 300, false),
        ],
      },
      {
        code: 'vitals12', name: 'Extended vital signs', team: 'all', fields: [
          { code: 'vdate', label: 'Date of measurement', type: 'date', required: true },
          integer('sbp', 'Systolic blood pressure', 'mm[Hg]', 70, 220), integer('dbp', 'Diastolic blood pressure', 'mm[Hg]', 40, 130),
          integer('hr', 'Heart rate', '/min', 30, 200), integer('rr', 'Respiratory rate', '/min', 6, 40),
          decimal('temp', 'Body temperature', 'Cel', 1, 34, 42), integer('spo2', 'Oxygen saturation', '%', 70, 100),
          decimal('weight', 'Body weight', 'kg', 1, 30, 250), decimal('height', 'Height', 'cm', 1, 100, 250, false),
          decimal('waist', 'Waist circumference', 'cm', 1, 40, 200, false), integer('pain', 'Pain score', undefined, 0, 10, false),
          decimal('glucose', 'Capillary glucose', 'mmol/L', 1, 1, 40, false),
        ],
      },
    );
    for (const visit of d.visits) if (VISITS.includes(visit.code)) visit.forms.push(...FORMS);
    d.edit_checks.push(
      {
        code: 'na_above_cl', form: 'labs12', field: 'cl', action: 'query',
        rule: { or: [{ missing: ['na', 'cl'] }, { '>': [{ var: 'na' }, { var: 'cl' }] }] },
        message: 'Chloride must be below sodium', message_ru: 'Хлор должен быть ниже натрия',
      },
      {
        code: 'dbp_below_sbp12', form: 'vitals12', field: 'dbp', action: 'query',
        rule: { or: [{ missing: ['dbp', 'sbp'] }, { '<': [{ var: 'dbp' }, { var: 'sbp' }] }] },
        message: 'Diastolic pressure must be below systolic pressure', message_ru: 'Диастолическое давление должно быть ниже систолического',
      },
    );
  });
  // Through the design file's own parser and schema, as `sdx study load` would read it.
  return parseStudyDesign(JSON.stringify(design));
}

/** A small deterministic generator, so every run sends the same kind of data. */
export function randomSource(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function between(random: () => number, min: number, max: number, decimals: number): string {
  return (min + random() * (max - min)).toFixed(decimals);
}

const ENROLLED_ON = '2026-01-05';
/** Each visit's planned day for a patient enrolled on ENROLLED_ON, so every record's date lies in its visit's window. */
const VISIT_DAY: Record<string, string> = {
  screening: '2025-12-22', baseline: '2026-01-05', week4: '2026-02-02', week12: '2026-03-30', unscheduled: '2026-03-02',
};

/** Values of one record taken on `day`; `breach` puts one value out of its range, `check` breaks the form's edit check. */
function recordValues(form: string, day: string, random: () => number, breach: boolean, check: boolean): Record<string, string> {
  if (form === 'labs12') {
    const v: Record<string, string> = {
      ldate: day, na: between(random, 135, 145, 0), k: between(random, 3.5, 5, 1), cl: between(random, 98, 106, 0),
      hco3: between(random, 22, 29, 0), urea: between(random, 2.5, 7.5, 1), creat: between(random, 60, 110, 0),
      ca: between(random, 2.15, 2.55, 2), mg: between(random, 0.7, 1, 2), phos: between(random, 0.8, 1.5, 2),
      alb: between(random, 35, 50, 0), crp: between(random, 0, 10, 1),
    };
    if (breach) v.k = '7.9';
    if (check) { v.na = '121'; v.cl = '121'; }
    return v;
  }
  const v: Record<string, string> = {
    vdate: day, sbp: between(random, 110, 150, 0), dbp: between(random, 65, 90, 0), hr: between(random, 55, 95, 0),
    rr: between(random, 12, 20, 0), temp: between(random, 36.1, 37.4, 1), spo2: between(random, 94, 99, 0),
    weight: between(random, 55, 110, 1), height: between(random, 150, 195, 1), waist: between(random, 70, 120, 1),
    pain: between(random, 0, 3, 0), glucose: between(random, 4, 8, 1),
  };
  if (breach) v.sbp = '235';
  if (check) { v.sbp = '100'; v.dbp = '104'; }
  return v;
}

/** The request body of one call: every form of every visit of 50 patients, 500 records. */
export function recordsBody(patients: BenchPatient[], seed: number): string {
  const random = randomSource(seed);
  const records = patients.flatMap((p) => VISITS.flatMap((visit) => FORMS.map((form) => {
    const roll = random();
    return { subject: p.subject, visit, form, values: recordValues(form, present(VISIT_DAY[visit], `the day of ${visit}`), random, roll < 0.1, roll >= 0.1 && roll < 0.15) };
  })));
  return JSON.stringify({ records });
}

/** A stored row, copied column by column; the members the copy rewrites are named. */
type StoredRow = Record<string, unknown> & { id: number; patient_id: number };

interface Written {
  records: StoredRow[];
  queries: (StoredRow & { record_id: number })[];
  audit: (StoredRow & { record_id: number; details: { query_id?: number } | null })[];
}

/** What the records call wrote for these patients, as stored. */
async function writtenFor(knex: Knex, patients: BenchPatient[]): Promise<Written> {
  const records = await knex<Written['records'][number]>('records').whereIn('patient_id', patients.map((p) => p.id)).orderBy('id');
  const ids = records.map((r) => r.id);
  const queries = await knex<Written['queries'][number]>('queries').whereIn('record_id', ids).orderBy('id');
  const audit = await knex<Written['audit'][number]>('audit_events').whereIn('record_id', ids).orderBy('id');
  return { records, queries, audit };
}

/** A stored row as Knex inserts it again: no id, jsonb members as JSON text. */
function copyOf(row: StoredRow, changes: Record<string, unknown>): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...row, ...changes };
  delete rest.id;
  return Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v]));
}

/** Multi-row inserts sliced under PostgreSQL's 65,535 bind parameters. */
async function insertAll(trx: Knex, table: string, rows: Record<string, unknown>[], returning?: 'id'): Promise<{ id: number }[]> {
  const out: { id: number }[] = [];
  const per = Math.floor(60_000 / Math.max(1, Object.keys(rows[0] ?? {}).length));
  for (let i = 0; i < rows.length; i += per) {
    const query = trx(table).insert(rows.slice(i, i + per));
    if (returning) out.push(...(await query.returning<{ id: number }[]>(returning)));
    else await query;
  }
  return out;
}

/**
 * The floor: the same rows for other patients (patient i of the call becomes patient i of `target`),
 * every column copied as stored (audit hashes included), by one transaction of multi-row inserts.
 * Returns the milliseconds the transaction took.
 */
async function insertPlainly(knex: Knex, written: Written, source: BenchPatient[], target: BenchPatient[]): Promise<number> {
  const patientOf = new Map(source.map((p, i) => [p.id, at(target, i, 'the target patients')]));
  const targetOf = (r: StoredRow) => present(patientOf.get(r.patient_id), `the target of patient ${r.patient_id}`);
  const moved = (r: StoredRow) => ({ patient_id: targetOf(r).id });
  const records = written.records.map((r) => copyOf(r, { ...moved(r), site_id: targetOf(r).siteId }));
  const { ms } = await timed(() => knex.transaction(async (trx) => {
    const inserted = await insertAll(trx, 'records', records, 'id');
    const recordIds = new Map(written.records.map((r, i) => [r.id, at(inserted, i, 'the records inserted').id]));
    const queries = await insertAll(trx, 'queries', written.queries.map((q) => copyOf(q, {
      ...moved(q), site_id: targetOf(q).siteId, record_id: recordIds.get(q.record_id),
    })), 'id');
    const queryIds = new Map(written.queries.map((q, i) => [q.id, at(queries, i, 'the queries inserted').id]));
    await insertAll(trx, 'audit_events', written.audit.map((a) => copyOf(a, {
      ...moved(a), record_id: recordIds.get(a.record_id),
      details: a.details?.query_id ? { ...a.details, query_id: queryIds.get(a.details.query_id) } : a.details,
    })));
  }));
  return ms;
}

export async function recordsCall(ctx: BenchContext): Promise<ScenarioResult[]> {
  const { knex } = ctx.db;
  const study = await createStudy(knex, recordsDesign('RECS'));
  const key = only(await makeKeys(knex, study, 1, 'Bench LIMS'), 'the keys');
  const reps = ctx.repetitions;
  // One set of patients per call: the warm-up, each measured call, and each floor run.
  const patients = await seedPatients(knex, study, PATIENTS_PER_CALL * (2 * reps + 1), { sex: 'female', birthYear: 1960, enrolledOn: ENROLLED_ON });
  const set = (i: number) => patients.slice(i * PATIENTS_PER_CALL, (i + 1) * PATIENTS_PER_CALL);
  const service = await ctx.service('records');
  const url = `${service.url}/api/v1/studies/${study.code}/records`;

  const call = async (patientsOfCall: BenchPatient[], seed: number) => {
    const body = recordsBody(patientsOfCall, seed);
    const { ms, value } = await timed(() => request('POST', url, { key: key.key, body }));
    expectStatus(value, 200, 'records call');
    const { counts } = JSON.parse(value.text) as { counts: { ok: number; warn: number; skip: number; error: number } };
    if (counts.error > 0 || counts.skip > 0 || counts.ok + counts.warn !== 500) throw new Error(`records call: unexpected counts ${JSON.stringify(counts)}`);
    return { ms, counts };
  };

  ctx.log('records call: warm-up');
  await call(set(0), 1);
  service.markMeasuring();
  const runs: number[] = [];
  const floorRuns: number[] = [];
  let rows: Record<string, number> = {};
  let counts: Record<string, number> = {};
  let serviceCpu = 0;
  for (let i = 1; i <= reps; i++) {
    const cpuBefore = cpuMs(service.pid);
    const measured = await call(set(i), i + 1);
    serviceCpu += cpuMs(service.pid) - cpuBefore;
    runs.push(measured.ms);
    counts = measured.counts;
    const written = await writtenFor(knex, set(i));
    const floorPatients = set(reps + i);
    floorRuns.push(await insertPlainly(knex, written, set(i), floorPatients));
    const copied = await writtenFor(knex, floorPatients);
    rows = { records: written.records.length, queries: written.queries.length, audit_rows: written.audit.length };
    if (copied.records.length !== written.records.length || copied.queries.length !== written.queries.length || copied.audit.length !== written.audit.length) {
      throw new Error('records floor: it did not write the same rows as the call');
    }
    ctx.log(`records call ${i}/${reps}: ${measured.ms.toFixed(0)} ms, floor ${at(floorRuns, i - 1, 'the floor runs').toFixed(0)} ms (${JSON.stringify(rows)})`);
  }
  await service.stop();
  return [summarise({
    scenario: 'records_call',
    title: 'records call (500 records × 12 fields)',
    unit: 'ms',
    runs,
    floorName: 'the same rows by one plain Knex transaction',
    floorRuns,
    goal: ratioAtMost(3),
    details: { rows_written_per_call: rows, result_counts: counts, service_cpu_ms_per_call: Math.round(serviceCpu / reps) },
  })];
}
