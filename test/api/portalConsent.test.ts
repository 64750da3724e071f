import { expect } from 'chai';
import { up as backfillWithdrawnStatus } from '../../src/db/migrations/20261126120000_backfill_withdrawn_patient_status.js';
import { latestToday } from '../../src/domain/patients/enrolPatient.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { at, present } from '../helpers/only.js';
import { sdx } from '../helpers/sdxCli.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** The card's facts as text, where the consent state shows. */
function facts(page: PortalReply): string {
  return present(/<dl class="facts">([\s\S]*?)<\/dl>/.exec(page.html)?.[1], 'the facts').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}

/** The day after `latestToday()`: not yet begun anywhere on earth. */
function tomorrowEverywhere(): string {
  const day = new Date(`${latestToday()}T00:00:00Z`);
  day.setUTCDate(day.getUTCDate() + 1);
  return day.toISOString().slice(0, 10);
}

/** Consent recorded on the patient card (issue 19, point 2), through the same use case as `sdx patient consent`. */
describe('staff portal: consent on the patient card', () => {
  const { app, world } = useStudyWorld();
  let staff: PortalClient;
  let subject: string;
  const card = () => `/p/${world.code}/s/${subject}`;

  async function enrol(site: string): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site, sex: 'female', birth_year: 1961, enrolled_on: '2026-03-01' } });
    expect(res.status).to.equal(201);
    return res.body.subject;
  }
  const consents = async (s: string) => app.db.knex('consents as c').join('patients as p', 'p.id', 'c.patient_id').where('p.subject', s)
    .orderBy('c.id').select('c.given_on', 'c.withdrawn_on', 'c.data_use_withdrawn');
  /** Baseline vital signs on the enrolment day, inside the visit's window (days 0..+3). */
  const sendVitals = (s: string) => app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
    key: world.key, body: { records: [{ subject: s, visit: 'baseline', form: 'vs', values: { vsdate: '2026-03-01', sbp: '128', dbp: '80', hr: '64' } }] },
  });

  before(async () => {
    await addStaff(app.db.knex, 'nurse@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'] }, 'Nina Nurse');
    await addStaff(app.db.knex, 'other@sdx.test', { study: world.code, role: 'site_staff', sites: ['02'] }, 'Oleg Other');
    staff = new PortalClient(app.baseUrl);
    expect((await staff.signIn('nurse@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });
  beforeEach(async () => {
    subject = await enrol('01');
  });

  it('records consent given, with the person as the audit author, after which the patient\'s records load', async () => {
    expect(at((await sendVitals(subject)).body.results, 0).code).to.equal('consent_missing');
    expect(facts(await staff.get(card()))).to.include('Consent none recorded');
    const res = await staff.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' });
    expect(res.status).to.equal(303);
    expect(res.location).to.equal(`${card()}#consent`);
    expect(facts(await staff.get(card()))).to.include('Consent given on 2026-02-27');
    expect(await consents(subject)).to.deep.equal([{ given_on: '2026-02-27', withdrawn_on: null, data_use_withdrawn: false }]);
    const audit = await app.db.knex('audit_events as a').join('patients as p', 'p.id', 'a.patient_id').where('p.subject', subject).andWhere('a.action', 'consent.given')
      .select('a.author', 'a.actor_type', 'a.reason', 'a.details');
    expect(audit).to.deep.equal([{ author: 'Nina Nurse', actor_type: 'user', reason: 'Entered in the portal', details: { given_on: '2026-02-27' } }]);
    const sent = await sendVitals(subject);
    expect(sent.status).to.equal(200);
    expect(at(sent.body.results, 0).status).to.equal('ok');
  });

  it('makes a patient who withdrew consent withdrawn in the patients read and its next incremental load, and enrolled again on new consent', async () => {
    const read = (query: string) => app.call<AnswerOf<'listPatients', 200>>('GET', `/api/v1/studies/${world.code}/patients?${query}`, { key: world.key });
    const statusOf = async () => (await read(`subject=${subject}`)).body.patients.map((p) => p.status);
    await staff.get(card());
    expect((await staff.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' })).status).to.equal(303);
    expect(await statusOf()).to.deep.equal(['enrolled']);
    const before = (await read(`subject=${subject}`)).body.watermark;
    expect((await staff.post(`${card()}/consent`, { change: 'withdrawn', date: '2026-03-10' })).status).to.equal(303);
    expect(await statusOf()).to.deep.equal(['withdrawn']);
    // An integrator loading incrementally learns it, and a filter on the status finds the patient.
    expect((await read(`updated_since=${encodeURIComponent(before)}`)).body.patients.filter((p) => p.subject === subject).map((p) => p.status)).to.deep.equal(['withdrawn']);
    expect((await read('status=withdrawn')).body.patients.map((p) => p.subject)).to.include(subject);
    expect((await staff.post(`${card()}/consent`, { change: 'given', date: '2026-03-15' })).status).to.equal(303);
    expect(await statusOf()).to.deep.equal(['enrolled']);
  });

  it('gives patients who withdrew before the status was kept the status withdrawn on upgrade, and no one else', async () => {
    await staff.get(card());
    expect((await staff.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' })).status).to.equal(303);
    expect((await staff.post(`${card()}/consent`, { change: 'withdrawn', date: '2026-03-10' })).status).to.equal(303);
    const given = await enrol('01');
    expect((await staff.post(`/p/${world.code}/s/${given}/consent`, { change: 'given', date: '2026-02-27' })).status).to.equal(303);
    const statuses = () => app.db.knex('patients').whereIn('subject', [subject, given]).orderBy('subject').pluck<string[]>('status');
    // As the database stood before the upgrade: consent withdrawn, status left enrolled.
    await app.db.knex('patients').whereIn('subject', [subject, given]).update({ status: 'enrolled' });
    await backfillWithdrawnStatus(app.db.knex);
    expect(await statuses()).to.deep.equal(['withdrawn', 'enrolled']);
  });

  it('records a withdrawal, then its extension to the use of the data, which hides the patient from reads', async () => {
    await staff.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' });
    expect((await staff.post(`${card()}/consent`, { change: 'withdrawn', date: '2026-03-10' })).status).to.equal(303);
    expect(facts(await staff.get(card()))).to.include('Consent withdrawn on 2026-03-10');
    expect((await staff.post(`${card()}/consent`, { change: 'withdrawn_data_use', date: '2026-03-12' })).status).to.equal(303);
    expect(facts(await staff.get(card()))).to.include('Consent withdrawn on 2026-03-10 — the data may no longer be used');
    expect((await consents(subject)).at(-1)).to.deep.equal({ given_on: '2026-02-27', withdrawn_on: '2026-03-10', data_use_withdrawn: true });
    const read = await app.call<AnswerOf<'listPatients', 200>>('GET', `/api/v1/studies/${world.code}/patients?subject=${subject}`, { key: world.key });
    expect(read.body.patients.map((p: { subject: string }) => p.subject)).to.not.include(subject);
  });

  it('refuses a post without the session\'s CSRF token (403) and records nothing', async () => {
    await staff.get(card());
    const res = await staff.post(`${card()}/consent`, { _csrf: null, change: 'given', date: '2026-02-27' });
    expect(res.status).to.equal(403);
    expect(res.html).to.include('Form expired');
    expect(await consents(subject)).to.deep.equal([]);
  });

  it('refuses a person of another site (403) exactly like a missing patient, and records nothing', async () => {
    const other = new PortalClient(app.baseUrl);
    await other.signIn('other@sdx.test', STAFF_PASSWORD);
    await other.get(`/p/${world.code}`);
    const res = await other.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' });
    expect(res.status).to.equal(403);
    expect(res.html).to.include('No access');
    expect((await other.post(`/p/${world.code}/s/09-999/consent`, { change: 'given', date: '2026-02-27' })).status).to.equal(403);
    expect(await consents(subject)).to.deep.equal([]);
  });

  const refusals = [
    { name: 'a date in the future everywhere on earth', fields: () => ({ change: 'given', date: tomorrowEverywhere() }), status: 422, message: (d: string) => `The consent date ${d} is in the future.` },
    { name: 'a date before the birth year', fields: () => ({ change: 'given', date: '1960-12-31' }), status: 422, message: () => 'The consent date 1960-12-31 is before the birth year 1961 of patient "{s}".' },
    { name: 'a day that does not exist', fields: () => ({ change: 'given', date: '2026-02-30' }), status: 422, message: () => '"2026-02-30" is not a calendar date (YYYY-MM-DD).' },
    { name: 'a withdrawal without consent', fields: () => ({ change: 'withdrawn', date: '2026-03-01' }), status: 409, message: () => 'Patient "{s}" has no consent to withdraw.' },
  ];
  for (const r of refusals) {
    it(`refuses ${r.name} on the card, the form kept as sent, and records nothing`, async () => {
      await staff.get(card());
      const fields = r.fields();
      const res = await staff.post(`${card()}/consent`, fields);
      expect(res.status).to.equal(r.status);
      const error = /<p class="error" role="alert" id="consent-error">([^<]*)<\/p>/.exec(res.html)?.[1];
      expect(error).to.equal(r.message(fields.date).replace('{s}', subject).replace(/"/g, '&quot;'));
      expect(res.html).to.include(`value="${fields.date}"`).and.match(new RegExp(`value="${fields.change}" required checked`));
      expect(await consents(subject)).to.deep.equal([]);
    });
  }

  it('refuses a withdrawal dated before the consent it withdraws', async () => {
    await staff.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' });
    await staff.get(card());
    const res = await staff.post(`${card()}/consent`, { change: 'withdrawn', date: '2026-02-26' });
    expect(res.status).to.equal(422);
    expect(res.html).to.include('A consent cannot be withdrawn before the day it was given');
  });

  it('refuses a renewed consent dated before the withdrawal it follows, which would let data in on the consent withdrawn', async () => {
    await staff.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' });
    await staff.post(`${card()}/consent`, { change: 'withdrawn', date: '2026-03-10' });
    await staff.get(card());
    const res = await staff.post(`${card()}/consent`, { change: 'given', date: '2026-02-27' });
    expect(res.status).to.equal(422);
    expect(res.html).to.include('A consent given again cannot be dated before the withdrawal of 2026-03-10');
    expect(facts(await staff.get(card()))).to.include('Consent withdrawn on 2026-03-10');
    expect(at((await sendVitals(subject)).body.results, 0).code).to.equal('consent_missing');
    // Dated on the day of the withdrawal or later, it is a consent given anew.
    expect((await staff.post(`${card()}/consent`, { change: 'given', date: '2026-03-10' })).status).to.equal(303);
    expect(at((await sendVitals(subject)).body.results, 0).status).to.equal('ok');
  });

  it('holds the command line to the same date rules, since both call recordConsent', async () => {
    expect(await sdx('patient', 'consent', world.code, subject, '--given', '1960-06-01')).to.deep.equal({
      error: { code: 'consent_date_before_birth', message: `The consent date 1960-06-01 is before the birth year 1961 of patient "${subject}".`, errors: [] },
    });
    expect((await sdx<{ error: { code: string } }>('patient', 'consent', world.code, subject, '--given', tomorrowEverywhere())).error.code).to.equal('consent_date_in_future');
    expect(await consents(subject)).to.deep.equal([]);
  });

  it('answers 400 to a change the form does not offer', async () => {
    await staff.get(card());
    expect((await staff.post(`${card()}/consent`, { change: 'revoked', date: '2026-02-27' })).status).to.equal(400);
    expect(await consents(subject)).to.deep.equal([]);
  });

  it('speaks Russian: the form and its refusals', async () => {
    const page = await staff.get(`${card()}?lang=ru`);
    expect(page.html).to.include('Регистрация согласия').and.include('Согласие отозвано вместе с правом использовать уже собранные данные');
    const res = await staff.post(`${card()}/consent`, { change: 'given', date: '1950-01-01' });
    expect(res.status).to.equal(422);
    expect(res.html).to.include(`Дата согласия 1950-01-01 раньше года рождения 1961 пациента &quot;${subject}&quot;.`);
    await staff.get('/portal?lang=en');
  });
});
