import { expect } from 'chai';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { submitRecords } from '../../src/domain/records/submitRecords.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import { addPerson, createStudyWorld, demoDesign, giveConsent, makeKey, operator, type StudyWorld } from '../helpers/factories.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, only, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * The records call (submitFormRecords) through real HTTP: every data-entry rule, what the database
 * holds afterwards (records, queries, audit rows), concurrency, validate-only, both languages, and
 * one 500-record request that mixes every kind of result.
 */

type Rec = Record<string, unknown>;
type RecordsResult = AnswerOf<'submitFormRecords', 200>;
type RecordResult = RecordsResult['results'][number];
/** A saved form instance as the database holds it, with its site's number. */
interface SavedRow { id: number; status: string; source: string; values: Record<string, string>; not_done: Record<string, string>; tables: Rec; site: string }
interface AuditRow { action: string; field_code: string | null; old_value: string | null; new_value: string | null; author: string; reason: string | null; details: Record<string, unknown> }
interface QueryRow { field_code: string; origin: string; check_code: string | null; status: string; message: string; opened_by: string; site: string }

const ENROLLED_ON = '2026-01-24';
type Visit = 'screening' | 'baseline' | 'week4' | 'week12' | 'unscheduled';
/** A vital-signs date inside each visit's window for a patient enrolled on ENROLLED_ON: any other opens a query (issue 19.7). */
const VISIT_DAY: Record<Visit, string> = { screening: '2026-01-10', baseline: '2026-01-24', week4: '2026-02-21', week12: '2026-04-18', unscheduled: '2026-01-10' };
const vitals = (over: Record<string, string> = {}, visit: Visit = 'screening') => ({ vsdate: VISIT_DAY[visit], sbp: '120', dbp: '80', hr: '70', ...over });

/** The id a result names (of the saved record, or of the existing one for a skip), failing when it names none. */
function recordIdOf(result: RecordResult | undefined): number {
  if (typeof result?.record_id !== 'number') throw new Error(`expected a record id in ${JSON.stringify(result)}`);
  return result.record_id;
}

/** A study with every field type the design format has (the demo lacks time, multiple choice and numeric columns). */
const typesDesign = () => demoDesign('TYPES', (d) => {
  d.blinded = false;
  d.consent_required = false;
  d.forms.push({
    code: 'misc', name: 'Every type', team: 'all', fields: [
      { code: 'n_int', label: 'Integer', type: 'integer', required: false, min: 0, max: 10 },
      { code: 'n_dec', label: 'Decimal', type: 'decimal', required: false, decimals: 2 },
      { code: 'd_date', label: 'Date', type: 'date', required: false },
      { code: 't_time', label: 'Time', type: 'time', required: false },
      { code: 'c_one', label: 'Choice', type: 'choice', required: false, options: [{ code: 'a', label: 'A' }, { code: 'b', label: 'B' }] },
      { code: 'c_many', label: 'Multiple choice', type: 'multichoice', required: false, options: [{ code: '1', label: 'One' }, { code: '2', label: 'Two' }, { code: '3', label: 'Three' }] },
      { code: 'yn', label: 'Yes or no', type: 'yesno', required: false },
      { code: 'note', label: 'Text', type: 'text', required: false },
      {
        code: 'doses', label: 'Doses', type: 'table', required: false, columns: [
          { code: 'amount', label: 'Amount', type: 'decimal', unit: 'mg', decimals: 1, required: true },
          { code: 'at', label: 'Time', type: 'time', required: false },
        ],
      },
      {
        // Codes of the longest length the format allows: a cell address is then 70 characters long.
        code: 'a_table_code_of_thirty_two_chars', label: 'Long codes', type: 'table', required: false, columns: [
          { code: 'a_column_code_of_thirty_two_char', label: 'Count', type: 'integer', min: 1, max: 9, required: false },
        ],
      },
    ],
  });
  at(d.visits, 0).forms.push('misc');
});

