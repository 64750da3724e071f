import { expect } from 'chai';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { inTransaction } from '../../src/db/stores.js';
import { addPerson, createStudyWorld, demoDesign, giveConsent, makeKey, operator, type StudyWorld } from './factories.js';
import type { RecordInput } from '../../src/domain/records/submitRecords.js';
import type { AnswerOf } from './answerTypes.js';
import type { TestApp } from './testApp.js';
import { resetDatabase } from './testDatabase.js';

/** A study with data of every field type, both sites, a repeated visit, marks, tables, an unblinded form and a withdrawn patient. */
export interface ExportWorld extends StudyWorld {
  /** Read key of a blinded manager: no unblinded-team form. */
  blindedKey: string;
  /** Read key for site 02 only. */
  site02Key: string;
  /** The patient who withdrew consent to data use: in no export. */
  withdrawn: string;
}

/** Builds the export tests' study through the API, as an integrator would fill it. */
export async function createExportWorld(app: TestApp, code: string): Promise<ExportWorld> {
  await resetDatabase(app.db.knex);
  const world = await createStudyWorld(app.db.knex, demoDesign(code));
  const base = `/api/v1/studies/${code}`;
  const subjects: string[] = [];
  for (const [site, sex, year] of [['01', 'female', 1961], ['01', 'male', 1970], ['02', 'female', 1985], ['01', 'other', 1990]] as const) {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base}/patients`, { key: world.key, body: { site, sex, birth_year: year, enrolled_on: '2026-01-05' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    subjects.push(res.body.subject);
    await giveConsent(app.db.knex, code, res.body.subject);
  }
  const [a, b, c, d] = subjects as [string, string, string, string];
  const records: RecordInput[] = [
    { subject: a, visit: 'screening', form: 'dm', values: { sex: '1', ethnicity: '2', height: '168', weight: '71.5' } },
    { subject: a, visit: 'screening', form: 'vs', values: { vsdate: '2025-12-28', sbp: '232', dbp: '95', hr: '71', temp: '36.6' }, not_done: { rr: 'ND', weight: 'UNK' } },
    { subject: a, visit: 'screening', form: 'mh', tables: { conditions: [
      { term: 'Hypertension', code: 'I10', onset: '2015-03-01', ongoing: 'yes' },
      { term: 'Appendicitis "acute" & <rare>', onset: '2001-07-10', ongoing: 'no' },
    ] } },
    { subject: a, visit: 'unscheduled', instance: 2, form: 'vs', values: { vsdate: '2026-02-20', sbp: '140', dbp: '85', hr: '66' } },
    { subject: a, visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-0042', arm: 'B' } },
    { subject: b, visit: 'screening', form: 'vs', status: 'draft', values: { vsdate: '2025-12-29', sbp: '128' } },
    { subject: b, visit: 'week4', form: 'ae', tables: { events: [{ term: 'Headache', onset: '2026-02-01', severity: 'mild', serious: 'no' }] } },
    { subject: c, visit: 'screening', form: 'vs', values: { vsdate: '2025-12-30', sbp: '118', dbp: '76', hr: '80' } },
    { subject: c, visit: 'screening', form: 'lab_chem', status: 'draft', values: { glucose: '5.4', creat: '83' } },
    { subject: d, visit: 'screening', form: 'vs', values: { vsdate: '2025-12-30', sbp: '150', dbp: '90', hr: '75' } },
  ];
  const sent = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base}/records`, { key: world.key, body: { records } });
  expect(sent.status, JSON.stringify(sent.body)).to.equal(200);
  expect(sent.body.counts.error, JSON.stringify(sent.body.results)).to.equal(0);
  // An update, so that a value has a history in the audit trail.
  const updated = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base}/records`, { key: world.key, body: { records: [{ subject: c, visit: 'screening', form: 'vs', update: true, values: { hr: '82' } }] } });
  expect(updated.body.counts.ok, JSON.stringify(updated.body)).to.equal(1);
  await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: code, subject: d, change: { withdrawn: '2026-02-01', dataUse: true } }));

  const blindedManager = `blinded-${code.toLowerCase()}@sdx.test`;
  await addPerson(app.db.knex, code, blindedManager, { role: 'manager', canExport: true, unblinded: false });
  const blinded = await makeKey(app.db.knex, { study: code, by: blindedManager, canWrite: false, canEnrol: false });
  const site02 = await makeKey(app.db.knex, { study: code, by: world.manager, canWrite: false, canEnrol: false, sites: ['02'] });
  return { ...world, blindedKey: blinded.key, site02Key: site02.key, withdrawn: d };
}

/** Every saved record the key may read, through the records read itself. */
export async function recordsRead(app: TestApp, code: string, key: string): Promise<AnswerOf<'listFormRecords', 200>['records']> {
  const rows: AnswerOf<'listFormRecords', 200>['records'] = [];
  let after: string | null = null;
  do {
    const query: string = after ? `?after=${after}` : '';
    const page = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${code}/records${query}`, { key });
    expect(page.status).to.equal(200);
    rows.push(...page.body.records);
    after = page.body.next;
  } while (after);
  return rows;
}
