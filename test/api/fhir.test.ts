import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { giveConsent, makeKey, operator } from '../helpers/factories.js';
import { fhirImportItems } from '../helpers/hostileInput.js';
import { at, present } from '../helpers/only.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { CASES, type PatientCase } from '../helpers/syntheaCases.js';
import type { Reply } from '../helpers/testApp.js';

/**
 * The FHIR call (importFhirRecord) through real HTTP on the Synthea and HL7 fixtures: what each patient's
 * file proposes, save mode and what it writes, and every refusal, each of which keeps nothing.
 */

/** An import's answer (201 when made, 200 when the same content waits already). */
type Imported = AnswerOf<'importFhirRecord', 201>;
type Item = Imported['items'][number];

const FIXTURES = 'test/fixtures/fhir/';
const synthea = (file: string): Buffer => readFileSync(`${FIXTURES}synthea/${file}`);
const hl7 = (file: string): fhir4.Resource => JSON.parse(readFileSync(`${FIXTURES}hl7-examples/${file}`, 'utf8')) as fhir4.Resource;
const BUSTER = 'smart-buster-hoeger-235kb.json';
const FLETCHER = 'smart-fletcher-hyatt-3794kb.json';

/** A FHIR bundle whose entries hold any R4 resource. */
type Bundle = fhir4.Bundle<fhir4.FhirResource>;

/** A Synthea patient's bundle, parsed. */
const syntheaBundle = (file: string): Bundle => JSON.parse(synthea(file).toString('utf8')) as Bundle;

/** The bundle's entries: every fixture bundle has some. */
const entries = (bundle: Bundle): fhir4.BundleEntry<fhir4.FhirResource>[] => present(bundle.entry, 'the bundle\'s entries');

/** The bundle's first entry holding a resource of `type`, or, with `id`, that resource. */
function entryOf<T extends fhir4.FhirResource['resourceType']>(bundle: Bundle, type: T, id?: string): fhir4.BundleEntry<Extract<fhir4.FhirResource, { resourceType: T }>> {
  const found = entries(bundle).find((e) => e.resource?.resourceType === type && (id === undefined || e.resource.id === id));
  return present(found, `a ${type}${id ? ` ${id}` : ''} in the bundle`) as fhir4.BundleEntry<Extract<fhir4.FhirResource, { resourceType: T }>>;
}

/** The resource of the bundle's first entry. */
const firstResource = (bundle: Bundle): fhir4.FhirResource => present(at(entries(bundle), 0).resource, 'the first entry\'s resource');

/** Buster Hoeger's bundle with one change to its parsed JSON. */
function busterWith(change: (bundle: Bundle) => void): string {
  const bundle = syntheaBundle(BUSTER);
  change(bundle);
  return JSON.stringify(bundle);
}

const placed = (items: Item[]) => items.filter((i) => i.state !== 'skipped' && i.row === null);
const place = (i: Item) => [i.visit, i.form, i.field, i.resource, i.value];

/** What every import answer must satisfy: counts equal to its items by state. */
function expectCountsOfItems(body: { counts: Record<string, number>; items: Item[] }): void {
  const by = (state: string) => body.items.filter((i) => i.state === state).length;
  expect(body.counts).to.deep.equal({
    values: body.items.length - by('skipped'), conflicts: by('conflict'), same: by('same'), skipped: by('skipped'), saved: by('saved'),
  });
}