describe('submitFormRecords', () => {
  const { app, world } = useStudyWorld();
  let types: StudyWorld;
  let blindedKey: string;
  let site01Key: string;
  let readOnlyKey: string;
  let patientNo = 0;

  /** Sends records; the answer's body is the results unless the test names a refusal's type (`submit<Problem>`). */
  const submit = <Body = RecordsResult>(records: Rec[], options: { key?: string; query?: string; code?: string } = {}) =>
    app.call<Body>('POST', `/api/v1/studies/${options.code ?? world.code}/records${options.query ?? ''}`, { key: options.key ?? world.key, body: { records } });
  const knex = () => app.db.knex;
  const count = async (table: string) => Number(only(await knex()(table).count({ n: '*' })).n);
  /** What a write may leave behind: records, queries and the audit rows of records and queries. */
  const totals = async () => ({
    records: await count('records'), queries: await count('queries'),
    audit: Number(only(await knex()('audit_events').where('action', 'like', 'record.%').orWhere('action', 'like', 'query.%').count({ n: '*' })).n),
  });

  /** Enrols a patient through the API and, unless told otherwise, records a consent. */
  async function newPatient(site = '01', options: { consent?: boolean; code?: string; key?: string } = {}): Promise<string> {
    const subject = `${site}-T${String(++patientNo).padStart(4, '0')}`;
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${options.code ?? world.code}/patients`, {
      key: options.key ?? world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: ENROLLED_ON, subject },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    if (options.consent !== false) await giveConsent(knex(), options.code ?? world.code, subject);
    return subject;
  }

  /** The saved form instance, with its site, or undefined. */
  async function recordAt(subject: string, visit: string, form: string, instance = 1): Promise<SavedRow | undefined> {
    return knex()('records as r')
      .join('patients as p', 'p.id', 'r.patient_id').join('visits as v', 'v.id', 'r.visit_id').join('forms as f', 'f.id', 'r.form_id')
      .join('sites as s', 's.id', 'r.site_id')
      .where({ 'p.subject': subject, 'v.code': visit, 'f.code': form, 'r.instance': instance })
      .first<SavedRow | undefined>('r.id', 'r.status', 'r.source', 'r.values', 'r.not_done', 'r.tables', 's.number as site');
  }

  /** The saved form instance, failing the test when there is none. */
  const savedAt = async (...place: Parameters<typeof recordAt>) => present(await recordAt(...place), `a record at ${place.join(' ')}`);

  const auditOf = (recordId: number) => knex()('audit_events').where({ record_id: recordId }).orderBy('id')
    .select<AuditRow[]>('action', 'field_code', 'old_value', 'new_value', 'author', 'reason', 'details');
  const queriesOf = (recordId: number) => knex()('queries as q').join('sites as s', 's.id', 'q.site_id').where({ record_id: recordId }).orderBy('q.id')
    .select<QueryRow[]>('q.field_code', 'q.origin', 'q.check_code', 'q.status', 'q.message', 'q.opened_by', 's.number as site');

  before(async () => {
    await addPerson(knex(), world.code, 'blinded-manager@sdx.test', { role: 'manager', canExport: true, unblinded: false });
    blindedKey = (await makeKey(knex(), { study: world.code, by: 'blinded-manager@sdx.test', name: 'LIMS' })).key;
    site01Key = (await makeKey(knex(), { study: world.code, by: world.manager, sites: ['01'] })).key;
    readOnlyKey = (await makeKey(knex(), { study: world.code, by: world.manager, canWrite: false, canEnrol: false })).key;
    types = await createStudyWorld(knex(), typesDesign());
  });

  describe('saving', () => {
    it('saves a complete record: ok/saved with its id, values as sent, source api, one audit row per value by "<key name> (API)"', async () => {
      const subject = await newPatient('02');
      const res = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals({ temp: '36.6' }) }]);
      expect(res.status).to.equal(200);
      const saved = await savedAt(subject, 'screening', 'vs');
      expect(res.body).to.deep.equal({
        results: [{ index: 0, status: 'ok', code: 'saved', message: 'Saved.', record_id: saved.id, queries_opened: 0, errors: [] }],
        counts: { ok: 1, warn: 0, skip: 0, error: 0 },
      });
      expect(saved).to.deep.include({ status: 'complete', source: 'api', site: '02', values: vitals({ temp: '36.6' }), not_done: {}, tables: {} });
      const audit = await auditOf(saved.id);
      expect(audit.map((a) => [a.action, a.field_code, a.old_value, a.new_value])).to.deep.equal([
        ['record.value_set', 'dbp', null, '80'], ['record.value_set', 'hr', null, '70'], ['record.value_set', 'sbp', null, '120'],
        ['record.value_set', 'temp', null, '36.6'], ['record.value_set', 'vsdate', null, '2026-01-10'],
      ]);
      for (const a of audit) expect(a).to.deep.include({ author: 'Test system (API)', reason: 'Data sent through the API key "Test system"' });
      expect(await queriesOf(saved.id)).to.deep.equal([]);
    });

    it('defaults status to complete and instance to 1, and saves a draft as warn/saved_as_draft', async () => {
      const subject = await newPatient();
      const res = await submit([
        { subject, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'baseline', form: 'vs', status: 'draft', values: { vsdate: '2026-01-24', sbp: '118' } },
      ]);
      expect(res.body.results.map((r) => [r.status, r.code, r.message, r.queries_opened])).to.deep.equal([
        ['ok', 'saved', 'Saved.', 0], ['warn', 'saved_as_draft', 'Saved as a draft.', 0],
      ]);
      expect(res.body.counts).to.deep.equal({ ok: 1, warn: 1, skip: 0, error: 0 });
      expect(await recordAt(subject, 'screening', 'vs')).to.deep.include({ status: 'complete' });
      expect(await recordAt(subject, 'baseline', 'vs')).to.deep.include({ status: 'draft', values: { vsdate: '2026-01-24', sbp: '118' } });
    });

    it('converts every field type from its string and stores the canonical form', async () => {
      const subject = await newPatient('01', { code: types.code, key: types.key, consent: false });
      const res = await submit([{
        subject, visit: 'screening', form: 'misc',
        values: { n_int: ' 007', n_dec: '2.50', d_date: '2026-02-28', t_time: '08:05', c_one: 'b', c_many: '3,1', yn: 'YES', note: ' as typed ' },
        tables: { doses: [{ amount: '12.5', at: '08:00' }, { amount: '5' }] },
      }], { code: types.code, key: types.key });
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
      expect(await recordAt(subject, 'screening', 'misc')).to.deep.include({
        values: { n_int: '7', n_dec: '2.50', d_date: '2026-02-28', t_time: '08:05', c_one: 'b', c_many: '1,3', yn: 'yes', note: ' as typed ' },
        tables: { doses: [{ amount: '12.5', at: '08:00' }, { amount: '5' }] },
      });
    });

    it('refuses a record whose values do not fit their types, naming each field, and keeps nothing of it', async () => {
      const subject = await newPatient('01', { code: types.code, key: types.key, consent: false });
      const before = await totals();
      const res = await submit([{
        subject, visit: 'screening', form: 'misc',
        values: { n_int: '7.5', n_dec: '2.505', d_date: '2026-02-30', t_time: '8:05', c_one: 'c', c_many: '1,4', yn: 'true', note: 'bad\u0000byte' },
        tables: { doses: [{ amount: '1,5' }, { at: '25:00' }] },
      }], { code: types.code, key: types.key });
      const result = only(res.body.results);
      expect(result).to.deep.include({ status: 'error', code: 'invalid_value', message: 'Some values do not fit their fields; nothing was saved.', record_id: null, queries_opened: 0 });
      expect(result.errors).to.deep.equal([
        { field: 'n_int', code: 'invalid_format', message: 'Not a valid integer value.' },
        { field: 'n_dec', code: 'too_many_decimals', message: 'At most 2 decimal places.' },
        { field: 'd_date', code: 'invalid_format', message: 'Not a valid date value.' },
        { field: 't_time', code: 'invalid_format', message: 'Not a valid time value.' },
        { field: 'c_one', code: 'not_an_option', message: '"c" is not one of the options a, b.' },
        { field: 'c_many', code: 'not_an_option', message: '"4" is not one of the options 1, 2, 3.' },
        { field: 'yn', code: 'invalid_format', message: 'Not a valid yesno value.' },
        { field: 'note', code: 'invalid_character', message: 'The text holds a character that cannot be stored (NUL or half of a surrogate pair).' },
        { field: 'doses[0].amount', code: 'invalid_format', message: 'Not a valid decimal value.' },
        { field: 'doses[1].at', code: 'invalid_format', message: 'Not a valid time value.' },
        { field: 'doses[1].amount', code: 'required', message: 'A value is required.' },
      ]);
      expect(await totals()).to.deep.equal(before);
    });

    it('refuses unknown field codes in values, not_done, tables and columns with unknown_field', async () => {
      const subject = await newPatient();
      const res = await submit([
        { subject, visit: 'screening', form: 'vs', values: vitals({ pulse: '70' }) },
        { subject, visit: 'baseline', form: 'vs', values: vitals({}, 'baseline'), not_done: { spo2: 'ND' } },
        { subject, visit: 'screening', form: 'cm', tables: { drugs: [{ name: 'A' }] } },
        { subject, visit: 'screening', form: 'mh', tables: { conditions: [{ term: 'Asthma', icd: 'J45' }] } },
      ]);
      expect(res.body.results.map((r) => [r.status, r.code, r.errors.map((e) => [e.field, e.code, e.message])])).to.deep.equal([
        ['error', 'unknown_field', [['pulse', 'unknown_field', 'No such field on this form.']]],
        ['error', 'unknown_field', [['spo2', 'unknown_field', 'No such field on this form.']]],
        ['error', 'unknown_field', [['drugs', 'unknown_field', 'No such field on this form.']]],
        ['error', 'unknown_field', [['conditions[0].icd', 'unknown_field', 'No such field on this form.']]],
      ]);
      expect(at(res.body.results, 0).message).to.equal('The record names fields that are not on the form; nothing was saved.');
      expect(await recordAt(subject, 'screening', 'vs')).to.equal(undefined);
    });

    it('keeps not_done marks per field; a complete record needs a value or a mark for each required field, a draft does not', async () => {
      const subject = await newPatient();
      const res = await submit([
        { subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-01-10', sbp: '120', dbp: '80' }, not_done: { hr: 'ND', temp: 'UNK', rr: 'NA' } },
        { subject, visit: 'baseline', form: 'vs', values: { vsdate: '2026-01-24', sbp: '120' } },
        { subject, visit: 'week4', form: 'vs', values: vitals({ temp: '36.6' }, 'week4'), not_done: { temp: 'ND' } },
        { subject, visit: 'week12', form: 'vs', status: 'draft', values: { vsdate: '2026-04-18', sbp: '120' } },
      ]);
      expect(res.body.results.map((r) => [r.status, r.code, r.errors.map((e) => `${e.field}:${e.code}`)])).to.deep.equal([
        ['ok', 'saved', []],
        ['error', 'invalid_value', ['dbp:required', 'hr:required']],
        ['error', 'invalid_value', ['temp:value_and_mark']],
        ['warn', 'saved_as_draft', []],
      ]);
      expect(at(at(res.body.results, 2).errors, 0).message).to.equal('A field cannot have both a value and a not-done mark.');
      expect(await recordAt(subject, 'screening', 'vs')).to.deep.include({ values: { vsdate: '2026-01-10', sbp: '120', dbp: '80' }, not_done: { hr: 'ND', temp: 'UNK', rr: 'NA' } });
    });

    it('saves table rows in order; a complete record needs every required column of each row, a draft does not', async () => {
      const subject = await newPatient();
      const rows = [{ term: 'Essential hypertension', onset: '2019-06-01', ongoing: 'yes' }, { term: 'Type 2 diabetes mellitus', ongoing: 'no' }];
      const res = await submit([
        { subject, visit: 'screening', form: 'mh', tables: { conditions: rows } },
        { subject, visit: 'week4', form: 'ae', tables: { events: [{ term: 'Headache', onset: '2026-02-01', severity: 'mild' }] } },
        { subject, visit: 'week12', form: 'ae', status: 'draft', tables: { events: [{ term: 'Headache' }] } },
      ]);
      expect(res.body.results.map((r) => [r.status, r.code, r.errors.map((e) => `${e.field}:${e.code}`)])).to.deep.equal([
        ['ok', 'saved', []],
        ['error', 'invalid_value', ['events[0].serious:required']],
        ['warn', 'saved_as_draft', []],
      ]);
      expect((await savedAt(subject, 'screening', 'mh')).tables).to.deep.equal({ conditions: rows });
      expect((await savedAt(subject, 'week12', 'ae')).tables).to.deep.equal({ events: [{ term: 'Headache' }] });
    });

    it('addresses occurrences of a repeating visit by instance; refuses instance > 1 elsewhere and a form not planned at the visit', async () => {
      const subject = await newPatient();
      const res = await submit([
        { subject, visit: 'unscheduled', form: 'vs', instance: 1, values: vitals({ sbp: '121' }) },
        { subject, visit: 'unscheduled', form: 'vs', instance: 2, values: vitals({ sbp: '122' }) },
        { subject, visit: 'baseline', form: 'vs', instance: 2, values: vitals({}, 'baseline') },
        { subject, visit: 'week4', form: 'dm', values: { sex: '1', height: '170', weight: '70' } },
      ]);
      expect(res.body.results.map((r) => [r.status, r.code, r.message])).to.deep.equal([
        ['ok', 'saved', 'Saved.'],
        ['ok', 'saved', 'Saved.'],
        ['error', 'invalid_instance', 'Visit "baseline" does not repeat; instance must be 1.'],
        ['error', 'form_not_in_visit', 'Form "dm" is not planned at visit "week4".'],
      ]);
      expect((await savedAt(subject, 'unscheduled', 'vs', 2)).values.sbp).to.equal('122');
      expect((await savedAt(subject, 'unscheduled', 'vs', 1)).values.sbp).to.equal('121');
    });
  });

  describe('automatic queries and edit checks', () => {
    it('saves a value outside its range, opens one query per breach at the patient\'s site, and says how many', async () => {
      const subject = await newPatient('02');
      const res = await submit([
        { subject, visit: 'screening', form: 'vs', values: vitals({ sbp: '232' }) },
        { subject, visit: 'baseline', form: 'vs', values: vitals({ sbp: '232', hr: '25' }, 'baseline') },
      ]);
      const [one, two] = [at(res.body.results, 0), at(res.body.results, 1)];
      expect(one).to.deep.include({ status: 'warn', code: 'saved_with_queries', message: 'Saved; 1 automatic query opened.', queries_opened: 1 });
      expect(one.errors).to.deep.equal([{ field: 'sbp', code: 'out_of_range', message: 'Value 232 mm[Hg] is above the expected maximum 220 mm[Hg].' }]);
      expect(two).to.deep.include({ status: 'warn', code: 'saved_with_queries', message: 'Saved; 2 automatic queries opened.', queries_opened: 2 });
      expect(two.errors.map((e) => e.message)).to.deep.equal(['Value 232 mm[Hg] is above the expected maximum 220 mm[Hg].', 'Value 25 /min is below the expected minimum 30 /min.']);
      expect((await savedAt(subject, 'screening', 'vs')).values.sbp).to.equal('232');
      expect(await queriesOf(recordIdOf(one))).to.deep.equal([
        { field_code: 'sbp', origin: 'range', check_code: null, status: 'open', message: 'Value 232 mm[Hg] is above the expected maximum 220 mm[Hg]', opened_by: 'Test system (API)', site: '02' },
      ]);
      expect((await queriesOf(recordIdOf(two))).map((q) => [q.field_code, q.site])).to.deep.equal([['sbp', '02'], ['hr', '02']]);
      const opened = (await auditOf(recordIdOf(one))).filter((a) => a.action === 'query.opened');
      expect(opened).to.have.length(1);
      expect(opened[0]).to.deep.include({ field_code: 'sbp', author: 'Test system (API)' });
    });

    it('gives a draft that opens queries warn/saved_with_queries', async () => {
      const subject = await newPatient();
      const res = await submit([{ subject, visit: 'screening', form: 'vs', status: 'draft', values: { vsdate: '2026-01-10', sbp: '232' } }]);
      expect(res.body.results[0]).to.deep.include({ status: 'warn', code: 'saved_with_queries', queries_opened: 1 });
      expect(await recordAt(subject, 'screening', 'vs')).to.deep.include({ status: 'draft' });
    });

    it('opens a query for a table cell outside its column\'s range, naming the cell', async () => {
      const subject = await newPatient('02', { code: types.code, key: types.key, consent: false });
      const cell = 'a_table_code_of_thirty_two_chars[1].a_column_code_of_thirty_two_char';
      const res = await submit([{
        subject, visit: 'screening', form: 'misc',
        tables: { a_table_code_of_thirty_two_chars: [{ a_column_code_of_thirty_two_char: '5' }, { a_column_code_of_thirty_two_char: '12' }] },
      }], { code: types.code, key: types.key });
      const result = only(res.body.results);
      expect(result).to.deep.include({ status: 'warn', code: 'saved_with_queries', queries_opened: 1 });
      expect(result.errors).to.deep.equal([{ field: cell, code: 'out_of_range', message: 'Value 12 is above the expected maximum 9.' }]);
      expect((await queriesOf(recordIdOf(result))).map((q) => [q.field_code, q.origin, q.status, q.site])).to.deep.equal([[cell, 'range', 'open', '02']]);
      expect((await auditOf(recordIdOf(result))).filter((a) => a.action === 'query.opened').map((a) => a.field_code)).to.deep.equal([cell]);
      const corrected = await submit([{
        subject, visit: 'screening', form: 'misc', update: true,
        tables: { a_table_code_of_thirty_two_chars: [{ a_column_code_of_thirty_two_char: '5' }, { a_column_code_of_thirty_two_char: '8' }] },
      }], { code: types.code, key: types.key });
      expect(corrected.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
      expect((await queriesOf(recordIdOf(result))).map((q) => q.status)).to.deep.equal(['closed']);
    });

    it('runs the design\'s edit checks: a query check saves and opens a query, a reject check refuses the record', async () => {
      const subject = await newPatient();
      const res = await submit([
        { subject, visit: 'screening', form: 'vs', values: vitals({ sbp: '120', dbp: '125' }) },
        { subject, visit: 'screening', form: 'lab_hem', values: { hgb: '14.0', wbc: '6.1', plt: '250', hct: '70.0' } },
        { subject, visit: 'baseline', form: 'vs', status: 'draft', values: { sbp: '120', dbp: '80' } },
      ]);
      const [dbp, hct, reject] = [at(res.body.results, 0), at(res.body.results, 1), at(res.body.results, 2)];
      expect(dbp).to.deep.include({ status: 'warn', code: 'saved_with_queries', queries_opened: 1 });
      expect(dbp.errors).to.deep.equal([{ field: 'dbp', code: 'edit_check:dbp_below_sbp', message: 'Diastolic pressure must be below systolic pressure' }]);
      expect(hct.errors).to.deep.equal([{ field: 'hct', code: 'edit_check:hct_plausible_for_hgb', message: 'Haematocrit is implausible for the haemoglobin (expected about three times the haemoglobin in g/dL)' }]);
      expect(reject).to.deep.include({ status: 'error', code: 'edit_check_failed', message: 'An edit check refused the record; nothing was saved.', record_id: null });
      expect(reject.errors).to.deep.equal([{ field: 'vsdate', code: 'edit_check:vsdate_with_values', message: 'Enter the date of the measurements' }]);
      expect(await queriesOf(recordIdOf(dbp))).to.deep.equal([
        { field_code: 'dbp', origin: 'edit_check', check_code: 'dbp_below_sbp', status: 'open', message: 'Diastolic pressure must be below systolic pressure', opened_by: 'Test system (API)', site: '01' },
      ]);
      expect(await recordAt(subject, 'baseline', 'vs')).to.equal(undefined);
      const ru = await submit([{ subject, visit: 'week4', form: 'vs', status: 'draft', values: { hr: '70' } }], { query: '?lang=ru' });
      expect(at(ru.body.results, 0).errors).to.deep.equal([{ field: 'vsdate', code: 'edit_check:vsdate_with_values', message: 'Укажите дату измерений' }]);
    });
  });

  describe('updates', () => {
    it('skips an already filled form without update, whether complete or draft, and names the saved record', async () => {
      const subject = await newPatient();
      const first = await submit([
        { subject, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'baseline', form: 'vs', status: 'draft', values: { vsdate: '2026-01-24' } },
      ]);
      const before = await totals();
      const again = await submit([
        { subject, visit: 'screening', form: 'vs', values: vitals({ sbp: '150' }) },
        { subject, visit: 'baseline', form: 'vs', values: vitals({}, 'baseline') },
      ]);
      expect(again.body.results.map((r) => [r.status, r.code, r.message, r.record_id])).to.deep.equal([
        ['skip', 'already_filled', 'The form is already filled in; send update: true to overwrite it.', at(first.body.results, 0).record_id],
        ['skip', 'already_filled', 'The form is already filled in; send update: true to overwrite it.', at(first.body.results, 1).record_id],
      ]);
      expect(again.body.counts).to.deep.equal({ ok: 0, warn: 0, skip: 2, error: 0 });
      expect(await totals()).to.deep.equal(before);
      expect((await savedAt(subject, 'screening', 'vs')).values.sbp).to.equal('120');
    });

    it('with update, replaces only the fields sent and audits each changed value with old and new, and no unchanged one', async () => {
      const subject = await newPatient();
      const first = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals({ temp: '36.6', weight: '80.0' }), not_done: { rr: 'ND' } }]);
      const id = recordIdOf(first.body.results[0]);
      const auditBefore = (await auditOf(id)).length;
      const res = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '125', dbp: '80', temp: '', rr: '16' } }]);
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved', record_id: id });
      expect(await recordAt(subject, 'screening', 'vs')).to.deep.include({ values: { vsdate: '2026-01-10', sbp: '125', dbp: '80', hr: '70', weight: '80.0', rr: '16' }, not_done: {} });
      const changed = (await auditOf(id)).slice(auditBefore);
      expect(changed.map((a) => [a.action, a.field_code, a.old_value, a.new_value, a.author])).to.deep.equal([
        ['record.value_changed', 'rr', '[ND]', '16', 'Test system (API)'],
        ['record.value_changed', 'sbp', '120', '125', 'Test system (API)'],
        ['record.value_changed', 'temp', '36.6', null, 'Test system (API)'],
      ]);
    });

    it('replaces a table sent with update as a whole, and changes the status to the one sent', async () => {
      const subject = await newPatient();
      await submit([{ subject, visit: 'screening', form: 'cm', status: 'draft', tables: { medications: [{ name: 'Aspirin' }, { name: 'Ramipril' }] } }]);
      const res = await submit([{ subject, visit: 'screening', form: 'cm', update: true, tables: { medications: [{ name: 'Metformin', dose: '500 mg bid' }] } }]);
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
      const saved = await savedAt(subject, 'screening', 'cm');
      expect(saved).to.deep.include({ status: 'complete', tables: { medications: [{ name: 'Metformin', dose: '500 mg bid' }] } });
      const audit = await auditOf(saved.id);
      expect(audit.filter((a) => a.action === 'record.value_changed').map((a) => [a.field_code, a.old_value, a.new_value])).to.deep.equal([
        ['medications', '[{"name":"Aspirin"},{"name":"Ramipril"}]', '[{"name":"Metformin","dose":"500 mg bid"}]'],
      ]);
      expect(audit.filter((a) => a.action === 'record.status_changed').map((a) => a.new_value)).to.deep.equal(['complete']);
    });

    it('answers ok/unchanged to an update that changes nothing, and writes nothing', async () => {
      const subject = await newPatient();
      const first = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals() }]);
      const before = await totals();
      const res = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '120', hr: '070' } }]);
      expect(res.body.results[0]).to.deep.equal({
        index: 0, status: 'ok', code: 'unchanged', message: 'Nothing differs from the saved form; nothing changed.', record_id: at(first.body.results, 0).record_id, queries_opened: 0, errors: [],
      });
      expect(await totals()).to.deep.equal(before);
    });

    it('keeps a decimal\'s digits as given: 4.70 reads back 4.70, the same digits are unchanged, 4.7 is an audited change', async () => {
      const subject = await newPatient('01', { code: types.code, key: types.key, consent: false });
      const options = { code: types.code, key: types.key };
      const first = await submit([{ subject, visit: 'screening', form: 'misc', values: { n_dec: '004.70' } }], options);
      const id = recordIdOf(first.body.results[0]);
      const read = async () => only((await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${types.code}/records?subject=${subject}`, { key: types.key })).body.records).values;
      expect(await read()).to.deep.equal({ n_dec: '4.70' });
      const same = await submit([{ subject, visit: 'screening', form: 'misc', update: true, values: { n_dec: ' 4.70' } }], options);
      expect(same.body.results[0]).to.deep.include({ status: 'ok', code: 'unchanged' });
      // Fewer digits say the value was measured less precisely: a correction, audited like any other.
      const coarser = await submit([{ subject, visit: 'screening', form: 'misc', update: true, values: { n_dec: '4.7' } }], options);
      expect(coarser.body.results[0]).to.deep.include({ status: 'ok', code: 'saved', record_id: id });
      expect(await read()).to.deep.equal({ n_dec: '4.7' });
      expect((await auditOf(id)).filter((a) => a.action === 'record.value_changed').map((a) => [a.field_code, a.old_value, a.new_value]))
        .to.deep.equal([['n_dec', '4.70', '4.7']]);
    });

    // A text value "[ND]" and the mark ND have the same audit text, so only the saved entries can tell them apart.
    const markOrText = [
      {
        name: 'the mark ND over a saved text "[ND]"', saved: { values: { note: '[ND]' } }, sent: { not_done: { note: 'ND' } }, stored: { values: {}, not_done: { note: 'ND' } },
        kinds: { old_value_kind: 'value', new_value_kind: 'not_done' },
      },
      {
        name: 'a text "[ND]" over a saved mark ND', saved: { not_done: { note: 'ND' } }, sent: { values: { note: '[ND]' } }, stored: { values: { note: '[ND]' }, not_done: {} },
        kinds: { old_value_kind: 'not_done', new_value_kind: 'value' },
      },
    ];
    for (const c of markOrText) {
      it(`with update, saves and audits ${c.name} rather than answering unchanged`, async () => {
        const subject = await newPatient('01', { code: types.code, key: types.key, consent: false });
        const options = { code: types.code, key: types.key };
        const id = recordIdOf((await submit([{ subject, visit: 'screening', form: 'misc', ...c.saved }], options)).body.results[0]);
        const res = await submit([{ subject, visit: 'screening', form: 'misc', update: true, ...c.sent }], options);
        expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved', record_id: id });
        expect(await savedAt(subject, 'screening', 'misc')).to.deep.include(c.stored);
        // The row's details say which is the mark (the audit text alone cannot).
        expect((await auditOf(id)).filter((a) => a.action === 'record.value_changed').map((a) => [a.field_code, a.old_value, a.new_value, a.details]))
          .to.deep.equal([['note', '[ND]', '[ND]', c.kinds]]);
      });
    }

    it('audits the mark ND that replaces a saved text "[ND]" beside a change of another field', async () => {
      const subject = await newPatient('01', { code: types.code, key: types.key, consent: false });
      const options = { code: types.code, key: types.key };
      const id = recordIdOf((await submit([{ subject, visit: 'screening', form: 'misc', values: { note: '[ND]' } }], options)).body.results[0]);
      const res = await submit([{ subject, visit: 'screening', form: 'misc', update: true, not_done: { note: 'ND' }, values: { n_dec: '1.00' } }], options);
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved', record_id: id });
      expect(await savedAt(subject, 'screening', 'misc')).to.deep.include({ values: { n_dec: '1.00' }, not_done: { note: 'ND' } });
      expect((await auditOf(id)).filter((a) => a.action === 'record.value_changed').map((a) => [a.field_code, a.old_value, a.new_value]))
        .to.deep.equal([['n_dec', null, '1.00'], ['note', '[ND]', '[ND]']]);
    });

    it('answers ok/unchanged to a table sent again as saved, though jsonb gives its cells back in another order', async () => {
      const subject = await newPatient('01', { code: types.code, key: types.key, consent: false });
      const options = { code: types.code, key: types.key };
      const doses = { doses: [{ amount: '1.0', at: '08:00' }] };
      expect(at((await submit([{ subject, visit: 'screening', form: 'misc', tables: doses }], options)).body.results, 0).code).to.equal('saved');
      const before = await totals();
      const again = await submit([{ subject, visit: 'screening', form: 'misc', update: true, tables: doses }], options);
      expect(again.body.results[0]).to.deep.include({ status: 'ok', code: 'unchanged' });
      expect(await totals()).to.deep.equal(before);
    });

    it('closes the automatic queries whose cause an update corrects, and keeps the others open', async () => {
      const subject = await newPatient('02');
      const first = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals({ sbp: '232', hr: '25' }) }]);
      const id = recordIdOf(first.body.results[0]);
      const res = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '140' } }]);
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved', queries_opened: 0 });
      expect((await queriesOf(id)).map((q) => [q.field_code, q.status])).to.deep.equal([['sbp', 'closed'], ['hr', 'open']]);
      const closed = (await auditOf(id)).filter((a) => a.action === 'query.closed');
      expect(closed.map((a) => [a.field_code, a.author])).to.deep.equal([['sbp', 'Test system (API)']]);
      const still = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { hr: '24' } }]);
      expect(still.body.results[0]).to.deep.include({ status: 'ok', queries_opened: 0 });
      expect((await queriesOf(id)).filter((q) => q.status === 'open')).to.have.length(1);
    });

    it('queries a new out-of-range value again after the site closed the first query, but not an unrelated change', async () => {
      const subject = await newPatient();
      const first = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals({ sbp: '232' }) }]);
      const id = recordIdOf(first.body.results[0]);
      await knex()('queries').where({ record_id: id }).update({ status: 'closed', closed_at: knex().fn.now() });
      const unrelated = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { hr: '72' } }]);
      expect(unrelated.body.results[0]).to.deep.include({ status: 'ok', code: 'saved', queries_opened: 0 });
      const changed = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '240' } }]);
      expect(changed.body.results[0]).to.deep.include({ status: 'warn', code: 'saved_with_queries', queries_opened: 1, message: 'Saved; 1 automatic query opened.' });
      expect((await queriesOf(id)).map((q) => [q.status, q.message])).to.deep.equal([
        ['closed', 'Value 232 mm[Hg] is above the expected maximum 220 mm[Hg]'],
        ['open', 'Value 240 mm[Hg] is above the expected maximum 220 mm[Hg]'],
      ]);
    });

    it('closes an answered automatic query too when an update corrects its cause', async () => {
      const subject = await newPatient();
      const first = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals({ sbp: '120', dbp: '125' }) }]);
      const id = recordIdOf(first.body.results[0]);
      await knex()('queries').where({ record_id: id }).update({ status: 'answered' });
      const res = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { dbp: '85' } }]);
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
      expect((await queriesOf(id)).map((q) => [q.check_code, q.status])).to.deep.equal([['dbp_below_sbp', 'closed']]);
    });

    it('keeps the source of a record\'s first save when the API updates it', async () => {
      const subject = await newPatient();
      const study = present(await inTransaction(knex(), (s) => s.studies.findByCode(world.code)), 'the study');
      const siteIds = await knex()('sites').where({ study_id: study.id }).pluck<number[]>('id');
      const nurse = { kind: 'user' as const, userId: 1, name: 'Site nurse', via: 'portal' as const };
      await inTransaction(knex(), (s) => submitRecords(s, nurse, { siteIds, unblinded: false }, study,
        [{ subject, visit: 'screening', form: 'vs', values: vitals() }], { validateOnly: false, source: 'portal' }));
      const res = await submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '126' } }]);
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
      const saved = await savedAt(subject, 'screening', 'vs');
      expect(saved).to.deep.include({ source: 'portal' });
      expect((await auditOf(saved.id)).map((a) => [a.action, a.field_code, a.author])).to.deep.equal([
        ['record.value_set', 'dbp', 'Site nurse'], ['record.value_set', 'hr', 'Site nurse'], ['record.value_set', 'sbp', 'Site nurse'],
        ['record.value_set', 'vsdate', 'Site nurse'], ['record.value_changed', 'sbp', 'Test system (API)'],
      ]);
    });

    it('sees earlier records of the same request: the same form instance twice is saved once, the second is a skip', async () => {
      const subject = await newPatient();
      const res = await submit([
        { subject, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'screening', form: 'vs', values: vitals({ sbp: '130' }) },
        { subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '131' } },
      ]);
      expect(res.body.results.map((r) => [r.status, r.code])).to.deep.equal([['ok', 'saved'], ['skip', 'already_filled'], ['ok', 'saved']]);
      expect(at(res.body.results, 1).record_id).to.equal(at(res.body.results, 0).record_id);
      expect((await savedAt(subject, 'screening', 'vs')).values.sbp).to.equal('131');
    });
  });

  describe('who and whose data', () => {
    it('answers unknown_subject alike for a patient that does not exist and one at a site outside the key\'s sites', async () => {
      const other = await newPatient('02');
      const mine = await newPatient('01');
      const res = await submit([
        { subject: 'NOBODY-1', visit: 'screening', form: 'vs', values: vitals() },
        { subject: other, visit: 'screening', form: 'vs', values: vitals() },
        // A subject no database row can hold (NUL) is just as unknown, and does not fail the records around it.
        { subject: 'nul\u0000subject', visit: 'screening', form: 'vs', values: vitals() },
        { subject: mine, visit: 'screening', form: 'vs', values: vitals() },
      ], { key: site01Key });
      expect(res.status).to.equal(200);
      expect(res.body.results.map((r) => [r.status, r.code, r.message])).to.deep.equal([
        ['error', 'unknown_subject', 'There is no patient "NOBODY-1" at the sites of this API key.'],
        ['error', 'unknown_subject', `There is no patient "${other}" at the sites of this API key.`],
        ['error', 'unknown_subject', 'There is no patient "nul\u0000subject" at the sites of this API key.'],
        ['ok', 'saved', 'Saved.'],
      ]);
      expect(await recordAt(other, 'screening', 'vs')).to.equal(undefined);
    });

    it('keeps nothing of a patient without a valid consent (none, or withdrawn) when the study requires it', async () => {
      const never = await newPatient('01', { consent: false });
      const withdrawn = await newPatient('01');
      await inTransaction(knex(), (s) => recordConsent(s, operator, { study: world.code, subject: withdrawn, change: { withdrawn: '2026-01-20', dataUse: false } }));
      const before = await totals();
      const res = await submit([
        { subject: never, visit: 'screening', form: 'vs', values: vitals({ sbp: '232' }) },
        { subject: withdrawn, visit: 'screening', form: 'vs', values: vitals() },
      ]);
      expect(res.body.results.map((r) => [r.status, r.code, r.message, r.record_id, r.queries_opened])).to.deep.equal([
        ['error', 'consent_missing', `Patient "${never}" has no valid consent; the study requires consent before data entry. Nothing was saved.`, null, 0],
        ['error', 'consent_missing', `Patient "${withdrawn}" has no valid consent; the study requires consent before data entry. Nothing was saved.`, null, 0],
      ]);
      expect(await totals()).to.deep.equal(before);
    });

    it('saves data of a patient without consent in a study that does not require it', async () => {
      const subject = await newPatient('01', { code: types.code, key: types.key, consent: false });
      const res = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals() }], { code: types.code, key: types.key });
      expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
    });

    it('refuses a form of the unblinded team to a key whose maker is blinded (team_not_allowed) and saves it for an unblinded one', async () => {
      const subject = await newPatient();
      const record = { subject, visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-0042', arm: 'A' } };
      const blinded = await submit([record, { ...record, visit: 'screening' }], { key: blindedKey });
      expect(blinded.body.results.map((r) => [r.status, r.code, r.message])).to.deep.equal([
        ['error', 'team_not_allowed', 'Form "ip_alloc" belongs to the unblinded team; this API key may not write it.'],
        ['error', 'team_not_allowed', 'Form "ip_alloc" belongs to the unblinded team; this API key may not write it.'],
      ]);
      expect(await recordAt(subject, 'baseline', 'ip_alloc')).to.equal(undefined);
      const unblinded = await submit([record]);
      expect(unblinded.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
    });

    it('refuses a key without the write right (403)', async () => {
      const res = await submit<Problem>([{ subject: 'X', visit: 'screening', form: 'vs' }], { key: readOnlyKey });
      expect(res.status).to.equal(403);
      expect(res.body).to.deep.include({ code: 'right_missing', detail: 'This API key does not have the right to write data.' });
    });
  });

  describe('whole-request refusals', () => {
    it('refuses more than 500 records with 413 too_many_records and keeps nothing, even when the records are also invalid', async () => {
      const subject = await newPatient();
      const before = await totals();
      const valid = Array.from({ length: 501 }, (_, i) => ({ subject, visit: 'unscheduled', form: 'vs', instance: i + 1, values: vitals() }));
      for (const records of [valid, [...valid.slice(1), { subject, nonsense: true }]]) {
        const res = await submit<Problem>(records);
        expect(res.status).to.equal(413);
        expect(res.body).to.deep.include({ code: 'too_many_records', detail: 'A request may carry at most 500 records; this one has 501.' });
      }
      expect(await totals()).to.deep.equal(before);
    });

    it('refuses the whole request with 422 when a record names a form or visit the study lacks, naming each offending index', async () => {
      const subject = await newPatient();
      const before = await totals();
      const res = await submit<Problem>([
        { subject, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'screening', form: 'vitals', values: vitals() },
        { subject, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'week8', form: 'vs', values: vitals() },
        { subject, visit: 'week9', form: 'labs' },
      ]);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.include({ code: 'unknown_form_or_visit', title: 'Unknown form or visit', detail: 'Records 1, 3, 4 name a form or visit this study does not have; nothing was loaded.' });
      expect(res.body.errors).to.deep.equal([
        { pointer: '/records/1/form', code: 'unknown_form', message: 'The study has no form "vitals".' },
        { pointer: '/records/3/visit', code: 'unknown_visit', message: 'The study has no visit "week8".' },
        { pointer: '/records/4/visit', code: 'unknown_visit', message: 'The study has no visit "week9".' },
        { pointer: '/records/4/form', code: 'unknown_form', message: 'The study has no form "labs".' },
      ]);
      expect(await totals()).to.deep.equal(before);
    });

    it('refuses an instance beyond 9999 as a body error rather than failing on the database', async () => {
      const subject = await newPatient();
      const res = await submit<Problem>([{ subject, visit: 'unscheduled', form: 'vs', instance: 3_000_000_000, values: vitals() }]);
      expect(res.status).to.equal(422);
      expect(res.body.code).to.equal('invalid_body');
      expect(res.body.errors?.map((e) => e.pointer)).to.deep.equal(['/records/0/instance']);
    });

    it('refuses a body that does not match the schema with 422 invalid_body and a pointer per member', async () => {
      const res = await submit<Problem>([{ subject: 'X', visit: 'screening', form: 'vs', status: 'final', values: { sbp: 120 } }]);
      expect(res.status).to.equal(422);
      expect(res.body.code).to.equal('invalid_body');
      expect(res.body.errors?.map((e) => e.pointer)).to.have.members(['/records/0/status', '/records/0/values/sbp']);
    });

    it('refuses writes to a locked study with 423 study_locked and keeps nothing', async () => {
      const subject = await newPatient();
      const before = await totals();
      await inTransaction(knex(), (s) => changeStudySettings(s, operator, world.code, { locked: true }));
      try {
        const res = await submit<Problem>([{ subject, visit: 'screening', form: 'vs', values: vitals() }]);
        expect(res.status).to.equal(423);
        expect(res.body).to.deep.include({ code: 'study_locked', detail: 'The study database is locked; no data can be changed.' });
        const validated = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals() }], { query: '?validate_only=true' });
        expect(validated.status).to.equal(423);
      } finally {
        await inTransaction(knex(), (s) => changeStudySettings(s, operator, world.code, { locked: false }));
      }
      expect(await totals()).to.deep.equal(before);
    });
  });

  describe('concurrency', () => {
    it('saves a form sent by ten concurrent writers once; the others get skip with the saved record\'s id', async () => {
      const subject = await newPatient('02');
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
        submit([{ subject, visit: 'screening', form: 'vs', values: vitals({ sbp: String(200 + i + 30) }) }])));
      const outcomes = results.map((r) => only(r.body.results));
      const winner = only(outcomes.filter((o) => o.status === 'warn'));
      expect(outcomes.filter((o) => o.status === 'skip').map((o) => [o.code, o.record_id])).to.deep.equal(Array(9).fill(['already_filled', winner.record_id]));
      const saved = await savedAt(subject, 'screening', 'vs');
      expect(saved.id).to.equal(winner.record_id);
      const audit = await auditOf(saved.id);
      expect(audit.filter((a) => a.action === 'record.value_set')).to.have.length(4);
      expect(await queriesOf(saved.id)).to.have.length(1);
    });

    it('applies concurrent updates of one form one after the other: each audit row starts from the value the previous one left', async () => {
      const subject = await newPatient();
      const first = await submit([{ subject, visit: 'screening', form: 'vs', values: vitals() }]);
      const id = recordIdOf(first.body.results[0]);
      const results = await Promise.all(['131', '132', '133', '134', '135'].map((sbp) =>
        submit([{ subject, visit: 'screening', form: 'vs', update: true, values: { sbp } }])));
      expect(results.map((r) => at(r.body.results, 0).status)).to.deep.equal(Array(5).fill('ok'));
      const changes = (await auditOf(id)).filter((a) => a.action === 'record.value_changed');
      expect(changes).to.have.length(5);
      let previous = '120';
      for (const change of changes) {
        expect(change.old_value).to.equal(previous);
        previous = present(change.new_value, 'the changed value');
      }
      expect((await savedAt(subject, 'screening', 'vs')).values.sbp).to.equal(previous);
    });

    it('writes the new record of two concurrent update:true writers once, and applies the other as an update', async () => {
      const subject = await newPatient();
      const results = await Promise.all(['141', '142'].map((sbp) => submit([{ subject, visit: 'screening', form: 'vs', update: true, values: vitals({ sbp }) }])));
      expect(results.map((r) => at(r.body.results, 0).code)).to.deep.equal(['saved', 'saved']);
      const saved = await savedAt(subject, 'screening', 'vs');
      const audit = await auditOf(saved.id);
      expect(audit.filter((a) => a.action === 'record.value_set')).to.have.length(4);
      expect(audit.filter((a) => a.action === 'record.value_changed').map((a) => [a.old_value, a.new_value]))
        .to.deep.equal([[present(audit.find((a) => a.field_code === 'sbp'), 'the audit row of sbp').new_value, saved.values.sbp]]);
    });
  });

  describe('validate_only', () => {
    it('returns the results the call would give, with code validated, and saves nothing and opens no query', async () => {
      const subject = await newPatient('02');
      await submit([{ subject, visit: 'screening', form: 'vs', values: vitals() }]);
      const records = [
        { subject, visit: 'baseline', form: 'vs', values: vitals({}, 'baseline') },
        { subject, visit: 'week4', form: 'vs', values: vitals({ sbp: '232' }, 'week4') },
        { subject, visit: 'week12', form: 'vs', status: 'draft', values: { vsdate: '2026-04-18' } },
        { subject, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '120' } },
        { subject, visit: 'unscheduled', form: 'vs', values: vitals({ sbp: 'high' }) },
        { subject, visit: 'baseline', form: 'vs', values: vitals({}, 'baseline') },
      ];
      const before = await totals();
      const dry = await submit(records, { query: '?validate_only=true' });
      expect(dry.status).to.equal(200);
      expect(dry.body.results.map((r) => [r.status, r.code, r.message, r.record_id === null, r.queries_opened])).to.deep.equal([
        ['ok', 'validated', 'Would be saved.', true, 0],
        ['warn', 'validated', 'Would be saved and open 1 automatic query.', true, 1],
        ['warn', 'validated', 'Would be saved as a draft.', true, 0],
        ['skip', 'already_filled', 'The form is already filled in; send update: true to overwrite it.', false, 0],
        ['ok', 'unchanged', 'Nothing differs from the saved form; nothing changed.', false, 0],
        ['error', 'invalid_value', 'Some values do not fit their fields; nothing was saved.', true, 0],
        ['skip', 'already_filled', 'The form is already filled in; send update: true to overwrite it.', true, 0],
      ]);
      expect(at(dry.body.results, 1).errors).to.deep.equal([{ field: 'sbp', code: 'out_of_range', message: 'Value 232 mm[Hg] is above the expected maximum 220 mm[Hg].' }]);
      expect(await totals()).to.deep.equal(before);
      const real = await submit(records, { query: '?validate_only=false' });
      expect(real.body.results.map((r) => r.status)).to.deep.equal(dry.body.results.map((r) => r.status));
      expect(real.body.results.map((r) => r.code)).to.deep.equal(['saved', 'saved_with_queries', 'saved_as_draft', 'already_filled', 'unchanged', 'invalid_value', 'already_filled']);
    });
  });

  describe('languages', () => {
    it('words every per-record result and field issue in Russian with lang=ru (and with Accept-Language: ru)', async () => {
      const subject = await newPatient();
      const noConsent = await newPatient('01', { consent: false });
      await submit([{ subject, visit: 'screening', form: 'dm', values: { sex: '1', height: '170', weight: '70' } }]);
      const records = [
        { subject, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'baseline', form: 'vs', values: vitals({ sbp: '232' }, 'baseline') },
        { subject, visit: 'week4', form: 'vs', status: 'draft', values: { vsdate: '2026-02-21' } },
        { subject, visit: 'screening', form: 'dm', values: { sex: '1', height: '170', weight: '70' } },
        { subject, visit: 'screening', form: 'dm', update: true, values: { sex: '1' } },
        { subject: 'NOBODY-2', visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'baseline', form: 'ip_alloc', values: { kit: 'K', arm: 'A' } },
        { subject: noConsent, visit: 'screening', form: 'vs', values: vitals() },
        { subject, visit: 'week4', form: 'dm', values: {} },
        { subject, visit: 'week4', form: 'vs', instance: 2, values: vitals({}, 'week4') },
        { subject, visit: 'week12', form: 'vs', values: vitals({ pulse: '1' }, 'week12') },
        { subject, visit: 'week12', form: 'vs', values: vitals({ sbp: '1e2' }, 'week12') },
        { subject, visit: 'week12', form: 'vs', status: 'draft', values: { sbp: '120' } },
      ];
      const res = await submit(records, { key: blindedKey, query: '?lang=ru' });
      expect(res.body.results.map((r) => [r.code, r.message])).to.deep.equal([
        ['saved', 'Сохранено.'],
        ['saved_with_queries', 'Сохранено; открыт 1 автоматический запрос.'],
        ['saved_as_draft', 'Сохранено как черновик.'],
        ['already_filled', 'Форма уже заполнена; чтобы перезаписать её, передайте update: true.'],
        ['unchanged', 'Форма не отличается от сохранённой; ничего не изменено.'],
        ['unknown_subject', 'В центрах этого API-ключа нет пациента "NOBODY-2".'],
        ['team_not_allowed', 'Форма "ip_alloc" принадлежит расслеплённой команде; этот API-ключ не может её заполнять.'],
        ['consent_missing', `У пациента "${noConsent}" нет действующего согласия, а исследование требует его до ввода данных. Ничего не сохранено.`],
        ['form_not_in_visit', 'Форма "dm" не запланирована на визите "week4".'],
        ['invalid_instance', 'Визит "week4" не повторяется; instance должен быть 1.'],
        ['unknown_field', 'В записи есть поля, которых нет в форме; ничего не сохранено.'],
        ['invalid_value', 'Некоторые значения не подходят к своим полям; ничего не сохранено.'],
        ['edit_check_failed', 'Правило проверки отклонило запись; ничего не сохранено.'],
      ]);
      expect(at(at(res.body.results, 1).errors, 0).message).to.equal('Значение 232 mm[Hg] выше ожидаемого максимума 220 mm[Hg].');
      expect(at(at(res.body.results, 10).errors, 0).message).to.equal('В этой форме нет такого поля.');
      expect(at(at(res.body.results, 11).errors, 0).message).to.equal('Неверное значение типа integer.');
      const validated = await app.call<RecordsResult>('POST', `/api/v1/studies/${world.code}/records?validate_only=true`, {
        key: world.key, headers: { 'accept-language': 'ru-RU, ru;q=0.9' }, body: { records: [{ subject, visit: 'week12', form: 'lab_hem', values: { hgb: '14.0', wbc: '6', plt: '250', hct: '42' } }] },
      });
      expect(at(validated.body.results, 0).message).to.equal('Будет сохранено.');
    });
  });

  describe('a 500-record request mixing every kind of result', () => {
    interface Expected { status: string; code: string; message: string; recordId?: number | null; saved?: { subject: string; visit: string; form: string; instance: number; values?: Rec; tables?: Rec }; rangeQueries?: number; checkQueries?: number; valueRows?: number; changeRows?: [string, string, string][] }

    it('answers each record in order with the right status and message; the database holds exactly the ok and warn records, their queries and one audit row per saved or changed value', async () => {
      // Four consented patients per site, one without consent, all written by a key whose maker is blinded.
      const patients = { '01': [] as string[], '02': [] as string[] };
      for (const site of ['01', '02'] as const) for (let i = 0; i < 4; i++) patients[site].push(await newPatient(site));
      const noConsent = await newPatient('02', { consent: false });
      const instance = new Map<string, number>();
      const nextInstance = (subject: string) => { const n = (instance.get(subject) ?? 0) + 1; instance.set(subject, n); return n; };
      // Forms saved before the request, for the skip, update and unchanged records.
      const preSaved: { subject: string; instance: number; values: Record<string, string>; id?: number }[] = [];
      for (let i = 0; i < 90; i++) {
        const subject = at(patients['01'], i % 4);
        preSaved.push({ subject, instance: nextInstance(subject), values: vitals({ hr: String(60 + (i % 30)) }) });
      }
      const pre = await submit(preSaved.map((p) => ({ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: p.instance, values: p.values })));
      expect(pre.body.counts).to.deep.equal({ ok: 90, warn: 0, skip: 0, error: 0 });
      pre.body.results.forEach((r, i) => { at(preSaved, i).id = recordIdOf(r); });

      const records: Rec[] = [];
      const expected: Expected[] = [];
      let preIndex = 0;
      let n = 0;
      const patientFor = () => { n += 1; return at(patients[n % 2 === 0 ? '01' : '02'], n % 4); };
      const newVs = (values: Record<string, string>, extra: Rec = {}) => {
        const subject = patientFor();
        const place = { subject, visit: 'unscheduled', form: 'vs', instance: nextInstance(subject) };
        return { record: { ...place, values, ...extra }, place };
      };
      const kinds: (() => void)[] = [
        () => { // ok
          const { record, place } = newVs(vitals());
          records.push(record); expected.push({ status: 'ok', code: 'saved', message: 'Saved.', saved: { ...place, values: vitals() }, valueRows: 4 });
        },
        () => { // warn: a range breach
          const values = vitals({ sbp: '232' });
          const { record, place } = newVs(values);
          records.push(record); expected.push({ status: 'warn', code: 'saved_with_queries', message: 'Saved; 1 automatic query opened.', saved: { ...place, values }, rangeQueries: 1, valueRows: 4 });
        },
        () => { // warn: a draft
          const values = { vsdate: '2026-02-01', sbp: '118' };
          const { record, place } = newVs(values, { status: 'draft' });
          records.push(record); expected.push({ status: 'warn', code: 'saved_as_draft', message: 'Saved as a draft.', saved: { ...place, values }, valueRows: 2 });
        },
        () => { // warn: a query edit check
          const values = vitals({ dbp: '125' });
          const { record, place } = newVs(values);
          records.push(record); expected.push({ status: 'warn', code: 'saved_with_queries', message: 'Saved; 1 automatic query opened.', saved: { ...place, values }, checkQueries: 1, valueRows: 4 });
        },
        () => { // ok: a table
          const subject = patientFor();
          const tables = { events: [{ term: 'Dizziness', onset: '2026-02-02', severity: 'moderate', serious: 'no' }] };
          const place = { subject, visit: 'unscheduled', form: 'ae', instance: nextInstance(subject) };
          records.push({ ...place, tables }); expected.push({ status: 'ok', code: 'saved', message: 'Saved.', saved: { ...place, tables }, valueRows: 1 });
        },
        () => { // skip: the same form instance as the record just before it, which this very request saves
          records.push({ ...at(records, records.length - 1) });
          expected.push({ status: 'skip', code: 'already_filled', message: 'The form is already filled in; send update: true to overwrite it.', recordId: -1 });
        },
        () => { // skip: saved before the request
          const p = at(preSaved, preIndex++);
          records.push({ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: p.instance, values: vitals({ sbp: '100' }) });
          expected.push({ status: 'skip', code: 'already_filled', message: 'The form is already filled in; send update: true to overwrite it.', recordId: p.id });
        },
        () => { // ok: an update that changes one value
          const p = at(preSaved, preIndex++);
          records.push({ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: p.instance, update: true, values: { sbp: '128', hr: p.values.hr } });
          expected.push({ status: 'ok', code: 'saved', message: 'Saved.', recordId: p.id, saved: { subject: p.subject, visit: 'unscheduled', form: 'vs', instance: p.instance, values: { ...p.values, sbp: '128' } }, changeRows: [['sbp', '120', '128']] });
        },
        () => { // ok: an update that changes nothing
          const p = at(preSaved, preIndex++);
          records.push({ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: p.instance, update: true, values: { hr: p.values.hr } });
          expected.push({ status: 'ok', code: 'unchanged', message: 'Nothing differs from the saved form; nothing changed.', recordId: p.id });
        },
        () => { // error: unknown subject
          records.push({ subject: 'NOBODY-9', visit: 'screening', form: 'vs', values: vitals() });
          expected.push({ status: 'error', code: 'unknown_subject', message: 'There is no patient "NOBODY-9" at the sites of this API key.' });
        },
        () => { // error: no consent
          records.push({ subject: noConsent, visit: 'unscheduled', form: 'vs', instance: nextInstance(noConsent), values: vitals() });
          expected.push({ status: 'error', code: 'consent_missing', message: `Patient "${noConsent}" has no valid consent; the study requires consent before data entry. Nothing was saved.` });
        },
        () => { // error: a bad value
          records.push(newVs(vitals({ sbp: 'abc' })).record);
          expected.push({ status: 'error', code: 'invalid_value', message: 'Some values do not fit their fields; nothing was saved.' });
        },
        () => { // error: an unknown field
          records.push(newVs(vitals({ spo2: '98' })).record);
          expected.push({ status: 'error', code: 'unknown_field', message: 'The record names fields that are not on the form; nothing was saved.' });
        },
        () => { // error: a rejecting edit check
          records.push(newVs({ sbp: '120', dbp: '80' }, { status: 'draft' }).record);
          expected.push({ status: 'error', code: 'edit_check_failed', message: 'An edit check refused the record; nothing was saved.' });
        },
        () => { // error: the unblinded team's form
          records.push({ subject: patientFor(), visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-1', arm: 'B' } });
          expected.push({ status: 'error', code: 'team_not_allowed', message: 'Form "ip_alloc" belongs to the unblinded team; this API key may not write it.' });
        },
        () => { // error: a form not planned at the visit
          records.push({ subject: patientFor(), visit: 'week4', form: 'dm', values: { sex: '1', height: '170', weight: '70' } });
          expected.push({ status: 'error', code: 'form_not_in_visit', message: 'Form "dm" is not planned at visit "week4".' });
        },
        () => { // error: an instance of a visit that does not repeat
          records.push({ subject: patientFor(), visit: 'week4', form: 'vs', instance: 2, values: vitals({}, 'week4') });
          expected.push({ status: 'error', code: 'invalid_instance', message: 'Visit "week4" does not repeat; instance must be 1.' });
        },
      ];
      for (let i = 0; records.length < 500; i++) at(kinds, i % kinds.length)();
      expect(records).to.have.length(500);

      const before = await totals();
      const maxAudit = Number(only(await knex()('audit_events').max({ m: 'id' })).m);
      const res = await submit(records, { key: blindedKey });
      expect(res.status).to.equal(200);
      const results = res.body.results;
      expect(results.map((r) => r.index)).to.deep.equal(records.map((_, i) => i));
      results.forEach((r, i) => {
        const e = at(expected, i);
        expect([r.status, r.code, r.message], `record ${i}`).to.deep.equal([e.status, e.code, e.message]);
        if (e.status === 'error') expect(r.record_id, `record ${i}`).to.equal(null);
        else expect(r.record_id, `record ${i}`).to.be.a('number');
        if (e.recordId === -1) expect(r.record_id, `record ${i}`).to.equal(at(results, i - 1).record_id);
        else if (e.recordId !== undefined) expect(r.record_id, `record ${i}`).to.equal(e.recordId);
      });
      const tally = (status: string) => expected.filter((e) => e.status === status).length;
      expect(res.body.counts).to.deep.equal({ ok: tally('ok'), warn: tally('warn'), skip: tally('skip'), error: tally('error') });
      for (const kind of ['ok', 'warn', 'skip', 'error']) expect(tally(kind), kind).to.be.greaterThan(20);

      // Exactly the new ok and warn records were added, each holding what was sent.
      const created = expected.filter((e, i) => e.saved && e.recordId === undefined && results[i]);
      const after = await totals();
      expect(after.records - before.records).to.equal(created.length);
      expect(after.queries - before.queries).to.equal(expected.reduce((sum, e) => sum + (e.rangeQueries ?? 0) + (e.checkQueries ?? 0), 0));
      for (const [i, e] of expected.entries()) {
        if (!e.saved) continue;
        const row = await recordAt(e.saved.subject, e.saved.visit, e.saved.form, e.saved.instance);
        expect(row, `record ${i}`).to.not.equal(undefined);
        expect(row!.id).to.equal(at(results, i).record_id);
        if (e.saved.values) expect(row!.values, `record ${i}`).to.deep.equal(e.saved.values);
        if (e.saved.tables) expect(row!.tables, `record ${i}`).to.deep.equal(e.saved.tables);
      }

      // One open range query per breach, at the patient's site.
      const rangeQueries = await knex()('queries as q').join('patients as p', 'p.id', 'q.patient_id').join('sites as s', 's.id', 'q.site_id')
        .join('sites as ps', 'ps.id', 'p.site_id').where('q.origin', 'range').whereIn('q.record_id', results.map((r) => r.record_id).filter((id) => id !== null))
        .select<{ record_id: number; status: string; field_code: string; site: string; patient_site: string }[]>('q.record_id', 'q.status', 'q.field_code', 's.number as site', 'ps.number as patient_site');
      const breaches = expected.map((e, i) => (e.rangeQueries ? at(results, i).record_id : null)).filter((id) => id !== null);
      expect(rangeQueries.map((q) => q.record_id).sort()).to.deep.equal([...breaches].sort());
      for (const q of rangeQueries) expect(q).to.deep.include({ status: 'open', field_code: 'sbp', site: q.patient_site });
      expect(new Set(rangeQueries.map((q) => q.site))).to.deep.equal(new Set(['01', '02']));

      // One audit row per saved or changed value, by the key, and nothing for skipped, unchanged or refused records.
      const audit = await knex()('audit_events').where('id', '>', maxAudit).whereIn('action', ['record.value_set', 'record.value_changed'])
        .select<(AuditRow & { record_id: number })[]>('action', 'record_id', 'field_code', 'old_value', 'new_value', 'author');
      const valueRows = expected.reduce((sum, e) => sum + (e.valueRows ?? 0), 0);
      const changeRows = expected.flatMap((e, i) => (e.changeRows ?? []).map(([field, oldValue, newValue]) => [at(results, i).record_id, field, oldValue, newValue]));
      expect(audit.filter((a) => a.action === 'record.value_set')).to.have.length(valueRows);
      expect(audit.filter((a) => a.action === 'record.value_changed').map((a) => [a.record_id, a.field_code, a.old_value, a.new_value]))
        .to.have.deep.members(changeRows);
      expect(new Set(audit.map((a) => a.author))).to.deep.equal(new Set(['LIMS (API)']));
      const touched = new Set(expected.map((e, i) => ((e.valueRows || e.changeRows) ? at(results, i).record_id : null)).filter((id) => id !== null));
      for (const a of audit) expect(touched.has(a.record_id)).to.equal(true);
    });
  });
});
