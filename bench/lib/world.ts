/**
 * The benchmark's data: studies, people and keys are made through the same use cases as the command
 * line (so they are exactly what production holds), while bulk rows (thousands of patients, 100,000
 * records) are inserted with multi-row statements. Seeding is set-up, never measured; the bulk rows
 * are built with the records path's own content rules (`mergeContent`), so a read call sees them
 * exactly as if they had been sent through the API.
 */
import { readFileSync } from 'node:fs';
import type { Knex } from 'knex';
import { at } from '../../test/helpers/only.js';
import type { Actor } from '../../src/domain/actor.js';
import { createApiKey } from '../../src/domain/apiKeys/createApiKey.js';
import { grantRole } from '../../src/domain/people/roles.js';
import { addUser } from '../../src/domain/people/users.js';
import { subjectNumber } from '../../src/domain/patients/subjectNumber.js';
import { completenessIssues, EMPTY_CONTENT, mergeContent, type RecordContent, type SentContent } from '../../src/domain/records/recordContent.js';
import { loadStudy } from '../../src/domain/studies/loadStudy.js';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';
import { createStores, inTransaction } from '../../src/db/stores.js';

const operator: Actor = { kind: 'operator', name: 'bench' };

export interface BenchStudy {
  code: string;
  id: number;
  design: StudyDesign;
  managerEmail: string;
  /** Site id by site number. */
  sites: Map<string, number>;
  visits: Map<string, number>;
  forms: Map<string, number>;
}

export interface BenchPatient {
  id: number;
  subject: string;
  siteId: number;
}

/** The demo study's design under another code (studies/demo.yaml, parsed and checked like `sdx study load`). */
export function demoDesign(code: string, change: (design: StudyDesign) => void = () => undefined): StudyDesign {
  const design = parseStudyDesign(readFileSync('studies/demo.yaml', 'utf8'));
  design.code = code;
  change(design);
  return design;
}

/** Loads a study and gives it an unblinded manager who may export: the maker of every bench key. */
export async function createStudy(knex: Knex, design: StudyDesign): Promise<BenchStudy> {
  const managerEmail = `manager-${design.code.toLowerCase()}@bench.test`;
  await inTransaction(knex, async (s) => {
    await loadStudy(s.studies, design);
    await addUser(s.people, { email: managerEmail, name: `Bench manager ${design.code}` });
    await grantRole(s, operator, { study: design.code, email: managerEmail, role: 'manager', canExport: true, unblinded: true });
  });
  const stores = createStores(knex);
  const study = (await stores.studies.findByCode(design.code))!;
  const ids = await stores.studies.designIds(study);
  const sites = new Map((await stores.studies.sites(study)).map((s) => [s.number, s.id]));
  return { code: design.code, id: study.id, design: study.design, managerEmail, sites, visits: ids.visits, forms: ids.forms };
}

/** API keys of the study's manager, each with read, write and enrol rights on every site. */
export async function makeKeys(knex: Knex, study: BenchStudy, count: number, name: string): Promise<{ key: string; id: number }[]> {
  const keys: { key: string; id: number }[] = [];
  for (let i = 0; i < count; i++) {
    const made = await inTransaction(knex, (s) => createApiKey(s, {
      study: study.code, by: study.managerEmail, name: count === 1 ? name : `${name} ${i + 1}`,
      canRead: true, canWrite: true, canEnrol: true, termDays: 30,
    }));
    keys.push({ key: made.key, id: made.id });
  }
  return keys;
}

/** Rows per multi-row INSERT: far below PostgreSQL's 65,535 bind parameters for every table here. */
const CHUNK = 1000;

/** Inserts `rows` in chunks; with `returning`, gives the new rows' ids in the order of `rows`. */
async function insertChunked(knex: Knex, table: string, rows: Record<string, unknown>[], returning?: 'id'): Promise<{ id: number }[]> {
  const out: { id: number }[] = [];
  for (let i = 0; i < rows.length; i += CHUNK) {
    const query = knex(table).insert(rows.slice(i, i + CHUNK));
    if (returning) out.push(...(await query.returning<{ id: number }[]>(returning)));
    else await query;
  }
  return out;
}