describe('importFhirRecord', function () {
  // The largest fixtures take a second or two each to validate and map.
  this.timeout(120_000);
  const { app, world } = useStudyWorld();
  let site2Key: string;

  before(async () => {
    site2Key = (await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Clinic 02', sites: ['02'] })).key;
  });

  async function enrol(sex: string, birthYear: number, enrolledOn: string, options: { site?: string; consent?: boolean } = {}): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: options.site ?? '01', sex, birth_year: birthYear, enrolled_on: enrolledOn },
    });
    expect(res.status).to.equal(201);
    if (options.consent !== false) await giveConsent(app.db.knex, world.code, res.body.subject, enrolledOn);
    return res.body.subject;
  }

  /** A FHIR call: importFhirRecord, or importFhirNdjson with `path: 'fhir-ndjson'`. */
  function send<T = Imported>(subject: string, body: string | Buffer, options: { mode?: 'review' | 'save'; contentType?: string; key?: string; lang?: string; path?: string; headers?: Record<string, string> } = {}): Promise<Reply<T>> {
    const query = new URLSearchParams({ subject, ...(options.mode ? { mode: options.mode } : {}), ...(options.lang ? { lang: options.lang } : {}) });
    return app.call<T>('POST', `/api/v1/studies/${world.code}/${options.path ?? 'fhir'}?${query}`, {
      key: options.key ?? world.key, raw: body, contentType: options.contentType ?? 'application/fhir+json', headers: options.headers,
    });
  }

  /** The rows a FHIR call could leave behind. */
  async function footprint(): Promise<Record<'fhir_imports' | 'records' | 'audit_events' | 'queries' | 'fhir_import_items', number>> {
    const count = async (table: string) => Number(present(await app.db.knex(table).count<{ n: string }>('* as n').first(), `the count of ${table}`).n);
    return {
      fhir_imports: await count('fhir_imports'),
      records: await count('records'),
      audit_events: await count('audit_events'),
      queries: await count('queries'),
      fhir_import_items: await fhirImportItems(app.db.knex),
    };
  }

  /** A saved record's columns these tests read. */
  interface SavedRecord { id: number; status: string; source: string; values: Record<string, string>; tables: Record<string, Record<string, string>[]> }

  async function savedRecord(subject: string, visit: string, form: string): Promise<SavedRecord | undefined> {
    return app.db.knex<SavedRecord>('records as r')
      .join('patients as p', 'p.id', 'r.patient_id').join('visits as v', 'v.id', 'r.visit_id').join('forms as f', 'f.id', 'r.form_id')
      .where({ 'p.subject': subject, 'v.code': visit, 'f.code': form }).first('r.*');
  }

  describe('review mode on each Synthea patient', () => {
    /** Imports a fixture case in review mode and checks what it proposes and that nothing is saved. */
    async function reviewCase(c: PatientCase): Promise<Reply<Imported>> {
      const subject = await enrol(c.sex, c.birthYear, c.enrolledOn);
      const res = await send(subject, synthea(c.file));
      expect(res.status).to.equal(201);
      expect(res.body).to.include({ import: `${world.code}-${subject}-1`, number: 1, subject, status: 'proposed', mode: 'review' });
      expect(res.body.review_url).to.equal(`http://sdx.test/p/${world.code}/s/${subject}/fhir/1`);
      expectCountsOfItems(res.body);
      expect(res.body.counts.saved).to.equal(0);
      expect(placed(res.body.items).map(place)).to.have.deep.members(c.placed);
      for (const item of placed(res.body.items)) expect(item).to.include({ state: 'new', saved_value: null, instance: 1, row: null });
      const unconvertible = res.body.items.filter((i) => i.reason === 'unit_not_convertible');
      expect(unconvertible.map((i) => [i.visit, i.form, i.field, i.resource])).to.have.deep.members(c.unconvertible ?? []);
      expect(res.body.items.filter((i) => i.reason === 'not_chosen').map((i) => i.resource)).to.have.members(c.notChosen ?? []);

      const patient = present(await app.db.knex<{ id: number; subject: string }>('patients').where({ subject }).first(), `patient ${subject}`);
      expect(await app.db.knex('records').where({ patient_id: patient.id })).to.deep.equal([]);
      const stored = await app.db.knex<{ patient_id: number; counts: Imported['counts']; items: Item[] }>('fhir_imports').where({ patient_id: patient.id });
      const only = at(stored, 0, 'the stored imports');
      expect(stored).to.have.length(1);
      expect(only).to.include({ number: 1, status: 'proposed', mode: 'review', decided_at: null, decided_by: null });
      expect(only.counts).to.deep.equal(res.body.counts);
      expect(only.items.map((i) => [i.resource, i.field, i.value, i.state])).to.deep.equal(res.body.items.map((i) => [i.resource, i.field, i.value, i.state]));
      return res;
    }

    for (const c of CASES.filter((c) => c.file !== FLETCHER)) {
      it(`${c.file}, enrolled on ${c.enrolledOn}: proposes its vital signs and laboratory values, saves nothing`, () => reviewCase(c));
    }

    it(`${FLETCHER}, the largest fixture (3.8 MB), within the 5 MB limit: proposes its values with converted units and visits`, async () => {
      expect(synthea(FLETCHER).length).to.be.within(3.7 * 1024 * 1024, 5 * 1024 * 1024);
      const res = await reviewCase(present(CASES.find((c) => c.file === FLETCHER), FLETCHER));
      const byField = (visit: string, field: string) => res.body.items.find((i) => i.visit === visit && i.field === field && i.state === 'new');
      // Synthea gives laboratory values in mg/dL; the demo's fields are in mmol/L and µmol/L.
      expect(byField('screening', 'glucose')).to.deep.include({ value: '4.0', unit: 'mmol/L', original: { value: '71.30990630342204', unit: 'mg/dL' }, form: 'lab_chem' });
      expect(byField('screening', 'creat')).to.deep.include({ value: '281', unit: 'umol/L', original: { value: '3.1740908998168385', unit: 'mg/dL' } });
      expect(byField('baseline', 'sbp')).to.deep.include({ value: '181', unit: 'mm[Hg]', form: 'vs', original: { value: '181.19325249978746', unit: 'mm[Hg]' } });
      expect(byField('baseline', 'vsdate')).to.deep.include({ value: '1992-12-05', unit: null, form: 'vs' });
      expect(byField('baseline', 'hgb')).to.deep.include({ value: '15.9', unit: 'g/dL', form: 'lab_hem' });
    });

    it('says why each item sits at its visit, so that a client tells an adverse-event candidate from an ordinary new row, in the answer’s language', async () => {
      const subject = await enrol('male', 1988, '2016-12-28');
      const file = busterWith((bundle) => {
        const patientRef = entryOf(bundle, 'Patient').fullUrl;
        entries(bundle).push({
          fullUrl: 'urn:uuid:0f1e2d3c-0000-4000-8000-0000000000c2',
          resource: {
            resourceType: 'Condition', id: '0f1e2d3c-0000-4000-8000-0000000000c2', subject: { reference: patientRef },
            code: { coding: [{ system: 'http://snomed.info/sct', code: '25064002', display: 'Headache (finding)' }] },
            onsetDateTime: '2017-01-10T09:00:00+00:00', // day 13 after enrolment
          },
        });
      });
      const res = await send(subject, file);
      expect(res.status).to.equal(201);
      const ae = res.body.items.filter((i) => i.form === 'ae');
      expect(ae.map((i) => [i.field, i.state])).to.deep.include(['events.term', 'new']);
      for (const item of ae) {
        expect(item.placement).to.deep.equal({
          code: 'adverse_event_candidate', day: 13,
          text: 'began on day 13, after enrolment: not medical history but a possible adverse event, offered at Week 4 for review only, never saved automatically',
        });
      }
      const mh = res.body.items.filter((i) => i.form === 'mh');
      expect(mh).to.have.length.above(0);
      for (const item of mh) expect(item.placement).to.include({ code: 'first_visit_with_form' }).and.to.have.property('day').below(0);
      const sbp = present(res.body.items.find((i) => i.field === 'sbp' && i.state === 'new'), 'the new sbp');
      expect(sbp.placement).to.deep.equal({ code: 'in_visit_window', day: -14, text: 'measured on day -14: in the window of Screening' });
      // An item without a visit has no placement, rather than an empty one.
      for (const item of res.body.items.filter((i) => i.visit === null)) expect(item).not.to.have.property('placement');

      // The same content again returns the waiting import, with its placements, here in Russian.
      const again = await send(subject, file, { lang: 'ru' });
      expect(again.status).to.equal(200);
      expect(again.body.items.find((i) => i.field === 'events.term')?.placement).to.deep.equal({
        code: 'adverse_event_candidate', day: 13,
        text: 'началось в день 13, после включения: не анамнез, а возможное нежелательное явление, предложено в визите «Week 4» только для проверки и автоматически не сохраняется',
      });
    });

    it('numbers a patient’s imports 1, 2, … and answers in Russian with lang=ru', async () => {
      const subject = await enrol('male', 1988, '2016-12-28');
      expect((await send(subject, synthea(BUSTER))).body.number).to.equal(1);
      // Other content: the same file again would return import 1 while it waits (see "repeated and empty files").
      const second = await send(subject, busterWith((b) => { firstResource(b).language = 'en'; }), { lang: 'ru' });
      expect(second.status).to.equal(201);
      expect(second.body).to.include({ number: 2, import: `${world.code}-${subject}-2`, review_url: `http://sdx.test/p/${world.code}/s/${subject}/fhir/2` });
    });
  });

  describe('save mode', () => {
    let subject: string;
    let saved: Reply<Imported>;
    before(async () => {
      subject = await enrol('male', 1988, '2016-12-28');
      saved = await send(subject, synthea(BUSTER), { mode: 'save' });
    });

    it('saves every new value and record at once (201, saved) through the records path, for the key’s maker', async () => {
      expect(saved.status).to.equal(201);
      expect(saved.body).to.include({ number: 1, status: 'saved', mode: 'save' });
      expectCountsOfItems(saved.body);
      const values = saved.body.items.filter((i) => i.state !== 'skipped');
      expect(values.every((i) => i.state === 'saved')).to.equal(true);
      expect(saved.body.counts).to.include({ saved: values.length, conflicts: 0, same: 0 });
      const vs = await savedRecord(subject, 'screening', 'vs');
      expect(vs).to.include({ status: 'draft', source: 'fhir' });
      // The measurement date came with the values, so the rejecting edit check vsdate_with_values passed.
      expect(vs?.values).to.deep.equal({ vsdate: '2016-12-14', sbp: '136', dbp: '80', weight: '81.0' });
      // Saved digit for digit as proposed, with the field's decimals (issue 24.5: 81.0, not 81).
      for (const item of placed(values)) expect((await savedRecord(subject, String(item.visit), String(item.form)))?.values[String(item.field)], String(item.field)).to.equal(item.value);
      expect((await savedRecord(subject, 'screening', 'lab_hem'))?.values).to.deep.equal({ hgb: '15.5', wbc: '5.98', plt: '284', hct: '35.5' });
      expect((await savedRecord(subject, 'screening', 'dm'))?.values).to.deep.equal({ height: '185.8', weight: '81.0' });
      expect((await savedRecord(subject, 'screening', 'mh'))?.tables.conditions).to.deep.equal([
        { term: 'Chronic sinusitis (disorder)', code: '40055000', onset: '1994-09-02', ongoing: 'yes' },
        { term: 'Viral sinusitis (disorder)', code: '444814009', onset: '2011-10-04', ongoing: 'no' },
      ]);
      const trail = await app.db.knex<{ action: string; record_id: number; field_code: string; new_value: string }>('audit_events')
        .where({ action: 'record.value_set', record_id: present(vs, 'the saved vital signs').id }).orderBy('field_code');
      expect(trail.map((a) => [a.field_code, a.new_value])).to.deep.equal([['dbp', '80'], ['sbp', '136'], ['vsdate', '2016-12-14'], ['weight', '81.0']]);
      for (const row of trail) {
        expect(row).to.include({ actor_type: 'user', author: 'Manager DEMO', reason: 'Saved from a FHIR record sent through the API key "Test system"' });
      }
      const importRow = await app.db.knex<{ action: string; actor_type: string; author: string }>('audit_events').where({ action: 'fhir.import_saved' }).first();
      expect(importRow).to.include({ actor_type: 'api_key', author: 'Test system (API)' });
    });

    it('saves a stopped medication without an end date with the stop date UNK and not ongoing; an active one stays open', async () => {
      const edward = await enrol('male', 1992, '2015-04-05');
      const res = await send(edward, synthea('smart-edward-gulgowski-284kb.json'), { mode: 'save' });
      expect(res.status).to.equal(201);
      const cm = await savedRecord(edward, 'screening', 'cm');
      expect(cm?.tables.medications).to.deep.equal([
        { name: 'Hydrochlorothiazide 6.25 MG', code: '316052', start: '2011-03-27', stop: 'UNK', ongoing: 'no' },
        { name: 'Hydrochlorothiazide 25 MG', code: '316049', start: '2012-04-01', ongoing: 'yes' },
        { name: 'Ibuprofen 200 MG Oral Tablet', code: '310965', start: '2013-01-26', stop: 'UNK', ongoing: 'no' },
      ]);
    });

    it('saves no measurement date on its own: a vital-signs form whose only value is a tie waits whole for the site', async () => {
      const tied = await enrol('female', 1970, '2026-03-09');
      const heartRate = (id: string, value: number) => JSON.stringify({
        resourceType: 'Observation', id, status: 'final', subject: { reference: 'Patient/p-7f3a' },
        code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] },
        effectiveDateTime: '2026-03-09T09:40:00+03:00', valueQuantity: { value, unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
      });
      const res = await send(tied, `${heartRate('hr-a', 76)}\n${heartRate('hr-b', 90)}\n`, { mode: 'save', contentType: 'application/fhir+ndjson' });
      expect(res.status).to.equal(201);
      expect(res.body).to.include({ status: 'proposed', needs_review: true });
      expect(res.body.items.filter((i) => i.form === 'vs').map((i) => [i.field, i.value, i.state, i.tie ?? false])).to.deep.equal([
        ['hr', null, 'skipped', true],
        ['vsdate', '2026-03-09', 'new', false],
      ]);
      expect(res.body.counts.saved).to.equal(0);
      expect(await savedRecord(tied, 'baseline', 'vs'), 'no vital-signs form holding only a date').to.equal(undefined);
    });

    it('then gives `same` in review mode for everything it saved, and saves nothing more', async () => {
      const before = await footprint();
      const again = await send(subject, synthea(BUSTER));
      expect(again.status).to.equal(201);
      // Nothing is left to decide, so the import does not wait for review (issue 19, point 6).
      expect(again.body).to.include({ number: 2, status: 'saved', needs_review: false });
      expectCountsOfItems(again.body);
      const states = (body: { items: Item[] }) => body.items.map((i) => (i.state === 'saved' ? 'same' : i.state));
      expect(states(again.body)).to.deep.equal(states(saved.body));
      expect(again.body.counts).to.include({ same: saved.body.counts.saved, conflicts: 0, saved: 0 });
      const after = await footprint();
      expect(after).to.deep.equal({ ...before, fhir_imports: before.fhir_imports + 1, fhir_import_items: before.fhir_import_items + again.body.items.length, audit_events: before.audit_events + 1 });
    });

    it('never saves a value that would change a saved one: it stays a conflict in a proposed import', async () => {
      const changed = busterWith((bundle) => {
        const bp = present(entryOf(bundle, 'Observation', '13bfaf3c-434f-4e12-839a-5ee9cfd30dd8').resource, 'the blood pressure');
        const systolic = present(bp.component?.find((c) => c.code.coding?.[0]?.code === '8480-6')?.valueQuantity, 'the systolic value');
        systolic.value = 150.2;
      });
      for (const mode of ['save', 'review'] as const) {
        const res = await send(subject, changed, { mode });
        expect(res.status).to.equal(201);
        expect(res.body).to.include({ status: 'proposed', mode });
        const sbp = res.body.items.find((i) => i.field === 'sbp' && i.state !== 'skipped');
        expect(sbp).to.include({ state: 'conflict', value: '150', saved_value: '136', visit: 'screening' });
        expect(res.body.counts).to.include({ conflicts: 1, saved: 0 });
        expectCountsOfItems(res.body);
        expect((await savedRecord(subject, 'screening', 'vs'))?.values.sbp).to.equal('136');
      }
      expect(await app.db.knex('audit_events').where({ action: 'record.value_changed' })).to.deep.equal([]);
    });
  });

  describe('a table the site marked not done before the file came', () => {
    it('shows the file\'s rows for it as conflicts with the mark as saved, in both modes, and save mode leaves the mark', async () => {
      const subject = await enrol('male', 1988, '2016-12-28');
      const marked = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: [{ subject, visit: 'screening', form: 'mh', not_done: { conditions: 'NA' } }] },
      });
      expect(marked.body.counts.ok).to.equal(1);
      for (const mode of ['review', 'save'] as const) {
        const res = await send(subject, synthea(BUSTER), { mode });
        expect(res.status).to.equal(201);
        expect(res.body).to.include({ status: 'proposed', mode });
        expectCountsOfItems(res.body);
        const mh = res.body.items.filter((i) => i.form === 'mh' && i.state !== 'skipped');
        expect(mh.map((i) => [i.field, i.row, i.value, i.saved_value, i.state])).to.deep.equal([
          ['conditions.code', 0, '40055000', '[NA]', 'conflict'],
          ['conditions.term', 0, 'Chronic sinusitis (disorder)', '[NA]', 'conflict'],
          ['conditions.onset', 0, '1994-09-02', '[NA]', 'conflict'],
          ['conditions.ongoing', 0, 'yes', '[NA]', 'conflict'],
          ['conditions.code', 1, '444814009', '[NA]', 'conflict'],
          ['conditions.term', 1, 'Viral sinusitis (disorder)', '[NA]', 'conflict'],
          ['conditions.onset', 1, '2011-10-04', '[NA]', 'conflict'],
          ['conditions.ongoing', 1, 'no', '[NA]', 'conflict'],
        ]);
        expect(res.body.counts.conflicts).to.equal(mh.length);
        const record = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}&form=mh`, { key: world.key });
        const saved = at(record.body.records, 0, 'the medical history');
        expect(saved.not_done, mode).to.deep.equal({ conditions: 'NA' });
        expect(saved.tables, mode).to.deep.equal({});
      }
      // Save mode saved the other forms' new values, never the rows against the mark.
      expect((await savedRecord(subject, 'screening', 'vs'))?.values).to.include({ sbp: '136' });
    });
  });

  describe('repeated and empty files (issue 19, point 6)', () => {
    const patientOnly = JSON.stringify({ resourceType: 'Bundle', type: 'collection', entry: [{ resource: { resourceType: 'Patient', id: 'p1', gender: 'male', birthDate: '1988-07-07' } }] });
    const proposedImports = async (subject: string) => app.db.knex('fhir_imports as f').join('patients as p', 'p.id', 'f.patient_id')
      .where({ 'p.subject': subject }).orderBy('f.number').select('f.number', 'f.status', 'f.mode');

    it('answers a file from which nothing maps with 201, its counts, status saved and needs_review false, in both modes', async () => {
      const subject = await enrol('male', 1988, '2016-12-28');
      for (const mode of ['review', 'save'] as const) {
        const res = await send(subject, patientOnly, { mode });
        expect(res.status, mode).to.equal(201);
        expect(res.body, mode).to.include({ status: 'saved', needs_review: false, mode });
        expect(res.body.counts, mode).to.deep.equal({ values: 0, conflicts: 0, same: 0, skipped: 0, saved: 0 });
      }
      expect(await proposedImports(subject)).to.deep.equal([{ number: 1, status: 'saved', mode: 'review' }, { number: 2, status: 'saved', mode: 'save' }]);
    });

    it('returns the waiting import (200) for the same content sent again, written differently, and makes no second one', async () => {
      const subject = await enrol('male', 1988, '2016-12-28');
      const first = await send(subject, synthea(BUSTER));
      expect(first.status).to.equal(201);
      expect(first.body).to.include({ number: 1, status: 'proposed', needs_review: true });
      const before = await footprint();
      // The same resources again, then with other blanks and member order: the same content.
      const bundle = syntheaBundle(BUSTER);
      const reordered = JSON.stringify(Object.fromEntries(Object.entries(bundle).reverse()), null, 2);
      for (const body of [synthea(BUSTER), reordered]) {
        const again = await send(subject, body);
        expect(again.status).to.equal(200);
        expect(again.body).to.deep.equal(first.body);
      }
      expect(await footprint()).to.deep.equal(before);
      // Another mode, or other content, is another import.
      const changed = await send(subject, busterWith((b) => { firstResource(b).language = 'en'; }));
      expect(changed.status).to.equal(201);
      expect(changed.body.number).to.equal(2);
    });

    it('makes one import of the same file sent twice at once; the other call gets it with 200', async () => {
      const subject = await enrol('male', 1988, '2016-12-28');
      const both = await Promise.all([1, 2].map(() => send(subject, synthea(BUSTER))));
      expect(both.map((r) => r.status).sort()).to.deep.equal([200, 201]);
      expect(at(both, 0).body.number).to.equal(1);
      expect(at(both, 1).body.number).to.equal(1);
      expect(await proposedImports(subject)).to.deep.equal([{ number: 1, status: 'proposed', mode: 'review' }]);
    });

    it('makes a new import of the same file once the waiting one is decided', async () => {
      const subject = await enrol('male', 1988, '2016-12-28');
      expect((await send(subject, synthea(BUSTER))).status).to.equal(201);
      await app.db.knex('fhir_imports').whereIn('patient_id', app.db.knex('patients').select('id').where({ subject })).update({ status: 'rejected' });
      const again = await send(subject, synthea(BUSTER));
      expect(again.status).to.equal(201);
      expect(again.body).to.include({ number: 2, status: 'proposed' });
    });
  });

  describe('bodies', () => {
    const ndjson = ['patient-example.json', 'observation-example-body-height.json', 'observation-example-heart-rate.json', 'observation-example-respiratory-rate.json']
      .map((f) => JSON.stringify(hl7(f))).join('\n');

    // importFhirNdjson declares NDJSON; importFhirRecord still takes it as it did in v1.1.0 (its `x-also-accepts`).
    for (const [path, contentType] of [['fhir-ndjson', 'application/fhir+ndjson'], ['fhir-ndjson', 'application/x-ndjson'], ['fhir', 'application/fhir+ndjson'], ['fhir', 'application/x-ndjson']]) {
      it(`takes NDJSON as ${contentType} on /${path}`, async () => {
        // The HL7 examples were measured on 1999-07-02: day −14, screening, when enrolled on 1999-07-16.
        const subject = await enrol('male', 1974, '1999-07-16');
        const res = await send(subject, `${ndjson}\n\n`, { contentType, path });
        expect(res.status).to.equal(201);
        expect(placed(res.body.items).map(place)).to.deep.equal([
          ['screening', 'dm', 'height', 'Observation/body-height', '169.9'],
          ['screening', 'vs', 'hr', 'Observation/heart-rate', '44'],
          ['screening', 'vs', 'vsdate', 'Observation/heart-rate', '1999-07-02'],
          ['screening', 'vs', 'rr', 'Observation/respiratory-rate', '26'],
        ]);
        expectCountsOfItems(res.body);
      });
    }

    it('answers an Idempotency-Key once across both FHIR calls: NDJSON retried on /fhir is the same import', async () => {
      const subject = await enrol('male', 1974, '1999-07-16');
      const headers = { 'idempotency-key': `fhir-${subject}-once` };
      const first = await send(subject, ndjson, { contentType: 'application/fhir+ndjson', path: 'fhir-ndjson', headers });
      expect(first.status).to.equal(201);
      const before = await footprint();
      const retried = await send(subject, ndjson, { contentType: 'application/fhir+ndjson', headers });
      expect(retried.status).to.equal(201);
      expect(retried.headers.get('idempotent-replayed')).to.equal('true');
      expect(retried.body).to.deep.equal(first.body);
      expect(await footprint()).to.deep.equal(before);
    });

    for (const contentType of ['application/fhir+json', 'application/json']) {
      it(`takes a single resource as ${contentType}`, async () => {
        const subject = await enrol('female', 1970, '2026-03-09');
        const observation = {
          resourceType: 'Observation', id: 'hr-20260309', status: 'final', subject: { reference: 'Patient/p-7f3a' },
          code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] },
          effectiveDateTime: '2026-03-09T09:40:00+03:00', valueQuantity: { value: 76, unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
        };
        const res = await send(subject, JSON.stringify(observation), { contentType });
        expect(res.status).to.equal(201);
        expect(res.body.items.map((i) => [i.resource, i.visit, i.form, i.field, i.value, i.state])).to.deep.equal([
          ['Observation/hr-20260309', 'baseline', 'vs', 'hr', '76', 'new'],
          ['Observation/hr-20260309', 'baseline', 'vs', 'vsdate', '2026-03-09', 'new'],
        ]);
        expect(res.body.counts).to.deep.equal({ values: 2, conflicts: 0, same: 0, skipped: 0, saved: 0 });
      });
    }
  });

  describe('refusals keep nothing', () => {
    let buster: string;
    let female: string;
    let noConsent: string;
    let atSite2: string;
    let linked: string;
    before(async () => {
      buster = await enrol('male', 1988, '2016-12-28');
      female = await enrol('female', 1988, '2016-12-28');
      noConsent = await enrol('male', 1988, '2016-12-28', { consent: false });
      atSite2 = await enrol('male', 1988, '2016-12-28', { site: '02' });
      linked = await enrol('female', 1970, '2026-03-09');
      // As the first confirmed import links them (importDecision.ts, linkPatientIdentity).
      await app.db.knex('patients').where({ subject: linked }).update({ fhir_identity: JSON.stringify([{ system: 'urn:oid:1.2.3.4', value: 'A-1' }]) });
    });

    const merged = () => {
      const a = syntheaBundle(BUSTER);
      const b = syntheaBundle('smart-edward-gulgowski-284kb.json');
      return JSON.stringify({ ...a, entry: [...entries(a), ...entries(b)] });
    };
    /** Buster Hoeger's bundle as hospital A's server would send it (the Patient's fullUrl and every reference to it there), changed. */
    const busterAtHospitalA = (change: (bundle: Bundle, patientId: string) => void) => {
      const id = present(entryOf(syntheaBundle(BUSTER), 'Patient').resource?.id, 'the Patient\'s id');
      const bundle = JSON.parse(synthea(BUSTER).toString('utf8').replaceAll(`urn:uuid:${id}`, `http://hospital-a.example/fhir/Patient/${id}`)) as Bundle;
      change(bundle, id);
      return JSON.stringify(bundle);
    };
    /** Buster's Patient, changed, as a second Patient of his bundle. */
    const withSecondPatient = (change: (patient: fhir4.Patient) => void, fullUrl?: string) => (bundle: Bundle) => {
      const second = structuredClone(present(entryOf(bundle, 'Patient').resource, 'the Patient'));
      change(second);
      entries(bundle).push({ ...(fullUrl ? { fullUrl } : {}), resource: second });
    };
    /** The bundle with its last resource made invalid R4 (an instant that is none), a resource the mapping never reads. */
    const lastNotR4 = () => busterWith((bundle) => { present(at(entries(bundle), entries(bundle).length - 1).resource, 'the last resource').meta = { lastUpdated: 'never' }; });
    const cases: {
      name: string; subject: () => string; body: () => string | Buffer; contentType?: string; key?: () => string; mode?: 'save'; path?: string; status: number; code: string; detail?: RegExp;
    }[] = [
      {
        name: 'a file whose Observation refers to another patient',
        subject: () => buster,
        body: () => busterWith((bundle) => { present(entryOf(bundle, 'Observation').resource, 'an Observation').subject = { reference: 'Patient/someone-else' }; }),
        status: 422, code: 'fhir_other_patient', detail: /refers to Patient\/someone-else/,
      },
      {
        name: 'a file with an Observation about a Group (a ward\'s heart rate)',
        subject: () => buster,
        body: () => busterWith((bundle) => { present(entryOf(bundle, 'Observation').resource, 'an Observation').subject = { reference: 'Group/ward-7' }; }),
        status: 422, code: 'fhir_other_patient', detail: /subject refers to Group\/ward-7, which is not a Patient/,
      },
      {
        name: 'a file whose Observation refers to its Patient\'s id on another server (the Patient\'s fullUrl is on hospital A)',
        subject: () => buster,
        body: () => busterAtHospitalA((bundle, id) => {
          present(entryOf(bundle, 'Observation').resource, 'an Observation').subject = { reference: `http://hospital-b.example/fhir/Patient/${id}` };
        }),
        status: 422, code: 'fhir_other_patient', detail: /refers to http:\/\/hospital-b\.example\/fhir\/Patient\//,
      },
      { name: 'two patients (two bundles merged)', subject: () => buster, body: merged, status: 422, code: 'fhir_two_patients' },
      {
        name: 'an Observation naming a contained Patient (sharing the Patient\'s identifiers) whose sex contradicts the enrolment',
        subject: () => buster,
        body: () => busterWith((bundle) => {
          const patient = structuredClone(present(entryOf(bundle, 'Patient').resource, 'the Patient'));
          Object.assign(present(entryOf(bundle, 'Observation').resource, 'an Observation'), {
            subject: { reference: '#p' }, contained: [{ ...patient, id: 'p', gender: 'female' }],
          });
        }),
        status: 422, code: 'fhir_identity_mismatch', detail: /the Patient #p contained in Observation\/.* is female/,
      },
      {
        name: 'a lone Observation naming a contained Patient without the identifiers linked to the patient',
        subject: () => linked,
        body: () => JSON.stringify({
          ...hl7('observation-example-heart-rate.json'), subject: { reference: '#p' },
          contained: [{ resourceType: 'Patient', id: 'p', gender: 'female', birthDate: '1970-02-02', identifier: [{ system: 'urn:oid:1.2.3.4', value: 'SOMEONE-ELSE' }] }],
        }),
        status: 422, code: 'fhir_identity_mismatch', detail: /carries none of the identifiers linked/,
      },
      {
        name: 'a second Patient with the Patient\'s id and other identifiers on another server',
        subject: () => buster,
        body: () => busterAtHospitalA((bundle, id) => {
          withSecondPatient((p) => { p.identifier = [{ system: 'urn:oid:1.2.3.4', value: 'B-1' }]; }, `http://hospital-b.example/fhir/Patient/${id}`)(bundle);
        }),
        status: 422, code: 'fhir_two_patients',
      },
      {
        name: 'a second Patient sharing the Patient\'s identifiers whose sex contradicts the enrolment',
        subject: () => buster,
        body: () => busterWith(withSecondPatient((p) => { p.id = 'second'; p.gender = 'female'; })),
        status: 422, code: 'fhir_identity_mismatch', detail: /the Patient Patient\/second is female/,
      },
      { name: 'JSON that is not a resource', subject: () => buster, body: () => '{"hello": 1}', status: 422, code: 'fhir_not_fhir' },
      { name: 'a JSON array', subject: () => buster, body: () => '[{"resourceType": "Patient"}]', status: 422, code: 'fhir_not_fhir' },
      { name: 'text that is not JSON', subject: () => buster, body: () => '<Bundle xmlns="http://hl7.org/fhir"/>', status: 422, code: 'fhir_not_fhir' },
      { name: 'NDJSON with a line that is not JSON', subject: () => buster, body: () => '{"resourceType":"Basic"}\nnot json', contentType: 'application/fhir+ndjson', status: 422, code: 'fhir_not_fhir', detail: /line 2/ },
      {
        name: 'a resource that is not valid R4', subject: () => buster,
        // Not one of R4's genders, on purpose.
        body: () => busterWith((bundle) => { present(entryOf(bundle, 'Patient').resource, 'the Patient').gender = 'mal' as fhir4.Patient['gender']; }),
        status: 422, code: 'fhir_not_fhir',
      },
      { name: 'a Patient whose sex contradicts the enrolment', subject: () => female, body: () => synthea(BUSTER), status: 422, code: 'fhir_identity_mismatch', detail: /is male, the patient was enrolled as female/ },
      // The R4 check runs beside the mapping and the writes (r4FaultInSlices): its refusal must still come first, and undo them.
      { name: 'a file not valid R4 whose Patient also contradicts the enrolment, as not R4', subject: () => female, body: lastNotR4, status: 422, code: 'fhir_not_fhir', detail: /lastUpdated "never"/ },
      { name: 'in save mode, into an empty patient, a file whose last resource is not valid R4', subject: () => buster, body: lastNotR4, mode: 'save', status: 422, code: 'fhir_not_fhir', detail: /lastUpdated "never"/ },
      {
        name: 'a Patient whose birth year contradicts the enrolment', subject: () => buster,
        body: () => busterWith((bundle) => { present(entryOf(bundle, 'Patient').resource, 'the Patient').birthDate = '1989-03-16'; }),
        status: 422, code: 'fhir_identity_mismatch', detail: /born in 1989/,
      },
      { name: 'an unknown subject', subject: () => '99-999', body: () => synthea(BUSTER), status: 422, code: 'unknown_subject' },
      { name: 'a patient of a site the key does not have', subject: () => buster, key: () => site2Key, body: () => synthea(BUSTER), status: 422, code: 'unknown_subject' },
      { name: 'a patient without consent', subject: () => noConsent, body: () => synthea(BUSTER), status: 422, code: 'consent_missing' },
      {
        name: 'a body over 5 MB (by its Content-Length)', subject: () => buster,
        // Valid FHIR JSON of the right patient, padded with blanks to one byte over the limit.
        body: () => { const file = synthea(BUSTER); return Buffer.concat([file, Buffer.alloc(5 * 1024 * 1024 + 1 - file.length, ' ')]); },
        status: 413, code: 'payload_too_large',
      },
      { name: 'FHIR XML', subject: () => buster, body: () => '<Bundle xmlns="http://hl7.org/fhir"/>', contentType: 'application/fhir+xml', status: 415, code: 'unsupported_media_type' },
      // importFhirNdjson: the same refusals, and it takes NDJSON only.
      { name: 'FHIR JSON sent to the NDJSON call', path: 'fhir-ndjson', subject: () => buster, body: () => synthea(BUSTER), contentType: 'application/fhir+json', status: 415, code: 'unsupported_media_type' },
      { name: 'an empty body sent to the NDJSON call', path: 'fhir-ndjson', subject: () => buster, body: () => '', contentType: 'application/fhir+ndjson', status: 422, code: 'fhir_not_fhir', detail: /the body is empty/ },
      { name: 'NDJSON with a line that is not JSON, sent to the NDJSON call', path: 'fhir-ndjson', subject: () => buster, body: () => '{"resourceType":"Basic"}\nnot json', contentType: 'application/x-ndjson', status: 422, code: 'fhir_not_fhir', detail: /line 2/ },
      { name: 'NDJSON of a patient without consent, sent to the NDJSON call', path: 'fhir-ndjson', subject: () => noConsent, body: () => JSON.stringify(hl7('observation-example-heart-rate.json')), contentType: 'application/fhir+ndjson', status: 422, code: 'consent_missing' },
    ];
    for (const c of cases) {
      it(`refuses ${c.name} with ${c.status} ${c.code}`, async () => {
        const before = await footprint();
        const res = await send<Problem>(c.subject(), c.body(), { contentType: c.contentType, key: c.key?.(), mode: c.mode, path: c.path });
        expect(res.status).to.equal(c.status);
        expect(res.body, JSON.stringify(res.body)).to.include({ code: c.code, status: c.status });
        if (c.detail) expect(res.body.detail, res.body.detail).to.match(c.detail);
        expect(await footprint()).to.deep.equal(before);
      });
    }

    it('the key of site 02 imports its own patient, which proves the refusal above was about the site', async () => {
      const res = await send(atSite2, synthea(BUSTER), { key: site2Key });
      expect(res.status).to.equal(201);
    });

    for (const [contentType, opening] of [['application/fhir+json', '{"resourceType": "Bundle", "type": "collection", "entry": []'], ['application/fhir+ndjson', '{"resourceType": "Basic"}\n']]) {
      it(`refuses a chunked ${contentType} body over 5 MB sent without Content-Length with 413 (the body reader’s limit), keeping nothing`, async () => {
        const before = await footprint();
        const url = new URL(`${app.baseUrl}/api/v1/studies/${world.code}/fhir?subject=${buster}`);
        const answer = await new Promise<{ status: number; type: string; body: Record<string, unknown>; length: string | undefined }>((resolve, reject) => {
          const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${world.key}`, 'content-type': contentType, 'transfer-encoding': 'chunked' } }, (res) => {
            let text = '';
            res.on('data', (chunk) => { text += chunk; });
            res.on('end', () => resolve({
              status: res.statusCode!, type: res.headers['content-type'] ?? '', body: JSON.parse(text) as Record<string, unknown>, length: req.getHeader('content-length') as string | undefined,
            }));
          });
          req.on('error', reject);
          const chunk = Buffer.alloc(1024 * 1024, ' ');
          let sent = 0;
          req.write(opening);
          const pump = () => {
            while (sent < 6) {
              sent += 1;
              if (!req.write(chunk)) { req.once('drain', pump); return; }
            }
            req.end(contentType === 'application/fhir+json' ? '}' : '');
          };
          pump();
        });
        expect(answer.length).to.equal(undefined);
        await assertMatchesSpec('importFhirRecord', answer.status, answer.type, answer.body);
        expect(answer.status).to.equal(413);
        expect(answer.body).to.include({ code: 'payload_too_large', status: 413 });
        expect(await footprint()).to.deep.equal(before);
      });
    }

    it('refuses both modes in a locked study with 423, keeping nothing', async () => {
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: true }));
      try {
        const before = await footprint();
        for (const mode of ['review', 'save'] as const) {
          const res = await send<Problem>(buster, synthea(BUSTER), { mode });
          expect(res.status).to.equal(423);
          expect(res.body.code).to.equal('study_locked');
        }
        expect(await footprint()).to.deep.equal(before);
      } finally {
        await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: false }));
      }
    });
  });
});
