import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { createStudyWorld, demoDesign, giveConsent, type StudyWorld } from '../helpers/factories.js';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

type Row = Record<string, unknown>;
type RecordsResult = AnswerOf<'submitFormRecords', 200>;
interface AuditRow { action: string; field_code: string; old_value: string | null; new_value: string | null; reason: string }

/** Buster Hoeger (Synthea): his 2016-12-14 systolic pressure (136) conflicts with a saved 140 at screening. */
const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');

/**
 * Reasons for change (issue 22, point 4): a record's `reason` goes into the audit row of each value it
 * changes, after the statement of how the data came; a study with `reason_required_on_update` refuses an
 * overwrite without one, through the API and on the FHIR review page alike, and saves nothing of it.
 */
describe('reasons for change', () => {
  const { app, world: strict } = useStudyWorld({ design: demoDesign('WHY', (d) => { d.reason_required_on_update = true; }) });
  let plain: StudyWorld;
  const vitals = { vsdate: '2026-03-02', sbp: '120', dbp: '80', hr: '70' };

  async function patient(w: StudyWorld, enrolment: Row = { site: '01', sex: 'female', birth_year: 1960, enrolled_on: '2026-03-02' }, consent = '2026-03-02'): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${w.code}/patients`, { key: w.key, body: enrolment });
    expect(res.status).to.equal(201);
    await giveConsent(app.db.knex, w.code, res.body.subject, consent);
    return res.body.subject;
  }
  /** Sends records; the answer's body is the results unless the test names a refusal's type (`submit<Problem>`). */
  const submit = <Body = RecordsResult>(w: StudyWorld, records: Row[], query = '') => app.call<Body>('POST', `/api/v1/studies/${w.code}/records${query}`, { key: w.key, body: { records } });
  const patientId = async (w: StudyWorld, subject: string): Promise<number> =>
    present(await app.db.knex('patients').join('studies', 'studies.id', 'patients.study_id').where({ 'studies.code': w.code, subject })
      .first<{ id: number } | undefined>('patients.id'), `patient ${subject}`).id;
  const trailOf = async (w: StudyWorld, subject: string) => app.db.knex('audit_events')
    .where({ patient_id: await patientId(w, subject) })
    .whereIn('action', ['record.value_set', 'record.value_changed']).orderBy('id').select<AuditRow[]>('action', 'field_code', 'old_value', 'new_value', 'reason');
  const savedVs = async (w: StudyWorld, subject: string) =>
    present((await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${w.code}/records?subject=${subject}`, { key: w.key }))
      .body.records.find((r) => r.form === 'vs'), 'the vital signs').values;

  before(async () => {
    plain = await createStudyWorld(app.db.knex, demoDesign('FREE'));
  });

  it('keeps the reason of an update on the audit row of each changed value, after the key\'s statement', async () => {
    const subject = await patient(plain);
    expect(at((await submit(plain, [{ subject, visit: 'baseline', form: 'vs', values: vitals }])).body.results, 0).code).to.equal('saved');
    const res = await submit(plain, [{ subject, visit: 'baseline', form: 'vs', update: true, values: { sbp: '135', hr: '72' }, reason: '  transcription error, see source document  ' }]);
    expect(res.status).to.equal(200);
    expect(res.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
    const key = 'Data sent through the API key';
    const changed = (await trailOf(plain, subject)).filter((r) => r.action === 'record.value_changed');
    expect(changed.map((r) => [r.field_code, r.old_value, r.new_value])).to.deep.equal([['hr', '70', '72'], ['sbp', '120', '135']]);
    for (const row of changed) expect(row.reason).to.match(new RegExp(`^${key} ".+": transcription error, see source document$`));
    // The first entry, sent without a reason, keeps the key's statement alone.
    for (const row of (await trailOf(plain, subject)).filter((r) => r.action === 'record.value_set')) expect(row.reason).to.match(new RegExp(`^${key} "[^"]+"$`));
  });

  it('refuses an overwrite without a reason where the study requires one (en and ru), and saves nothing of that record', async () => {
    const subject = await patient(strict);
    expect(at((await submit(strict, [{ subject, visit: 'baseline', form: 'vs', values: vitals }])).body.results, 0).code).to.equal('saved');
    const res = await submit(strict, [
      { subject, visit: 'baseline', form: 'vs', update: true, values: { sbp: '135', weight: '70' } },
      { subject, visit: 'baseline', form: 'vs', update: true, values: { hr: '75' }, reason: '   ' },
    ]);
    expect(res.status).to.equal(200);
    expect(res.body.results.map((r) => [r.status, r.code])).to.deep.equal([['error', 'reason_required'], ['error', 'reason_required']]);
    expect(at(res.body.results, 0).message).to.equal('The study requires a reason for change to overwrite saved values (sbp); send the record again with reason. Nothing was saved.');
    expect(at(res.body.results, 0).record_id).to.equal(null);
    expect(await savedVs(strict, subject), 'not even the weight that filled an empty place').to.deep.equal(vitals);
    expect((await trailOf(strict, subject)).filter((r) => r.action === 'record.value_changed')).to.deep.equal([]);

    const ru = await submit(strict, [{ subject, visit: 'baseline', form: 'vs', update: true, values: { dbp: '85' } }], '?lang=ru');
    expect(at(ru.body.results, 0).message).to.equal('Исследование требует причину изменения для перезаписи сохранённых значений (dbp); отправьте запись снова с reason. Ничего не сохранено.');
  });

  it('saves the overwrite with a reason in such a study; filling empty places and first entries need none', async () => {
    const subject = await patient(strict);
    expect(at((await submit(strict, [{ subject, visit: 'baseline', form: 'vs', values: vitals }])).body.results, 0).code).to.equal('saved');
    const filled = await submit(strict, [{ subject, visit: 'baseline', form: 'vs', update: true, values: { weight: '70' } }]);
    expect(filled.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
    const changed = await submit(strict, [{ subject, visit: 'baseline', form: 'vs', update: true, values: { sbp: '135' }, reason: 'Re-measured' }]);
    expect(changed.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
    expect(await savedVs(strict, subject)).to.deep.equal({ ...vitals, sbp: '135', weight: '70' });
    const sbp = (await trailOf(strict, subject)).find((r) => r.field_code === 'sbp' && r.action === 'record.value_changed');
    expect(sbp).to.deep.include({ old_value: '120', new_value: '135' });
    expect(sbp?.reason).to.match(/: Re-measured$/);
    const design = await app.call<AnswerOf<'getStudyDesign', 200>>('GET', `/api/v1/studies/${strict.code}`, { key: strict.key });
    expect(design.body.study.reason_required_on_update).to.equal(true);
  });

  it('treats table rows added after the saved ones as no overwrite, and a saved row changed or removed as one', async () => {
    const subject = await patient(strict);
    const cm = (medications: Row[], extra: Row = {}) => submit(strict, [{ subject, visit: 'screening', form: 'cm', update: true, tables: { medications }, ...extra }]);
    const aspirin = { name: 'Aspirin', dose: '100 mg daily', start: '2026-01-05' };
    expect(at((await cm([aspirin])).body.results, 0).code).to.equal('saved');
    // Sent in another key order than jsonb gives back: the saved row is still the same row.
    const added = await cm([{ start: '2026-01-05', dose: '100 mg daily', name: 'Aspirin' }, { name: 'Metformin' }]);
    expect(added.body.results[0]).to.deep.include({ status: 'ok', code: 'saved' });
    const removed = await cm([{ name: 'Metformin' }]);
    expect(removed.body.results[0]).to.deep.include({ status: 'error', code: 'reason_required' });
    expect(at(removed.body.results, 0).message).to.include('(medications)');
    expect(at((await cm([{ name: 'Metformin' }], { reason: 'Aspirin entered for the wrong patient' })).body.results, 0).code).to.equal('saved');
  });

  it('asks a reason for the mark ND that replaces a saved text "[ND]", though both read [ND], beside a place filled', async () => {
    const subject = await patient(strict);
    const allocation = (record: Row) => submit(strict, [{ subject, visit: 'baseline', form: 'ip_alloc', status: 'draft', ...record }]);
    expect(at((await allocation({ values: { kit: '[ND]' } })).body.results, 0).code).to.equal('saved_as_draft');
    const change = { update: true, not_done: { kit: 'ND' }, values: { arm: 'A' } };
    const refused = await allocation(change);
    expect(refused.body.results[0]).to.deep.include({ status: 'error', code: 'reason_required' });
    expect(at(refused.body.results, 0).message).to.include('(kit)');
    expect(await allocation({ ...change, reason: 'The kit was never dispensed' })).to.have.nested.property('body.results[0].code', 'saved_as_draft');
    const kit = (await trailOf(strict, subject)).filter((r) => r.field_code === 'kit').map((r) => [r.action, r.old_value, r.new_value]);
    expect(kit).to.deep.equal([['record.value_set', null, '[ND]'], ['record.value_changed', '[ND]', '[ND]']]);
  });

  it('refuses a reason PostgreSQL could not store, and one over 500 characters', async () => {
    const subject = await patient(plain);
    await submit(plain, [{ subject, visit: 'baseline', form: 'vs', values: vitals }]);
    const nul = await submit(plain, [{ subject, visit: 'baseline', form: 'vs', update: true, values: { sbp: '135' }, reason: 'a\u0000b' }]);
    expect(nul.status).to.equal(200);
    expect(nul.body.results[0]).to.deep.include({ status: 'error', code: 'invalid_value' });
    expect(at(nul.body.results, 0).errors.map((e) => [e.field, e.code])).to.deep.equal([['reason', 'invalid_character']]);
    const long = await submit<Problem>(plain, [{ subject, visit: 'baseline', form: 'vs', update: true, values: { sbp: '135' }, reason: 'x'.repeat(501) }]);
    expect(long.status).to.equal(422);
    expect(long.body.errors?.map((e) => e.pointer)).to.deep.equal(['/records/0/reason']);
    expect(await savedVs(plain, subject)).to.deep.equal(vitals);
  });

  describe('the FHIR review page', () => {
    let staff: PortalClient;
    const BUSTER_ENROLMENT = { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' };

    before(async () => {
      for (const w of [strict, plain]) await addStaff(app.db.knex, `nurse-${w.code.toLowerCase()}@sdx.test`, { study: w.code, role: 'site_staff', sites: ['01'] }, 'Nina Nurse');
    });

    /** Buster with a saved screening vital-signs form (sbp 140) and his file proposed; the position of the sbp conflict. */
    async function proposed(w: StudyWorld): Promise<{ subject: string; url: string; sbp: number }> {
      staff = new PortalClient(app.baseUrl);
      expect((await staff.signIn(`nurse-${w.code.toLowerCase()}@sdx.test`, STAFF_PASSWORD)).status).to.equal(303);
      const subject = await patient(w, BUSTER_ENROLMENT, '2016-12-01');
      expect((await submit(w, [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '80', hr: '70' } }])).body.counts.ok).to.equal(1);
      const res = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `/api/v1/studies/${w.code}/fhir?subject=${subject}&mode=review`, { key: w.key, raw: BUSTER, contentType: 'application/fhir+json' });
      expect(res.status).to.equal(201);
      const sbp = res.body.items.findIndex((i) => i.visit === 'screening' && i.form === 'vs' && i.field === 'sbp' && i.state === 'conflict');
      expect(sbp).to.be.at.least(0);
      return { subject, url: new URL(res.body.review_url).pathname, sbp };
    }

    it('replaces a saved value with the reason given, which its audit row carries', async () => {
      const { subject, url, sbp } = await proposed(plain);
      const page = await staff.get(url);
      expect(page.html).to.include('name="change_reason"').and.include('Reason for change, for the values you replace (optional');
      const res = await staff.post(url, { decision: 'confirm_chosen', [`conflict_${sbp}`]: 'replace', change_reason: 'Hospital record is the source document' });
      expect(res.status).to.equal(303);
      const row = (await trailOf(plain, subject)).find((r) => r.field_code === 'sbp' && r.action === 'record.value_changed');
      expect(row).to.deep.include({ old_value: '140', new_value: '136', reason: 'Taken from FHIR import 1, confirmed in the portal: Hospital record is the source document' });
    });

    it('refuses to replace without a reason where the study requires one, keeps the import waiting and saves nothing', async () => {
      const { subject, url, sbp } = await proposed(strict);
      const page = await staff.get(url);
      expect(page.html).to.include('(required by this study');
      const refused = await staff.post(url, { decision: 'confirm_chosen', [`conflict_${sbp}`]: 'replace', change_reason: '  ' });
      expect(refused.status).to.equal(422);
      expect(refused.html).to.include('This study requires a reason for change to replace saved values (sbp)')
        .and.include(`name="conflict_${sbp}" value="replace" checked`);
      const ru = await staff.post(`${url}?lang=ru`, { decision: 'confirm_chosen', [`conflict_${sbp}`]: 'replace' });
      expect(ru.status).to.equal(422);
      expect(ru.html).to.include('В этом исследовании для замены сохранённых значений (sbp) нужна причина изменения').and.include('обязательна в этом исследовании');
      expect((await savedVs(strict, subject)).sbp).to.equal('140');
      expect((await trailOf(strict, subject)).filter((r) => r.action === 'record.value_changed')).to.deep.equal([]);
      expect((await app.db.knex('fhir_imports').where({ patient_id: await patientId(strict, subject) }).first<{ status: string } | undefined>())?.status).to.equal('proposed');

      const crafted = await staff.post(`${url}?lang=en`, { decision: 'confirm_chosen', [`conflict_${sbp}`]: 'replace', change_reason: 'x'.repeat(501) });
      expect(crafted.status, 'a reason past the field\'s maxlength, sent by hand').to.equal(422);
      expect(crafted.html).to.include('At most 500 characters.');
      expect((await savedVs(strict, subject)).sbp).to.equal('140');

      const res = await staff.post(`${url}?lang=en`, { decision: 'confirm_chosen', [`conflict_${sbp}`]: 'replace', change_reason: 'Hospital record is the source document' });
      expect(res.status).to.equal(303);
      expect((await savedVs(strict, subject)).sbp).to.equal('136');
    });

    it('asks a reason to replace a table\'s not-done mark with the file\'s rows where the study requires one, as for any saved value', async () => {
      staff = new PortalClient(app.baseUrl);
      expect((await staff.signIn(`nurse-${strict.code.toLowerCase()}@sdx.test`, STAFF_PASSWORD)).status).to.equal(303);
      const subject = await patient(strict, BUSTER_ENROLMENT, '2016-12-01');
      expect((await submit(strict, [{ subject, visit: 'screening', form: 'mh', not_done: { conditions: 'NA' } }])).body.counts.ok).to.equal(1);
      const imported = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `/api/v1/studies/${strict.code}/fhir?subject=${subject}&mode=review`, { key: strict.key, raw: BUSTER, contentType: 'application/fhir+json' });
      const url = new URL(imported.body.review_url).pathname;
      const mark = imported.body.items.findIndex((i) => i.form === 'mh' && i.state === 'conflict');
      expect(at(imported.body.items, mark).saved_value).to.equal('[NA]');
      await staff.get(url);
      const refused = await staff.post(url, { decision: 'confirm_chosen', [`conflict_${mark}`]: 'replace' });
      expect(refused.status).to.equal(422);
      expect(refused.html).to.include('This study requires a reason for change to replace saved values (conditions)');
      const medicalHistory = async () => present((await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${strict.code}/records?subject=${subject}&form=mh`, { key: strict.key }))
        .body.records[0], 'the medical history');
      expect((await medicalHistory()).not_done).to.deep.equal({ conditions: 'NA' });
      const res = await staff.post(url, { decision: 'confirm_chosen', [`conflict_${mark}`]: 'replace', change_reason: 'Hospital record lists his sinusitis' });
      expect(res.status).to.equal(303);
      expect((await medicalHistory()).not_done).to.deep.equal({});
      const row = (await trailOf(strict, subject)).find((r) => r.field_code === 'conditions' && r.action === 'record.value_changed');
      expect(row).to.deep.include({ old_value: '[NA]', reason: 'Taken from FHIR import 1, confirmed in the portal: Hospital record lists his sinusitis' });
    });
  });
});