/**
 * Patients numbered by the study's own format (`01-001`…) alternately at the study's sites, each with
 * a consent given before enrolment; the sites' sequences are advanced past them, as enrolment would.
 */
export async function seedPatients(
  knex: Knex,
  study: BenchStudy,
  count: number,
  who: { sex: 'female' | 'male'; birthYear: number; enrolledOn: string; site?: string },
): Promise<BenchPatient[]> {
  const sites = who.site ? [[who.site, study.sites.get(who.site)!] as const] : [...study.sites.entries()];
  const { rows } = await knex.raw<{ rows: { id: number; last_seq: number }[] }>('select id, last_seq from sites where study_id = ?', [study.id]);
  const seq = new Map<number, number>(rows.map((r) => [r.id, r.last_seq]));
  const planned = Array.from({ length: count }, (_, i) => {
    const [number, siteId] = at(sites, i % sites.length, 'the sites');
    const next = seq.get(siteId)! + 1;
    seq.set(siteId, next);
    return {
      study_id: study.id, site_id: siteId, subject: subjectNumber(study.design.subject_format, number, next),
      sex: who.sex, birth_year: who.birthYear, enrolled_on: who.enrolledOn,
    };
  });
  const inserted = await insertChunked(knex, 'patients', planned, 'id');
  await insertChunked(knex, 'consents', inserted.map((p) => ({ patient_id: p.id, given_on: who.enrolledOn })));
  for (const [siteId, last] of seq) await knex('sites').where({ id: siteId }).update({ last_seq: last });
  return inserted.map((p, i) => {
    const row = at(planned, i, 'the patients planned');
    return { id: p.id, subject: row.subject, siteId: row.site_id };
  });
}

/** A record's content as the records path stores it, refusing anything the API would refuse. */
export function storedContent(design: StudyDesign, formCode: string, sent: SentContent): RecordContent {
  const form = design.forms.find((f) => f.code === formCode)!;
  const { content, issues } = mergeContent(form, EMPTY_CONTENT, sent);
  const all = [...issues, ...completenessIssues(form, content)];
  if (all.length > 0) throw new Error(`bench data for form ${formCode} is not valid: ${JSON.stringify(all)}`);
  return content;
}

export interface SeedRecord {
  patient: BenchPatient;
  visit: string;
  form: string;
  instance: number;
  content: RecordContent;
}

/** Inserts complete records as the API would have saved them (`source` api). */
export async function seedRecords(knex: Knex, study: BenchStudy, records: Iterable<SeedRecord>): Promise<number> {
  let batch: Record<string, unknown>[] = [];
  let count = 0;
  const flush = async () => {
    if (batch.length > 0) await knex('records').insert(batch);
    count += batch.length;
    batch = [];
  };
  for (const r of records) {
    batch.push({
      study_id: study.id, patient_id: r.patient.id, site_id: r.patient.siteId, visit_id: study.visits.get(r.visit)!,
      form_id: study.forms.get(r.form)!, instance: r.instance, status: 'complete', source: 'api',
      values: JSON.stringify(r.content.values), not_done: JSON.stringify(r.content.notDone), tables: JSON.stringify(r.content.tables),
    });
    if (batch.length === CHUNK) await flush();
  }
  await flush();
  return count;
}

/**
 * Starts every rate window afresh, so one phase's requests never count against the next. A load run's last
 * requests may still be counted as this runs, so it takes the locks in the service's order (keys, then their
 * minutes: src/db/rateLimits.ts); a bare delete locks the minutes in the table's order and can deadlock with them.
 */
export async function resetRateWindows(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw('select id from api_keys order by id for update');
    await trx('rate_limits').del();
  });
}
