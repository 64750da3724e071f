import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { countItems } from '../../src/domain/fhir/fhirImportItem.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { grantRole, revokeRole } from '../../src/domain/people/roles.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { addPerson, demoDesign, giveConsent, makeKey, operator } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * A replayed `Idempotency-Key` (spec: "Retries without duplicates") through real HTTP: the retry of a write
 * whose first answer never arrived gets that answer, but never more than the key may see when it asks again.
 * Between the first request and its retry the key's maker may have been blinded or lost a site, and the
 * patient may have withdrawn consent to the use of their data; the replay then holds nothing the read
 * calls would not show.
 */

type Imported = AnswerOf<'importFhirRecord', 201>;
type Stepped = AnswerOf<'answerQuery', 201>;

/** Buster Hoeger (Synthea): male, born 1988; enrolled on 2016-12-28 his 2016-12-14 measurements fall in the screening window. */
const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');

describe('Idempotency-Key replays and what the key may see now', () => {
  // The lab results go to a form of the unblinded team, so a file's items reach forms a blinded key may not see.
  const { app, world } = useStudyWorld({ design: demoDesign('DEMO', (d) => { present(d.forms.find((f) => f.code === 'lab_hem'), 'form lab_hem').team = 'unblinded'; }) });
  const base = () => `/api/v1/studies/${world.code}`;
  let managers = 0;

  /** A key of its own unblinded manager (who may export, on every site), so that a test can change that maker's role alone. */
  async function ownKey(): Promise<{ key: string; maker: string }> {
    managers += 1;
    const maker = `manager-${managers}@sdx.test`;
    await addPerson(app.db.knex, world.code, maker, { role: 'manager', canExport: true, unblinded: true });
    return { key: (await makeKey(app.db.knex, { study: world.code, by: maker, name: `System ${managers}` })).key, maker };
  }

  /** A patient at site 01 with consent, and vital signs saved at screening (two of them differ from Buster's file). */
  async function patient(): Promise<string> {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base()}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' },
    });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
    const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '85', hr: '70' } }] },
    });
    expect(saved.body.counts.ok + saved.body.counts.warn, JSON.stringify(saved.body)).to.equal(1);
    return subject;
  }

  const importFile = (key: string, subject: string, idem: string) => app.call<Imported>('POST', `${base()}/fhir?subject=${subject}`, {
    key, raw: BUSTER, contentType: 'application/fhir+json', headers: { 'idempotency-key': idem },
  });

  it('replays a FHIR import without the items of the unblinded team once the key\'s maker is blinded, counted from what is left', async () => {
    const { key, maker } = await ownKey();
    const subject = await patient();
    const idem = randomUUID();
    const first = await importFile(key, subject, idem);
    expect(first.status, JSON.stringify(first.body).slice(0, 400)).to.equal(201);
    expect(first.body.items.some((i) => i.form === 'lab_hem'), 'the file fills the unblinded team\'s lab form').to.equal(true);

    await inTransaction(app.db.knex, (s) => revokeRole(s, operator, { study: world.code, email: maker, unblinded: true }));
    const replay = await importFile(key, subject, idem);
    expect(replay.status, JSON.stringify(replay.body).slice(0, 400)).to.equal(201);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.body.items.filter((i) => i.form === 'lab_hem')).to.deep.equal([]);
    expect(replay.body.items).to.deep.equal(first.body.items.filter((i) => i.form !== 'lab_hem'));
    expect(replay.body.counts).to.deep.equal(countItems(replay.body.items));
    expect(replay.body).to.deep.include({ import: first.body.import, status: first.body.status });
    // The replay wrote nothing: still the one import.
    expect((await app.db.knex('fhir_imports').join('patients', 'patients.id', 'fhir_imports.patient_id').where('patients.subject', subject)).length).to.equal(1);
  });

  it('refuses the replay of a FHIR import once the patient withdrew consent to the use of their data, as for a patient that does not exist', async () => {
    const { key } = await ownKey();
    const subject = await patient();
    const idem = randomUUID();
    const first = await importFile(key, subject, idem);
    expect(first.status, JSON.stringify(first.body).slice(0, 400)).to.equal(201);
    expect(first.body.items.some((i) => i.state === 'conflict' && i.saved_value !== null), 'the answer shows saved values').to.equal(true);

    await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: world.code, subject, change: { withdrawn: '2017-01-10', dataUse: true } }));
    const replay = await importFile(key, subject, idem);
    expect(replay.status, JSON.stringify(replay.body).slice(0, 400)).to.equal(422);
    expect((replay.body as unknown as Problem).code).to.equal('unknown_subject');
    expect(replay.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('refuses the replay of a FHIR import once the key\'s maker may no longer see the patient\'s site', async () => {
    const { key, maker } = await ownKey();
    const subject = await patient();
    const idem = randomUUID();
    expect((await importFile(key, subject, idem)).status).to.equal(201);

    await inTransaction(app.db.knex, (s) => grantRole(s, operator, { study: world.code, email: maker, role: 'manager', canExport: true, unblinded: true, sites: ['02'] }));
    const replay = await importFile(key, subject, idem);
    expect(replay.status, JSON.stringify(replay.body).slice(0, 400)).to.equal(422);
    expect((replay.body as unknown as Problem).code).to.equal('unknown_subject');
  });

  it('refuses the replay of a step on a query once the key\'s maker may no longer see the query\'s site (404 query_not_found)', async () => {
    const { key, maker } = await ownKey();
    const subject = await patient();
    const opened = await app.call<Stepped>('POST', `${base()}/queries`, {
      key: world.key, body: { subject, visit: 'screening', form: 'vs', field: 'sbp', message: 'Please re-measure.' },
    });
    expect(opened.status, JSON.stringify(opened.body)).to.equal(201);
    const idem = randomUUID();
    const answer = () => app.call<Stepped>('POST', `${base()}/queries/${opened.body.id}/answers`, {
      key, body: { text: 'Re-measured: 140 stands.' }, headers: { 'idempotency-key': idem },
    });
    const first = await answer();
    expect(first.status, JSON.stringify(first.body).slice(0, 400)).to.equal(201);

    await inTransaction(app.db.knex, (s) => grantRole(s, operator, { study: world.code, email: maker, role: 'manager', canExport: true, unblinded: true, sites: ['02'] }));
    const replay = await answer();
    expect(replay.status, JSON.stringify(replay.body).slice(0, 400)).to.equal(404);
    expect((replay.body as unknown as Problem).code).to.equal('query_not_found');
  });

  it('refuses the replay of a step on a query of the unblinded team\'s form once the key\'s maker is blinded (404 query_not_found)', async () => {
    const { key, maker } = await ownKey();
    const subject = await patient();
    const lab = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'screening', form: 'lab_hem', values: { hgb: '14.1', wbc: '6.2', plt: '250', hct: '42' } }] },
    });
    expect(lab.body.counts.error, JSON.stringify(lab.body)).to.equal(0);
    const idem = randomUUID();
    const open = () => app.call<Stepped>('POST', `${base()}/queries`, {
      key, body: { subject, visit: 'screening', form: 'lab_hem', field: 'hgb', message: 'Which analyser?' }, headers: { 'idempotency-key': idem },
    });
    const first = await open();
    expect(first.status, JSON.stringify(first.body).slice(0, 400)).to.equal(201);

    await inTransaction(app.db.knex, (s) => revokeRole(s, operator, { study: world.code, email: maker, unblinded: true }));
    const replay = await open();
    expect(replay.status, JSON.stringify(replay.body).slice(0, 400)).to.equal(404);
    expect((replay.body as unknown as Problem).code).to.equal('query_not_found');
  });
});
