import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { demoDesign, giveConsent, operator } from '../helpers/factories.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * A patient who withdrew consent, in a study that does not require consent before data entry (so the consent
 * gate lets the data of a patient without consent through): no data is entered after the withdrawal, until
 * consent is given again. One who withdrew consent to the use of their data too is left out by the read calls,
 * and so must be by the FHIR call, whose answer shows the values saved at each place (`saved_value`).
 */

/** Buster Hoeger (Synthea): male, born 1988; enrolled on 2016-12-28 his 2016-12-14 measurements fall in the screening window. */
const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');

describe('A patient who withdrew consent, or consent to the use of their data, in a study without required consent', () => {
  const { app, world } = useStudyWorld({ design: demoDesign('OPEN', (d) => { d.consent_required = false; }) });
  const base = () => `/api/v1/studies/${world.code}`;

  /** A patient at site 01 with vital signs saved at screening, who then withdrew consent to the use of the data. */
  async function withdrawn(): Promise<string> {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base()}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' },
    });
    const subject = enrolled.body.subject;
    const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '85', hr: '70' } }] },
    });
    expect(saved.body.counts.ok + saved.body.counts.warn, JSON.stringify(saved.body)).to.equal(1);
    await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
    await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: world.code, subject, change: { withdrawn: '2017-01-10', dataUse: true } }));
    const read = await app.call<AnswerOf<'listPatients', 200>>('GET', `${base()}/patients?subject=${subject}`, { key: world.key });
    expect(read.body.patients, 'the read calls leave the patient out').to.deep.equal([]);
    return subject;
  }

  it('refuses a FHIR file about the patient as for a patient that does not exist (422 unknown_subject), showing no saved value and keeping nothing', async () => {
    const subject = await withdrawn();
    for (const mode of ['review', 'save']) {
      const res = await app.call<Problem>('POST', `${base()}/fhir?subject=${subject}&mode=${mode}`, { key: world.key, raw: BUSTER, contentType: 'application/fhir+json' });
      expect(res.status, JSON.stringify(res.body).slice(0, 400)).to.equal(422);
      expect(res.body.code).to.equal('unknown_subject');
    }
    const [kept] = await app.db.knex('fhir_imports').count<{ n: string | number }[]>({ n: '*' });
    expect(Number(kept?.n)).to.equal(0);
  });

  it('refuses records about the patient as about one that does not exist (error unknown_subject), so no answer tells what is saved', async () => {
    const subject = await withdrawn();
    const records = [
      // The saved value sent again: `unchanged` would confirm it, `saved` deny it.
      { subject, visit: 'screening', form: 'vs', update: true, values: { sbp: '140' } },
      // `skip` would tell that the form is filled.
      { subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '150', dbp: '90', hr: '72' } },
      { subject, visit: 'screening', form: 'dm', values: { sex: '1', ethnicity: '2', height: '180', weight: '80' } },
    ];
    const before = await app.db.knex('audit_events').count<{ n: string | number }[]>({ n: '*' });
    const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, { key: world.key, body: { records } });
    expect(res.status).to.equal(200);
    expect(res.body.results.map((r) => [r.status, r.code])).to.deep.equal(records.map(() => ['error', 'unknown_subject']));
    expect(await app.db.knex('audit_events').count<{ n: string | number }[]>({ n: '*' })).to.deep.equal(before);
  });

  it('takes no data after a withdrawal of consent, from the records call or a FHIR save, until consent is given again', async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base()}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' },
    });
    const subject = enrolled.body.subject;
    const vitals = { subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '85', hr: '70' } };
    await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: world.code, subject, change: { given: '2016-12-01' } }));
    await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: world.code, subject, change: { withdrawn: '2017-01-10', dataUse: false } }));
    const refused = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, { key: world.key, body: { records: [vitals] } });
    expect(refused.body.results.map((r) => [r.status, r.code])).to.deep.equal([['error', 'consent_missing']]);
    const file = await app.call<Problem>('POST', `${base()}/fhir?subject=${subject}&mode=save`, { key: world.key, raw: BUSTER, contentType: 'application/fhir+json' });
    expect([file.status, file.body.code]).to.deep.equal([422, 'consent_missing']);
    const saved = await app.db.knex('records as r').join('patients as p', 'p.id', 'r.patient_id').where('p.subject', subject).count<{ n: string | number }[]>({ n: '*' });
    expect(Number(saved[0]?.n)).to.equal(0);
    // Consent given again opens data entry again.
    await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: world.code, subject, change: { given: '2017-02-01' } }));
    const taken = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, { key: world.key, body: { records: [vitals] } });
    expect(taken.body.counts.ok + taken.body.counts.warn, JSON.stringify(taken.body)).to.equal(1);
  });
});
