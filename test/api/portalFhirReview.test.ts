import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { giveConsent } from '../helpers/factories.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { at, only, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

type FhirImport = AnswerOf<'importFhirRecord', 201>;
type Item = FhirImport['items'][number];
type RecordsPage = AnswerOf<'listFormRecords', 200>;
/** The few members of a FHIR bundle the tests below edit. */
interface Bundle { entry: { fullUrl: string; resource: { id: string; resourceType: string } & Record<string, unknown> }[] }
/** What the database holds of a FHIR import (its items as the API answers them). */
interface StoredImport { id: number; status: string; decided_by: number | null; items: Item[] }
/** An audit row of a decision on an import, with the details the portal writes. */
interface DecisionRow { author: string; reason: string | null; details: { saved?: number[]; kept?: number[]; ties_picked?: Record<string, string> } }

/** Buster Hoeger (Synthea): male, born 1988; enrolled on 2016-12-28 his 2016-12-14 measurements fall in the screening window. */
const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');
const ENROLMENT = { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' };

/**
 * Buster's file with two glucose results taken at the same instant with different values (90 and 180
 * mg/dL, 5.0 and 10.0 mmol/L), as a Synthea patient has creatinine 83 and 244 µmol/L: a tie.
 */
function busterWithTie(): Buffer {
  const bundle = JSON.parse(BUSTER.toString('utf8')) as Bundle;
  const hgb = present(bundle.entry.find((e) => e.resource.id === '55f8c6fb-eb5c-4ad9-869b-fd7540654851'), 'the haemoglobin entry');
  for (const [id, value] of [['0f1e2d3c-0000-4000-8000-000000000001', 90], ['0f1e2d3c-0000-4000-8000-000000000002', 180]] as const) {
    const entry = structuredClone(hgb);
    entry.fullUrl = `urn:uuid:${id}`;
    Object.assign(entry.resource, {
      id,
      code: { coding: [{ system: 'http://loinc.org', code: '2339-0', display: 'Glucose [Mass/volume] in Blood' }] },
      valueQuantity: { value, unit: 'mg/dL', system: 'http://unitsofmeasure.org', code: 'mg/dL' },
    });
    bundle.entry.push(entry);
  }
  return Buffer.from(JSON.stringify(bundle));
}

/** The row of an item on the review page, as text. */
function itemRow(page: PortalReply, position: number): string {
  const row = new RegExp(`<tr class="item [a-z]+" data-position="${position}"[^>]*>([\\s\\S]*?)</tr>`).exec(page.html);
  expect(row, `item ${position} is on the page`).to.not.equal(null);
  return present(row?.[1], `item ${position} on the page`).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}

describe('staff portal: the FHIR review page', () => {
  const { app, world } = useStudyWorld();
  let staff: PortalClient;

  before(async () => {
    await addStaff(app.db.knex, 'nurse@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'] }, 'Nina Nurse');
    await addStaff(app.db.knex, 'other@sdx.test', { study: world.code, role: 'site_staff', sites: ['02'] });
    staff = new PortalClient(app.baseUrl);
    expect((await staff.signIn('nurse@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });

  /** A patient with a saved screening vital-signs form, and Buster's file proposed for review. */
  async function proposed(withSavedForm = true, file: Buffer = BUSTER, mode = 'review'): Promise<{ subject: string; url: string; items: Item[] }> {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: ENROLMENT });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
    if (withSavedForm) {
      const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '80', hr: '70' } }] },
      });
      expect(saved.body.counts.ok).to.equal(1);
    }
    const res = await app.call<FhirImport>('POST', `/api/v1/studies/${world.code}/fhir?subject=${subject}&mode=${mode}`, { key: world.key, raw: file, contentType: 'application/fhir+json' });
    expect(res.status).to.equal(201);
    expect(res.body.status).to.equal('proposed');
    return { subject, url: new URL(res.body.review_url).pathname, items: res.body.items };
  }

  /** The database id of a patient. */
  const patientIdOf = async (subject: string) =>
    present(await app.db.knex('patients').where({ subject }).first<{ id: number } | undefined>('id'), `patient ${subject}`).id;

  const positionOf = (items: Item[], visit: string, form: string, field: string) => items.findIndex((i) => i.visit === visit && i.form === form && i.field === field && i.state !== 'skipped');

  it('shows the items by visit and form with proposed value, unit, source, saved value and state; conflicts stand out', async () => {
    const { subject, url, items } = await proposed();
    expect(url).to.equal(`/p/${world.code}/s/${subject}/fhir/1`);
    const page = await staff.get(url);
    expect(page.status).to.equal(200);
    expect(page.html).to.include(`FHIR import No. 1 of patient ${subject}`).and.include('waiting for review');
    const sbp = positionOf(items, 'screening', 'vs', 'sbp');
    expect(at(items, sbp)).to.include({ state: 'conflict', value: '136', saved_value: '140' });
    expect(itemRow(page, sbp)).to.equal(`Systolic blood pressure sbp 136 mm[Hg] in the file: 136.48536429185222 mm[Hg] ${at(items, sbp).resource} http://loinc.org | 8480-6 — Systolic Blood Pressure ${at(items, sbp).effective} measured on day -14: in the window of Screening 140 conflict keep the saved value replace it`);
    expect(page.html).to.match(new RegExp(`<tr class="item conflict" data-position="${sbp}" data-state="conflict">`));
    const weight = positionOf(items, 'screening', 'vs', 'weight');
    expect(at(items, weight).state).to.equal('new');
    expect(page.html).to.include(`name="take_${weight}"`);
    const vsdate = positionOf(items, 'screening', 'vs', 'vsdate');
    expect(itemRow(page, vsdate)).to.match(/ 2016-12-14 same as saved$/);
    const groups = [...page.html.matchAll(/<section class="review-group" data-visit="(\w+)" data-instance="(\d+)" data-form="(\w+)">/g)].map((m) => `${m[1]}/${m[3]}`);
    expect(groups.slice(0, 3)).to.deep.equal(['screening/dm', 'screening/vs', 'screening/lab_hem']);
    expect(page.html).to.include('id="confirm-chosen"').and.include('id="confirm-all"').and.include('id="reject"');
  });

  it('confirms the chosen values through the one write path with the confirming person as author, once', async () => {
    const { subject, url, items } = await proposed();
    await staff.get(url);
    const sbp = positionOf(items, 'screening', 'vs', 'sbp');
    const weight = positionOf(items, 'screening', 'vs', 'weight');
    const height = positionOf(items, 'screening', 'dm', 'height');
    const res = await staff.post(url, { decision: 'confirm_chosen', [`take_${weight}`]: 'on', [`take_${height}`]: 'on', [`conflict_${sbp}`]: 'replace' });
    expect(res.status).to.equal(303);
    expect(res.location).to.equal(url);

    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    const vs = present(read.body.records.find((r) => r.visit === 'screening' && r.form === 'vs'), 'the screening vital signs');
    expect(vs.values).to.deep.equal({ vsdate: '2016-12-14', sbp: '136', dbp: '80', hr: '70', weight: '81.0' });
    // Filled partly through the API, partly from FHIR: the record keeps its first source, and the audit
    // trail below tells the FHIR values by their reason (issue 24.5).
    expect(vs.source).to.equal('api');
    const dm = present(read.body.records.find((r) => r.visit === 'screening' && r.form === 'dm'), 'the screening demography');
    expect(dm).to.include({ status: 'draft', source: 'fhir' });
    expect(dm.values).to.deep.equal({ height: '185.8' });
    expect(read.body.records.filter((r) => r.form === 'lab_hem'), 'values not ticked are not saved').to.deep.equal([]);

    const patientId = await patientIdOf(subject);
    const trail = await app.db.knex('audit_events').where({ patient_id: patientId }).whereIn('action', ['record.value_changed', 'record.value_set'])
      .where('author', 'Nina Nurse').orderBy('field_code').select('action', 'reason', 'field_code', 'old_value', 'new_value');
    expect(trail).to.deep.equal([
      { action: 'record.value_set', reason: 'Taken from FHIR import 1, confirmed in the portal', field_code: 'height', old_value: null, new_value: '185.8' },
      { action: 'record.value_changed', reason: 'Taken from FHIR import 1, confirmed in the portal', field_code: 'sbp', old_value: '140', new_value: '136' },
      { action: 'record.value_changed', reason: 'Taken from FHIR import 1, confirmed in the portal', field_code: 'weight', old_value: null, new_value: '81.0' },
    ]);
    const decision = await app.db.knex('audit_events').where({ patient_id: patientId, action: 'fhir.import_confirmed' }).first<DecisionRow | undefined>();
    expect(decision?.author).to.equal('Nina Nurse');
    expect(decision?.details).to.deep.include({ saved: [height, weight, sbp].sort((a, b) => a - b), kept: [positionOf(items, 'screening', 'vs', 'dbp')].filter((p) => at(items, p).state === 'conflict') });
    const stored = present(await app.db.knex('fhir_imports').where({ patient_id: patientId, number: 1 }).first<StoredImport | undefined>(), 'the stored import');
    expect(stored).to.include({ status: 'confirmed', decided_by: (await app.db.knex('users').where({ email: 'nurse@sdx.test' }).first<{ id: number } | undefined>('id'))?.id });

    const page = await staff.get(url);
    expect(page.html).to.include('This import is confirmed').and.not.include('id="confirm-chosen"').and.not.include('name="take_');
    expect(page.html).to.match(/<dd id="import-status" data-status="confirmed"><strong>confirmed<\/strong> — by Nina Nurse, /);
    expect(itemRow(page, weight)).to.match(/ saved$/);
    // Issue 19.9: the saved value column shows what the place holds after the confirmation, not before.
    expect(itemRow(page, sbp)).to.match(/ 136 saved$/);
    expect(itemRow(page, weight)).to.match(/ 81.0 saved$/);
    expect(itemRow(page, positionOf(items, 'screening', 'lab_hem', 'hgb'))).to.match(/ new$/);

    const again = await staff.post(url, { decision: 'confirm_all' });
    expect(again.status).to.equal(409);
    expect(again.html).to.include(`FHIR import 1 of patient &quot;${subject}&quot; no longer waits for a decision (status: confirmed); it is decided only once.`);
    const rejected = await staff.post(url, { decision: 'reject' });
    expect(rejected.status).to.equal(409);
    expect((await app.db.knex('fhir_imports').where({ id: stored.id }).first<StoredImport | undefined>())?.status).to.equal('confirmed');
  });

  it('confirms all: every new value fills its place, and a conflict keeps the saved value unless "replace" is chosen', async () => {
    const { subject, url, items } = await proposed();
    await staff.get(url);
    expect((await staff.post(url, { decision: 'confirm_all' })).status).to.equal(303);
    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    const values = (form: string) => read.body.records.find((r) => r.visit === 'screening' && r.form === form)?.values;
    expect(values('vs')).to.include({ sbp: '140', dbp: '80', weight: '81.0' });
    expect(values('lab_hem')).to.include({ hgb: at(items, positionOf(items, 'screening', 'lab_hem', 'hgb')).value });
  });

  it('takes a table row as one: one tick per condition row, and the row is saved with all its cells', async () => {
    const { subject, url, items } = await proposed(false);
    const page = await staff.get(url);
    const rows = new Map<number, number[]>();
    items.forEach((item, position) => {
      if (item.form === 'mh' && item.state === 'new') {
        const row = present(item.row, 'the row of a table item');
        rows.set(row, [...(rows.get(row) ?? []), position]);
      }
    });
    expect(rows.size).to.be.greaterThan(1);
    for (const positions of rows.values()) {
      expect(page.html).to.include(`name="take_${at(positions, 0)}"`);
      for (const other of positions.slice(1)) {
        expect(page.html).not.to.include(`name="take_${other}"`);
        expect(itemRow(page, other)).to.match(/^taken with its row /);
      }
    }
    const first = at([...rows.values()], 0);
    expect((await staff.post(url, { decision: 'confirm_chosen', [`take_${at(first, 0)}`]: 'on' })).status).to.equal(303);
    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    const mh = present(read.body.records.find((r) => r.form === 'mh'), 'the medical history');
    const columnOf = (item: Item) => at(present(item.field, 'a table item\'s field').split('.'), 1);
    const expected = Object.fromEntries(first.map((p) => [columnOf(at(items, p)), at(items, p).value]));
    expect(mh.tables.conditions).to.deep.equal([expected]);
    expect(Object.keys(expected)).to.include.members(['term', 'code']);
  });

  it('asks the site to pick in a tie: confirm all leaves it, a pick saves the chosen candidate; save mode saves nothing for it', async () => {
    const { subject, url, items } = await proposed(false, busterWithTie());
    const tie = items.findIndex((i) => i.tie === true);
    expect(at(items, tie)).to.include({ visit: 'screening', form: 'lab_chem', field: 'glucose', value: null, state: 'skipped', reason: 'not_chosen' });
    expect(at(items, tie).candidates.map((c) => c.value)).to.deep.equal(['5.0', '10.0']);
    const page = await staff.get(url);
    expect(itemRow(page, tie)).to.include('5.0 mmol/L').and.include('10.0 mmol/L').and.include('tie: pick a value');
    expect(page.html).to.include(`name="tie_${tie}" value="1"`);
    expect((await staff.post(url, { decision: 'confirm_chosen', [`tie_${tie}`]: '1' })).status).to.equal(303);
    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    // Saved with the field's decimals, as the candidate was proposed.
    expect(present(read.body.records.find((r) => r.form === 'lab_chem'), 'the chemistry record').values).to.deep.equal({ glucose: '10.0' });
    const patientId = await patientIdOf(subject);
    const decision = await app.db.knex('audit_events').where({ patient_id: patientId, action: 'fhir.import_confirmed' }).first<DecisionRow | undefined>();
    expect(decision?.details.ties_picked).to.deep.equal({ [tie]: 'Observation/0f1e2d3c-0000-4000-8000-000000000002' });
    // The stored import says what the pick saved and from which observation, not value null and `not_chosen`.
    const stored = present(await app.db.knex('fhir_imports').where({ patient_id: patientId, number: 1 }).first<StoredImport | undefined>(), 'the stored import').items;
    expect(at(stored, tie)).to.deep.include({ state: 'saved', value: '10.0', reason: null, tie: true, picked: 'Observation/0f1e2d3c-0000-4000-8000-000000000002' });
    expect(at(stored, tie).candidates.map((c) => c.resource)).to.include(at(stored, tie).picked);
    expect(stored.filter((i) => i.picked !== undefined), 'only the picked tie').to.have.length(1);
    expect(itemRow(await staff.get(url), tie)).to.match(/ 10.0 saved$/);

    const other = await proposed(false, busterWithTie());
    expect((await staff.post(other.url, { decision: 'confirm_all' })).status).to.equal(303);
    const otherRead = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${other.subject}`, { key: world.key });
    expect(otherRead.body.records.find((r) => r.form === 'lab_chem'), 'confirm all picks no candidate').to.equal(undefined);

    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: ENROLMENT });
    await giveConsent(app.db.knex, world.code, enrolled.body.subject, '2016-12-01');
    const saved = await app.call<FhirImport>('POST', `/api/v1/studies/${world.code}/fhir?subject=${enrolled.body.subject}&mode=save`, { key: world.key, raw: busterWithTie(), contentType: 'application/fhir+json' });
    expect(saved.status).to.equal(201);
    expect(saved.body.status, 'the tie waits for the site').to.equal('proposed');
    expect(saved.body.items.find((i) => i.tie)).to.include({ state: 'skipped', value: null });
    const savedRead = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${enrolled.body.subject}`, { key: world.key });
    expect(savedRead.body.records.find((r) => r.form === 'lab_chem')).to.equal(undefined);
  });

  it('offers a condition begun after enrolment as an adverse-event candidate with its placement; save mode never saves it', async () => {
    const bundle = JSON.parse(BUSTER.toString('utf8')) as Bundle;
    const patientRef = present(bundle.entry.find((e) => e.resource.resourceType === 'Patient'), 'the Patient entry').fullUrl;
    bundle.entry.push({
      fullUrl: 'urn:uuid:0f1e2d3c-0000-4000-8000-0000000000c1',
      resource: {
        resourceType: 'Condition', id: '0f1e2d3c-0000-4000-8000-0000000000c1', subject: { reference: patientRef },
        clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' }] },
        code: { coding: [{ system: 'http://snomed.info/sct', code: '25064002', display: 'Headache (finding)' }] },
        onsetDateTime: '2017-01-10T09:00:00+00:00', // day 13 after enrolment on 2016-12-28
      },
    });
    const file = Buffer.from(JSON.stringify(bundle));
    const { url, items } = await proposed(false, file);
    const term = items.findIndex((i) => i.form === 'ae' && i.field === 'events.term');
    expect(at(items, term)).to.include({ visit: 'week4', value: 'Headache (finding)', state: 'new', row: 0 });
    expect(items.some((i) => i.form === 'mh' && i.value === 'Headache (finding)'), 'not medical history').to.equal(false);
    expect(itemRow(await staff.get(url), term)).to.include('began on day 13, after enrolment: not medical history but a possible adverse event, offered at Week 4 for review only, never saved automatically');

    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: ENROLMENT });
    await giveConsent(app.db.knex, world.code, enrolled.body.subject, '2016-12-01');
    const saved = await app.call<FhirImport>('POST', `/api/v1/studies/${world.code}/fhir?subject=${enrolled.body.subject}&mode=save`, { key: world.key, raw: file, contentType: 'application/fhir+json' });
    expect(saved.status).to.equal(201);
    expect(saved.body.status).to.equal('proposed');
    expect(saved.body.items.filter((i) => i.form === 'ae').map((i) => i.state)).to.deep.equal(['new', 'new']);
    expect(saved.body.items.filter((i) => i.form === 'mh').every((i) => i.state === 'saved')).to.equal(true);
    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${enrolled.body.subject}`, { key: world.key });
    expect(read.body.records.find((r) => r.form === 'ae')).to.equal(undefined);
  });

  it('refuses a confirmation with nothing chosen, keeping the import proposed', async () => {
    const { subject, url, items } = await proposed(false);
    expect(items.filter((i) => i.state === 'conflict')).to.deep.equal([]);
    await staff.get(url);
    const none = await staff.post(url, { decision: 'confirm_chosen' });
    expect(none.status).to.equal(422);
    expect(none.html).to.include('No value was ticked and there is no conflict to decide');
    const patientId = await patientIdOf(subject);
    expect((await app.db.knex('fhir_imports').where({ patient_id: patientId }).first<StoredImport | undefined>())?.status).to.equal('proposed');
    expect(await app.db.knex('records').where({ patient_id: patientId })).to.deep.equal([]);
  });

  it('refuses to replace a saved value that changed after the import was made, and shows the change', async () => {
    const { subject, url, items } = await proposed();
    // Someone changes the saved systolic pressure after the import was made.
    const changed = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '150', dbp: '80', hr: '70' }, update: true }] },
    });
    expect(changed.body.counts.ok).to.equal(1);
    const page = await staff.get(url);
    const sbp = positionOf(items, 'screening', 'vs', 'sbp');
    expect(itemRow(page, sbp)).to.include('140 changed since the import was made; now: 150');
    const refused = await staff.post(url, { decision: 'confirm_chosen', [`conflict_${sbp}`]: 'replace' });
    expect(refused.status).to.equal(409);
    expect(refused.html).to.include('changed after the import was made').and.include(`name="conflict_${sbp}" value="replace" checked`);
    const patientId = await patientIdOf(subject);
    expect((await app.db.knex('fhir_imports').where({ patient_id: patientId }).first<StoredImport | undefined>())?.status).to.equal('proposed');
    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    expect(only(read.body.records).values.sbp).to.equal('150');
  });

  it('rejects an import with a reason: nothing is saved and the rejection is audited', async () => {
    const { subject, url } = await proposed();
    await staff.get(url);
    const res = await staff.post(url, { decision: 'reject', reason: 'Wrong hospital <b>record</b>' });
    expect(res.status).to.equal(303);
    const patientId = await patientIdOf(subject);
    expect((await app.db.knex('fhir_imports').where({ patient_id: patientId }).first<StoredImport | undefined>())?.status).to.equal('rejected');
    const audit = await app.db.knex('audit_events').where({ patient_id: patientId, action: 'fhir.import_rejected' }).first<DecisionRow | undefined>();
    expect(audit).to.include({ author: 'Nina Nurse', reason: 'FHIR import 1 rejected on the patient\'s card: Wrong hospital <b>record</b>' });
    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    expect(read.body.records.map((r) => r.form)).to.deep.equal(['vs']);
    const page = await staff.get(url);
    expect(page.html).to.include('This import is rejected').and.not.include('id="reject"');
    const card = await staff.get(`/p/${world.code}/s/${subject}`);
    expect(card.html).to.include('Wrong hospital &lt;b&gt;record&lt;/b&gt;').and.not.include('<b>record</b>');
  });

  it('keeps the page from staff of other sites and answers 404 for an import that does not exist', async () => {
    const { subject, url } = await proposed();
    const other = new PortalClient(app.baseUrl);
    await other.signIn('other@sdx.test', STAFF_PASSWORD);
    expect((await other.get(url)).status).to.equal(403);
    await other.get(`/p/${world.code}`);
    expect((await other.post(url, { decision: 'confirm_all' })).status).to.equal(403);
    expect((await app.db.knex('fhir_imports').whereIn('patient_id', app.db.knex('patients').select('id').where({ subject })).first<StoredImport | undefined>())?.status).to.equal('proposed');
    expect((await staff.get(`/p/${world.code}/s/${subject}/fhir/9`)).status).to.equal(404);
    expect((await staff.get(`/p/${world.code}/s/${subject}/fhir/abc`)).status).to.equal(404);
  });

  it('refuses to fill a table that was marked not done after the import was made, keeping the mark', async () => {
    const { subject, url, items } = await proposed(false);
    const mh = items.flatMap((item, position) => (item.form === 'mh' && item.state === 'new' ? [position] : []));
    expect(mh.length).to.be.greaterThan(0);
    // The investigator records meanwhile that the patient has no relevant medical history.
    const marked = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'screening', form: 'mh', not_done: { conditions: 'NA' } }] },
    });
    expect(marked.body.counts.ok).to.equal(1);
    const page = await staff.get(url);
    for (const position of mh) expect(itemRow(page, position)).to.include('changed since the import was made; now: [NA]');
    const refused = await staff.post(url, { decision: 'confirm_all' });
    expect(refused.status).to.equal(409);
    expect(refused.html).to.include('changed after the import was made');
    const patientId = await patientIdOf(subject);
    expect((await app.db.knex('fhir_imports').where({ patient_id: patientId }).first<StoredImport | undefined>())?.status).to.equal('proposed');
    const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    const saved = present(read.body.records.find((r) => r.form === 'mh'), 'the medical history');
    expect(saved.not_done).to.deep.equal({ conditions: 'NA' });
    expect(saved.tables).to.deep.equal({});
  });

  describe('a table marked not done before the file came', () => {
    /** A patient whose medical history the site marked `NA` (no relevant history), then Buster's file proposed. */
    async function markedThenProposed(): Promise<{ subject: string; url: string; items: Item[]; mh: number[] }> {
      const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: ENROLMENT });
      const subject = enrolled.body.subject;
      await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
      const marked = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: [{ subject, visit: 'screening', form: 'mh', not_done: { conditions: 'NA' } }] },
      });
      expect(marked.body.counts.ok).to.equal(1);
      const res = await app.call<FhirImport>('POST', `/api/v1/studies/${world.code}/fhir?subject=${subject}`, { key: world.key, raw: BUSTER, contentType: 'application/fhir+json' });
      expect(res.status).to.equal(201);
      const mh = res.body.items.flatMap((item, position) => (item.form === 'mh' && item.state !== 'skipped' ? [position] : []));
      expect(mh.map((p) => at(res.body.items, p).state)).to.deep.equal(Array(8).fill('conflict'));
      return { subject, url: new URL(res.body.review_url).pathname, items: res.body.items, mh };
    }

    const medicalHistory = async (subject: string) => {
      const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}&form=mh`, { key: world.key });
      return only(read.body.records);
    };

    it('shows the file\'s rows as conflicts with the mark, one keep-or-replace choice for the table; "confirm all" keeps the mark', async () => {
      const { subject, url, items, mh } = await markedThenProposed();
      const page = await staff.get(url);
      const [lead = -1, ...others] = mh;
      expect(itemRow(page, lead)).to.equal(`Relevant medical history — Code (SNOMED CT or ICD-10) conditions.code [row 1] 40055000 ${at(items, lead).resource} http://snomed.info/sct | 40055000 — Chronic sinusitis (disorder) ${at(items, lead).effective} began by enrolment (day -8153): history, recorded at Screening, the first visit with this form [NA] conflict keep the saved value replace it`);
      expect(page.html).to.include(`name="conflict_${lead}" value="replace"`);
      for (const position of others) {
        expect(itemRow(page, position)).to.match(/ \[NA\] conflict taken with the table$/);
        expect(page.html).to.not.include(`name="conflict_${position}"`);
      }
      const confirmed = await staff.post(url, { decision: 'confirm_all' });
      expect(confirmed.status).to.equal(303);
      const saved = await medicalHistory(subject);
      expect(saved.not_done).to.deep.equal({ conditions: 'NA' });
      expect(saved.tables).to.deep.equal({});
      const audit = await app.db.knex('audit_events').where({ patient_id: await patientIdOf(subject), action: 'fhir.import_confirmed' }).first<DecisionRow | undefined>();
      expect(audit?.details.kept).to.include.members(mh);
      expect(audit?.details.saved).to.not.include.members([lead]);
    });

    it('replaces the mark with the file\'s rows on the one choice, through the records path, audited with the reason', async () => {
      const { subject, url, mh } = await markedThenProposed();
      await staff.get(url);
      const [lead = -1] = mh;
      const res = await staff.post(url, { decision: 'confirm_chosen', [`conflict_${lead}`]: 'replace', change_reason: 'History found in the hospital record' });
      expect(res.status).to.equal(303);
      const saved = await medicalHistory(subject);
      expect(saved.not_done).to.deep.equal({});
      expect(saved.tables.conditions).to.deep.equal([
        { term: 'Chronic sinusitis (disorder)', code: '40055000', onset: '1994-09-02', ongoing: 'yes' },
        { term: 'Viral sinusitis (disorder)', code: '444814009', onset: '2011-10-04', ongoing: 'no' },
      ]);
      const patientId = await patientIdOf(subject);
      const trail = await app.db.knex('audit_events').where({ patient_id: patientId, field_code: 'conditions' })
        .select<{ action: string; author: string; old_value: string; new_value: string; reason: string; details: Record<string, string> }[]>('action', 'author', 'old_value', 'new_value', 'reason', 'details').orderBy('id');
      const change = at(trail, trail.length - 1, 'the change of the table');
      expect(change).to.include({ action: 'record.value_changed', author: 'Nina Nurse', old_value: '[NA]' });
      expect(change.details).to.include({ old_value_kind: 'not_done' });
      expect(JSON.parse(change.new_value)).to.deep.equal(saved.tables.conditions);
      expect(change.reason).to.include('History found in the hospital record');
      const decision = await app.db.knex('audit_events').where({ patient_id: patientId, action: 'fhir.import_confirmed' }).first<DecisionRow | undefined>();
      expect(decision?.details.saved).to.include.members(mh);
      const stored = present(await app.db.knex('fhir_imports').where({ patient_id: patientId }).first<StoredImport | undefined>(), 'the import');
      expect(stored.status).to.equal('confirmed');
      expect(mh.map((p) => at(stored.items, p).state)).to.deep.equal(Array(8).fill('saved'));
    });

    it('refuses to replace a mark that changed after the import was made, keeping the new mark', async () => {
      const { subject, url, mh } = await markedThenProposed();
      const changed = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: [{ subject, visit: 'screening', form: 'mh', not_done: { conditions: 'UNK' }, update: true }] },
      });
      expect(changed.body.counts.ok).to.equal(1);
      const page = await staff.get(url);
      const [lead = -1] = mh;
      expect(itemRow(page, lead)).to.include('[NA] changed since the import was made; now: [UNK]');
      const refused = await staff.post(url, { decision: 'confirm_chosen', [`conflict_${lead}`]: 'replace', change_reason: 'History found' });
      expect(refused.status).to.equal(409);
      expect(refused.html).to.include('changed after the import was made');
      const saved = await medicalHistory(subject);
      expect(saved.not_done).to.deep.equal({ conditions: 'UNK' });
      expect(saved.tables).to.deep.equal({});
    });
  });

  it('never lets a confirmation overwrite a value a records call saves at the same moment into a form not saved before', async () => {
    // The race is narrow (the two reads of the confirmation are a millisecond or two apart): enough rounds to meet it.
    for (let round = 0; round < 24; round++) {
      const { subject, url, items } = await proposed(false);
      const hgb = positionOf(items, 'screening', 'lab_hem', 'hgb');
      expect(at(items, hgb).state).to.equal('new');
      await staff.get(url);
      const [confirmed, written] = await Promise.all([
        staff.post(url, { decision: 'confirm_chosen', [`take_${hgb}`]: 'on' }),
        // The call leaves a little later round after round, so that it meets the confirmation at each of its steps.
        new Promise((resolve) => setTimeout(resolve, 3 * (round % 8))).then(() => app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
          key: world.key, body: { records: [{ subject, visit: 'screening', form: 'lab_hem', values: { hgb: '12.0' }, status: 'draft', update: true }] },
        })),
      ]);
      expect(at(written.body.results, 0).code, `round ${round}`).to.equal('saved_as_draft');
      // Either the confirmation came first and the call then changed its value, or it saw the call's value and was refused.
      expect(confirmed.status, `round ${round}`).to.be.oneOf([303, 409]);
      const read = await app.call<RecordsPage>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}&form=lab_hem`, { key: world.key });
      expect(only(read.body.records).values.hgb, `round ${round}`).to.equal('12.0');
    }
  });
});
